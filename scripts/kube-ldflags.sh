# Sourced by scripts/e2e-binaries.sh and scripts/node-binaries.sh.
# kube_ldflags <go> <module dir> <k8s version>: the -ldflags for a Kubernetes binary. Kubernetes' own build stamps its
# version in with -X (hack/lib/version.sh); without it the binaries report v0.0.0-master. buildDate is the release's
# commit time from the module proxy, which keeps the build reproducible.
kube_ldflags() {
  local go=$1 dir=$2 version=$3 time major minor flags="-s -w" pkg
  time=$(cd "$dir" && "$go" list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)
  major=${version#v}; major=${major%%.*}
  minor=${version#v*.}; minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=${time:-1970-01-01T00:00:00Z}"
  done
  printf '%s\n' "$flags"
}
