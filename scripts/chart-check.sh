#!/usr/bin/env bash
# `npm run check:chart`: helm lint --strict and helm template of charts/proxy-injector with the default values, the HA
# values, and every file in its ci/ folder (cert-manager, an existing Secret, configuration given inline, heal,
# PodMonitors), and holds each rendering's readiness probe to one slow answer (scripts/readiness-probe.mjs). Also checks
# that a mistyped value and a release name Linkerd's objects use are refused. helm comes from scripts/helm-binary.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM=$(bash scripts/helm-binary.sh)
CHART=charts/proxy-injector
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# No image is published: every render names one, as an install must.
IMAGE=(--set image.repository=registry.example.com/proxy-injector)

check() { # <label> [helm args...]
  local label=$1; shift
  set -- "${IMAGE[@]}" "$@"
  "$HELM" lint --strict "$CHART" "$@" >"$out/lint" 2>&1 || { cat "$out/lint"; echo "chart: lint FAILED for $label" >&2; exit 1; }
  "$HELM" template proxy-injector "$CHART" --namespace proxy-injector "$@" >"$out/rendered" 2>"$out/err" \
    || { cat "$out/err"; echo "chart: template FAILED for $label" >&2; exit 1; }
  printf 'chart: %-28s lint ok, template ok (%s objects)\n' "$label" "$(grep -c '^kind:' "$out/rendered")"
  # One slow answer of /ready must not take a replica out of its Service (see the model in the script).
  node scripts/readiness-probe.mjs <"$out/rendered" >/dev/null || { echo "chart: readiness probe FAILED for $label" >&2; exit 1; }
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
# HA on exactly as many nodes as replicas: with one pod per node, a rollout can only stop a pod before it starts one,
# and the PodDisruptionBudget lets that one go.
node -e '
  const docs = require("yaml").parseAllDocuments(require("fs").readFileSync(0, "utf8")).map((d) => d.toJS()).filter(Boolean);
  const deployment = docs.find((d) => d.kind === "Deployment");
  const pdb = docs.find((d) => d.kind === "PodDisruptionBudget");
  const rolling = deployment.spec.strategy.rollingUpdate;
  const required = deployment.spec.template.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
  const problems = [];
  if (!required.some((t) => t.topologyKey === "kubernetes.io/hostname")) problems.push("no required anti-affinity on kubernetes.io/hostname");
  if (rolling.maxSurge !== 0) problems.push(`maxSurge ${rolling.maxSurge}: a surge pod has no node left on ${deployment.spec.replicas} nodes`);
  if (!(rolling.maxUnavailable >= 1)) problems.push(`maxUnavailable ${rolling.maxUnavailable}: the rollout could never stop a pod`);
  if (!pdb || pdb.spec.maxUnavailable < rolling.maxUnavailable) problems.push("the PodDisruptionBudget allows fewer pods down than the rollout takes");
  if (problems.length) { console.error("chart: values-ha.yaml cannot roll out: " + problems.join("; ")); process.exit(1); }
  console.log(`chart: values-ha.yaml rolls out on ${deployment.spec.replicas} nodes (maxUnavailable ${rolling.maxUnavailable}, maxSurge 0, PDB maxUnavailable ${pdb.spec.maxUnavailable})`);
' < <("$HELM" template proxy-injector "$CHART" --namespace proxy-injector "${IMAGE[@]}" -f "$CHART/values-ha.yaml")
for f in "$CHART"/ci/*.yaml; do check "ci/$(basename "$f")" -f "$f"; done
refused 'no image' 'image.repository is not set: no image of proxy-injector is published' proxy-injector "$CHART"
refused 'a mistyped value' "value must be one of 'Ignore', 'Fail'" proxy-injector "$CHART" "${IMAGE[@]}" --set webhook.failurePolicy=fail
refused 'an unknown value' 'additional properties' proxy-injector "$CHART" "${IMAGE[@]}" --set webhook.failurPolicy=Fail
refused "a Linkerd object's name" "which Linkerd's own objects use" linkerd-proxy-injector "$CHART" "${IMAGE[@]}" --namespace linkerd
refused 'in-flight bytes below two bodies' 'limits.maxInFlightBytes must be at least twice limits.maxBodyBytes' proxy-injector "$CHART" "${IMAGE[@]}" --set limits.maxInFlightBytes=6291456
refused 'heal with inline configuration' 'heal.enabled compares pods with linkerd-config' proxy-injector "$CHART" "${IMAGE[@]}" --set heal.enabled=true --set-string linkerd.values=proxy:
refused 'a heal window that is not one' 'heal/window' proxy-injector "$CHART" "${IMAGE[@]}" --set heal.enabled=true --set heal.window=nightly
refused 'a scrape interval not a duration' 'podMonitor/scrapeInterval' proxy-injector "$CHART" "${IMAGE[@]}" --set podMonitor.enabled=true --set-string podMonitor.scrapeInterval=30sec
