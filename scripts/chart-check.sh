#!/usr/bin/env bash
# `npm run check:chart`: helm lint --strict and helm template of charts/proxy-injector with the default values, the HA
# values, and every file in its ci/ folder (cert-manager, an existing Secret, configuration given inline). Also checks
# that a mistyped value and a release name Linkerd's objects use are refused. helm comes from scripts/helm-binary.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM=$(bash scripts/helm-binary.sh)
CHART=charts/proxy-injector
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

check() { # <label> [helm args...]
  local label=$1; shift
  "$HELM" lint --strict "$CHART" "$@" >"$out/lint" 2>&1 || { cat "$out/lint"; echo "chart: lint FAILED for $label" >&2; exit 1; }
  "$HELM" template proxy-injector "$CHART" --namespace proxy-injector "$@" >"$out/rendered" 2>"$out/err" \
    || { cat "$out/err"; echo "chart: template FAILED for $label" >&2; exit 1; }
  printf 'chart: %-28s lint ok, template ok (%s objects)\n' "$label" "$(grep -c '^kind:' "$out/rendered")"
}

refused() { # <label> <expected message> [helm args...]
  local label=$1 expected=$2; shift 2
  if "$HELM" template "$@" >"$out/rendered" 2>"$out/err"; then
    echo "chart: $label was accepted" >&2; exit 1
  fi
  grep -q -- "$expected" "$out/err" || { cat "$out/err"; echo "chart: $label refused for another reason" >&2; exit 1; }
  printf 'chart: %-28s refused as expected\n' "$label"
}

check default
check values-ha.yaml -f "$CHART/values-ha.yaml"
for f in "$CHART"/ci/*.yaml; do check "ci/$(basename "$f")" -f "$f"; done
refused 'a mistyped value' "value must be one of 'Ignore', 'Fail'" proxy-injector "$CHART" --set webhook.failurePolicy=fail
refused 'an unknown value' 'additional properties' proxy-injector "$CHART" --set webhook.failurPolicy=Fail
refused "a Linkerd object's name" "which Linkerd's own objects use" linkerd-proxy-injector "$CHART" --namespace linkerd
refused 'in-flight bytes below a body' 'limits.maxInFlightBytes must be at least limits.maxBodyBytes' proxy-injector "$CHART" --set limits.maxInFlightBytes=65536
