# k8s-build.sh — sourced by hack/control-plane-up.sh and hack/e2e-build.sh: how both build
# programs of k8s.io/kubernetes from the Go module proxy, so that they share one scratch module
# and Go's build cache (the same flags every time: -trimpath, CGO_ENABLED=0; the version ldflags
# only touch the link).
#
# Needs K8S_VERSION (1.MINOR.PATCH) set. Defines:
#   CACHE         the binary cache: PODWARD_CP_CACHE, else /var/cache/podward/control-plane when it
#                 can be written, else $HOME/.cache/podward/control-plane
#   K8S_SRC       $CACHE/src/kubernetes-v$K8S_VERSION, the scratch module
#   K8S_LDFLAGS   the version stamps (what `kubectl version` and the e2e suite report)
#   k8s_module    makes the scratch module once (returns non-zero on failure)
#   k8s_go ARGS   runs `go ARGS` in the scratch module, with -mod=mod and the shared flags

if [ -n "${PODWARD_CP_CACHE:-}" ]; then
  CACHE=$PODWARD_CP_CACHE
elif mkdir -p /var/cache/podward/control-plane 2>/dev/null && [ -w /var/cache/podward/control-plane ]; then
  CACHE=/var/cache/podward/control-plane
else
  CACHE=${HOME:?}/.cache/podward/control-plane
fi
export CGO_ENABLED=0 GOWORK=off
K8S_SRC=$CACHE/src/kubernetes-v$K8S_VERSION
K8S_MINOR=$(cut -d. -f2 <<<"$K8S_VERSION")
K8S_LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$K8S_MINOR"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.gitCommit=unknown"
K8S_LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION"
K8S_LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$K8S_MINOR"

k8s_module() { # scratch module requiring k8s.io/kubernetes, each staging module replaced by its release
  local gomod
  [ -s "$K8S_SRC/.ready" ] && return 0
  rm -rf "$K8S_SRC" && mkdir -p "$K8S_SRC"
  gomod=$(cd "$K8S_SRC" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -s "$gomod" ] || return 1
  {
    printf 'module podward.local/cpbuild/kubernetes\n\ngo 1.25\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
    # k8s.io/kubernetes requires its staging modules as v0.0.0 with ./staging replaces, which a
    # dependency's go.mod cannot use: replace each with its published release, v0.MINOR.PATCH.
    sed -n '/^require (/,/^)/p' "$gomod" | awk -v v="v0.${K8S_VERSION#1.}" '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print "\t" $1 " => " $1 " " v}'
    printf ')\n'
  } >"$K8S_SRC/go.mod"
  grep -q '=> k8s.io/apiserver ' "$K8S_SRC/go.mod" || return 1
  touch "$K8S_SRC/.ready"
}

k8s_go() { # VERB ARGS...: go VERB -mod=mod -trimpath ARGS... in the scratch module
  local verb=$1
  shift
  (cd "$K8S_SRC" && go "$verb" -mod=mod -trimpath "$@")
}
