#!/usr/bin/env bash
# Builds (or locates) the control-plane binaries for the end-to-end tests:
# etcd, kube-apiserver and kube-controller-manager.
#
# Which Kubernetes: $E2E_KUBERNETES names a minor release with a module of its own
# (1.37 builds from test/e2e/go-1.37); unset, the default one in test/e2e/go.
#
# Prints ONE line on stdout: the absolute directory holding the three binaries
# (the envtest / KUBEBUILDER_ASSETS convention). Everything else goes to stderr.
#
#  1. $KUBEBUILDER_ASSETS, if set and it holds all three binaries (not with $E2E_KUBERNETES).
#  2. Otherwise the cache directory
#       ${PROXY_INJECTOR_E2E_CACHE:-$HOME/.cache/proxy-injector/e2e}/<version-key>/bin
#     where <version-key> changes whenever test/e2e/go/go.mod or go.sum (the
#     pinned versions) or the build recipe below change. Missing binaries are
#     built from the Go module proxy with the module in test/e2e/go (no release
#     downloads). The first build takes several minutes; later runs are instant.
#
# Safe to interrupt and to run concurrently: each binary is built under a
# temporary name and renamed into place, and builds hold a lock (flock).
set -euo pipefail

# Bump when the way the binaries are built changes (flags, ldflags, ...).
RECIPE_VERSION=1
BINARIES=(etcd kube-apiserver kube-controller-manager)

log() { printf 'e2e-binaries: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

has_all() {
  local dir=$1 b
  for b in "${BINARIES[@]}"; do
    [[ -x "$dir/$b" && -f "$dir/$b" ]] || return 1
  done
}

# --- 1. KUBEBUILDER_ASSETS (unless a release was asked for by name) -----------------
if [[ -n "${KUBEBUILDER_ASSETS:-}" && -n "${E2E_KUBERNETES:-}" ]]; then
  log "E2E_KUBERNETES=$E2E_KUBERNETES asks for a release by name: KUBEBUILDER_ASSETS is not used"
elif [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if has_all "$KUBEBUILDER_ASSETS"; then
    (cd "$KUBEBUILDER_ASSETS" && pwd -P)
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS does not hold ${BINARIES[*]}; using the cache"
fi

# --- 2. the cache ---------------------------------------------------------------
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd -P)
if [[ -n "${E2E_KUBERNETES:-}" ]]; then
  MODULE_DIR="$REPO_ROOT/test/e2e/go-$E2E_KUBERNETES"
  if [[ ! -d "$MODULE_DIR" ]]; then
    known=$(cd "$REPO_ROOT/test/e2e" && ls -d go-*/ 2>/dev/null | sed -e 's#^go-##' -e 's#/$##' | tr '\n' ' ' | sed 's/ $//')
    die "E2E_KUBERNETES=$E2E_KUBERNETES has no module test/e2e/go-$E2E_KUBERNETES (known: ${known:-none}; unset for the default)"
  fi
else
  MODULE_DIR="$REPO_ROOT/test/e2e/go"
fi
[[ -f "$MODULE_DIR/go.mod" && -f "$MODULE_DIR/go.sum" ]] || die "missing $MODULE_DIR/go.mod or go.sum"

# Versions straight from go.mod (no Go toolchain needed for a cache hit).
module_version() { # <module path>
  awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$MODULE_DIR/go.mod"
}
K8S_VERSION=$(module_version k8s.io/kubernetes)
ETCD_VERSION=$(module_version go.etcd.io/etcd/server/v3)
[[ -n "$K8S_VERSION" && -n "$ETCD_VERSION" ]] || die "cannot read the pinned versions from $MODULE_DIR/go.mod"

# The key ignores comments and blank lines in go.mod; any real change (a version,
# a replace directive, go.sum, the recipe) yields a new key.
HASH=$(
  {
    printf 'recipe %s\n' "$RECIPE_VERSION"
    sed -e 's#//.*$##' -e 's/[[:space:]]*$//' -e '/^$/d' "$MODULE_DIR/go.mod"
    cat "$MODULE_DIR/go.sum"
  } | sha256sum | cut -c1-12
)
KEY="k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-${HASH}"
CACHE_ROOT=${PROXY_INJECTOR_E2E_CACHE:-${HOME:?HOME is not set}/.cache/proxy-injector/e2e}
BIN_DIR="$CACHE_ROOT/$KEY/bin"

if has_all "$BIN_DIR"; then
  echo "$BIN_DIR"
  exit 0
fi

# --- build ------------------------------------------------------------------
mkdir -p "$BIN_DIR"
BIN_DIR=$(cd "$BIN_DIR" && pwd -P)

if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE_ROOT/$KEY/.lock"
  if ! flock -n 9; then
    log "another build of $KEY is running; waiting for it"
    flock 9
  fi
  if has_all "$BIN_DIR"; then
    echo "$BIN_DIR"
    exit 0
  fi
fi

GO=${GO:-}
if [[ -z "$GO" ]]; then
  if command -v go >/dev/null 2>&1; then GO=$(command -v go)
  elif [[ -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go
  else die "Go is needed to build the e2e binaries (set GO=/path/to/go or KUBEBUILDER_ASSETS)"
  fi
fi

# A hermetic-ish build: static binaries, go.sum enforced, no go.work, no vendor.
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly

# shellcheck source=go-build.sh
source "$SCRIPT_DIR/go-build.sh"
trap go_build_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
K8S_LDFLAGS=$(kube_ldflags "$GO" "$MODULE_DIR" "$K8S_VERSION")

log "building into $BIN_DIR (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION)"
total_start=$SECONDS
go_build etcd "$MODULE_DIR" go.etcd.io/etcd/server/v3 "-s -w"
go_build kube-apiserver "$MODULE_DIR" k8s.io/kubernetes/cmd/kube-apiserver "$K8S_LDFLAGS"
go_build kube-controller-manager "$MODULE_DIR" k8s.io/kubernetes/cmd/kube-controller-manager "$K8S_LDFLAGS"
log "all binaries built in $((SECONDS - total_start)) s"

has_all "$BIN_DIR" || die "build finished but $BIN_DIR is incomplete"
echo "$BIN_DIR"
