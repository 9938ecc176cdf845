#!/usr/bin/env bash
# Builds (or finds in the cache) the programs the node suite runs besides the e2e suite's control plane: kubelet,
# kube-scheduler and kubectl from test/node/go (Kubernetes v1.34.10, the same module graph as test/e2e/go), and CoreDNS
# from test/node/go-coredns. Built from the Go module proxy, once, into
#   ${PROXY_INJECTOR_NODE_CACHE:-$HOME/.cache/proxy-injector/node}/bin-<versions>-<hash>/
# whose name changes with either module's go.mod or go.sum or this recipe. etcd, kube-apiserver and
# kube-controller-manager come from scripts/e2e-binaries.sh (its cache), which this script runs first.
#
# Prints TWO lines on stdout: the e2e binaries' directory, then this one. Everything else goes to stderr.
set -euo pipefail

RECIPE_VERSION=1
BINARIES=(kubelet kube-scheduler kubectl coredns)

log() { printf 'node-binaries: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
K8S_MODULE="$REPO_ROOT/test/node/go"
DNS_MODULE="$REPO_ROOT/test/node/go-coredns"

# The control plane first: on CI the e2e suite has built it already, and it fills the Go build cache these reuse.
E2E_DIR=$(unset E2E_KUBERNETES KUBEBUILDER_ASSETS; bash "$REPO_ROOT/scripts/e2e-binaries.sh")
[[ -x "$E2E_DIR/kube-apiserver" ]] || die "scripts/e2e-binaries.sh printed $E2E_DIR, which holds no kube-apiserver"

module_version() { # <go.mod> <module path>: in a require block or on a require line of its own
  awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"
}
K8S_VERSION=$(module_version "$K8S_MODULE/go.mod" k8s.io/kubernetes)
DNS_VERSION=$(module_version "$DNS_MODULE/go.mod" github.com/coredns/coredns)
[[ -n "$K8S_VERSION" && -n "$DNS_VERSION" ]] || die "cannot read the pinned versions from the modules' go.mod"
HASH=$(
  {
    printf 'recipe %s\n' "$RECIPE_VERSION"
    cat "$K8S_MODULE/go.mod" "$K8S_MODULE/go.sum" "$K8S_MODULE/tools.go" "$DNS_MODULE/go.mod" "$DNS_MODULE/go.sum" "$DNS_MODULE/main.go"
  } | sha256sum | cut -c1-12
)
CACHE_ROOT=${PROXY_INJECTOR_NODE_CACHE:-${HOME:?HOME is not set}/.cache/proxy-injector/node}
BIN_DIR="$CACHE_ROOT/bin-k8s-$K8S_VERSION-coredns-$DNS_VERSION-$HASH"

has_all() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x "$BIN_DIR/$b" ]] || return 1; done
}
print_dirs() { printf '%s\n%s\n' "$E2E_DIR" "$BIN_DIR"; exit 0; }
has_all && print_dirs

mkdir -p "$BIN_DIR"
exec 9>"$BIN_DIR/.lock"
flock 9
has_all && print_dirs

GO=${GO:-$(command -v go || true)}
[[ -n "$GO" ]] || die "Go is needed to build the node suite's binaries (or set GO=/path/to/go)"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly

# shellcheck source=go-build.sh
source "$(dirname "${BASH_SOURCE[0]}")/go-build.sh"
trap go_build_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
K8S_LDFLAGS=$(kube_ldflags "$GO" "$K8S_MODULE" "$K8S_VERSION")

start=$SECONDS
go_build kube-scheduler "$K8S_MODULE" k8s.io/kubernetes/cmd/kube-scheduler "$K8S_LDFLAGS"
go_build kubelet "$K8S_MODULE" k8s.io/kubernetes/cmd/kubelet "$K8S_LDFLAGS"
go_build kubectl "$K8S_MODULE" k8s.io/kubernetes/cmd/kubectl "$K8S_LDFLAGS"
go_build coredns "$DNS_MODULE" proxy-injector/test/node/go-coredns "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$DNS_VERSION"
log "built in $((SECONDS - start)) s into $BIN_DIR"
has_all || die "$BIN_DIR is incomplete"
print_dirs
