# Sourced by scripts/e2e-binaries.sh and scripts/node-binaries.sh: how both build their Go programs. The caller defines
# log and die, sets GO and BIN_DIR, and traps EXIT with go_build_cleanup.
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

GO_BUILD_PID=
GO_BUILD_TMP=()

# go_build <name> <module dir> <package> <ldflags>: builds the package into $BIN_DIR/<name>, unless it is there, under
# a temporary name renamed into place, so that an interrupted build leaves nothing a later run would take as built.
go_build() {
  local name=$1 dir=$2 pkg=$3 ldflags=$4 start=$SECONDS
  if [[ -x "$BIN_DIR/$name" ]]; then
    log "$name: already built"
    return
  fi
  local tmp="$BIN_DIR/.$name.tmp.$$"
  GO_BUILD_TMP+=("$tmp")
  log "$name: building $pkg (go $("$GO" env GOVERSION), this can take minutes) ..."
  # In the background and waited for: bash defers a trap while a foreground command runs, so a signal would wait for
  # the whole build.
  (cd "$dir" && exec "$GO" build -p 2 -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg") >&2 &
  GO_BUILD_PID=$!
  wait "$GO_BUILD_PID" || die "building $name failed"
  GO_BUILD_PID=
  mv -f -- "$tmp" "$BIN_DIR/$name"
  log "$name: done in $((SECONDS - start)) s ($(du -h "$BIN_DIR/$name" | cut -f1))"
}

# On EXIT: stops a build under way, waits for it, and removes what it left.
go_build_cleanup() {
  local f
  if [[ -n "$GO_BUILD_PID" ]]; then kill -TERM "$GO_BUILD_PID" 2>/dev/null || true; wait "$GO_BUILD_PID" 2>/dev/null || true; fi
  for f in "${GO_BUILD_TMP[@]}"; do rm -f -- "$f"; done
}
