#!/usr/bin/env bash
# Builds (or locates) helm for the chart checks: `helm lint`, `helm template`, and `helm install`/`upgrade` against the
# e2e suite's real kube-apiserver. Release binaries cannot be downloaded here, so helm is built from the Go module proxy
# at the version pinned in test/helm/go/go.mod, once, into
#   ${PROXY_INJECTOR_TOOLS_CACHE:-$HOME/.cache/proxy-injector/tools}/helm-<version>-<hash>/helm
# Prints ONE line on stdout: the absolute path of the helm binary. Everything else goes to stderr.
# $HELM, if set to an executable, is used as it is.
set -euo pipefail

log() { printf 'helm-binary: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [[ -n "${HELM:-}" ]]; then
  [[ -x "$HELM" ]] || die "HELM=$HELM is not executable"
  echo "$HELM"
  exit 0
fi

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
MODULE_DIR="$REPO_ROOT/test/helm/go"
VERSION=$(awk '$1 == "helm.sh/helm/v4" && $2 ~ /^v/ { print $2; exit }' "$MODULE_DIR/go.mod")
[[ -n "$VERSION" ]] || die "cannot read helm's version from $MODULE_DIR/go.mod"
HASH=$(cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" | sha256sum | cut -c1-12)
CACHE_ROOT=${PROXY_INJECTOR_TOOLS_CACHE:-${HOME:?HOME is not set}/.cache/proxy-injector/tools}
DIR="$CACHE_ROOT/helm-$VERSION-$HASH"
BIN="$DIR/helm"

if [[ -x "$BIN" ]]; then echo "$BIN"; exit 0; fi

mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
if [[ -x "$BIN" ]]; then echo "$BIN"; exit 0; fi

GO=${GO:-$(command -v go || true)}
[[ -n "$GO" ]] || die "Go is needed to build helm (or set HELM=/path/to/helm)"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly
log "building helm $VERSION (go $("$GO" env GOVERSION)); this takes a few minutes the first time ..."
start=$SECONDS
tmp="$DIR/.helm.tmp.$$"
trap 'rm -f -- "$tmp"' EXIT
(cd "$MODULE_DIR" && "$GO" build -p 2 -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$VERSION" -o "$tmp" helm.sh/helm/v4/cmd/helm) >&2 \
  || die "building helm failed"
mv -f -- "$tmp" "$BIN"
log "helm $VERSION built in $((SECONDS - start)) s"
echo "$BIN"
