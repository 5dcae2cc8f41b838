#!/usr/bin/env bash
# e2e-build.sh — build, from the Go module proxy, what `make node-conformance` runs besides the
# control plane: Kubernetes' e2e suite with the [NodeConformance] specs, and the programs of the
# e2e test images. Cached by version next to the control plane's binaries; a second run builds
# nothing (~0.1 s).
#
# Usage: hack/e2e-build.sh          progress on stderr; on stdout the paths, as E2E_BIN=
#                                   AGNHOST_BIN= NONEWPRIVS_BIN= NETUTIL_BIN= BUSYBOX_BIN= K8S_DIR= lines
#                                   (K8S_DIR: the k8s.io/kubernetes module's source, for the images'
#                                   data files)
#
# Builds into $CACHE/bin (CACHE as hack/control-plane-up.sh: PODWARD_CP_CACHE, default
# /var/cache/podward/control-plane, else $HOME/.cache/podward/control-plane):
#   e2e-nodeconformance-v$V.test  test/nodeconformance/suite (k8s.io/kubernetes/test/e2e's suite
#                                 with the test packages of the [NodeConformance] specs), go test -c
#   agnhost-v$V                   k8s.io/kubernetes/test/images/agnhost (the e2e images' server)
#   nonewprivs-v$V                k8s.io/kubernetes/test/images/nonewprivs (the setuid probe of the
#                                 nonewprivs image)
# and, from this repository, $CACHE/bin/netutil-<hash>: test/nodeconformance/netutil (the nc and
# curl of the agnhost image), and upstream's BusyBox for the busybox image (hack/busybox-build.sh,
# from Debian's source package; cold 5 to 10 min).
# In the scratch module of hack/lib/k8s-build.sh, under the cache's lock: the control plane's
# packages compiled by control-plane-up.sh are not compiled again. Cold on 2 idle cores, after the
# control plane: ~10 min (the e2e packages; -vet=off spares `go test -c` a vet of every
# dependency).
#
# Env: PODWARD_CP_K8S_VERSION (1.37.2), PODWARD_CP_CACHE.
set -euo pipefail
umask 022
export LC_ALL=C
PATH=$PATH:/usr/local/go/bin
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
K8S_VERSION=${PODWARD_CP_K8S_VERSION:-1.37.2}
say() { echo "[e2e-build $(date -u +%T)] $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
[[ $K8S_VERSION =~ ^1\.[0-9]+\.[0-9]+$ ]] || die "bad PODWARD_CP_K8S_VERSION '$K8S_VERSION'"
# shellcheck source=hack/lib/k8s-build.sh
. "$here/lib/k8s-build.sh"
mkdir -p "$CACHE/bin" "$CACHE/src"
command -v go >/dev/null || die "go not found"

E2E=$CACHE/bin/e2e-nodeconformance-v$K8S_VERSION.test
AGNHOST=$CACHE/bin/agnhost-v$K8S_VERSION
NNP=$CACHE/bin/nonewprivs-v$K8S_VERSION
# the suite's source is part of the cache key: a change to it rebuilds the binary
SUITE=$repo/test/nodeconformance/suite/suite_test.go
SUITE_SUM=$(sha256sum "$SUITE" | cut -c1-12)
NETUTIL_SUM=$(cat "$repo"/test/nodeconformance/netutil/*.go | sha256sum | cut -c1-12)
NETUTIL=$CACHE/bin/netutil-$NETUTIL_SUM

exec 8>"$CACHE/.lock"
flock -w 3600 8 || die "another build holds $CACHE/.lock"

if [ ! -x "$AGNHOST" ] || [ ! -x "$NNP" ]; then
  t=$SECONDS log=$CACHE/src/images-v$K8S_VERSION.log out=$CACHE/src/out.$$
  say "building agnhost and nonewprivs v$K8S_VERSION"
  rm -rf "$out"
  (
    k8s_module && (cd "$K8S_SRC" && go get "k8s.io/kubernetes/test/images/agnhost@v$K8S_VERSION") &&
      mkdir -p "$out" &&
      k8s_go build -ldflags "$K8S_LDFLAGS" -o "$out/" k8s.io/kubernetes/test/images/agnhost k8s.io/kubernetes/test/images/nonewprivs
  ) >"$log" 2>&1 || { rm -rf "$out"; tail -n 20 "$log" >&2; die "building agnhost (log: $log)"; }
  mv -f "$out/agnhost" "$AGNHOST"
  mv -f "$out/nonewprivs" "$NNP"
  rm -rf "$out"
  say "built in $((SECONDS - t)) s"
fi

if [ ! -x "$E2E" ] || [ "$(cat "$E2E.suite" 2>/dev/null)" != "$SUITE_SUM" ]; then
  t=$SECONDS log=$CACHE/src/e2e-v$K8S_VERSION.log
  say "building the e2e suite v$K8S_VERSION (cold: ~10 min after the control plane)"
  (
    k8s_module && (cd "$K8S_SRC" && go get "k8s.io/kubernetes/test/e2e@v$K8S_VERSION") &&
      rm -rf "$K8S_SRC/nodeconformance" && mkdir -p "$K8S_SRC/nodeconformance" &&
      sed '/^\/\/go:build ignore$/d' "$SUITE" >"$K8S_SRC/nodeconformance/suite_test.go" &&
      k8s_go test -c -vet=off -ldflags "$K8S_LDFLAGS" -o "$E2E.tmp.$$" ./nodeconformance
  ) >"$log" 2>&1 || { rm -f "$E2E.tmp.$$"; tail -n 20 "$log" >&2; die "building the e2e suite (log: $log)"; }
  mv -f "$E2E.tmp.$$" "$E2E"
  echo "$SUITE_SUM" >"$E2E.suite"
  say "built in $((SECONDS - t)) s: $E2E"
fi

if [ ! -x "$NETUTIL" ]; then
  (cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$NETUTIL.tmp.$$" ./test/nodeconformance/netutil) ||
    die "building test/nodeconformance/netutil"
  mv -f "$NETUTIL.tmp.$$" "$NETUTIL"
fi
K8S_DIR=$(cd "$K8S_SRC" && go list -mod=mod -m -f '{{.Dir}}' k8s.io/kubernetes) || die "finding the k8s.io/kubernetes module"
exec 8>&-
BUSYBOX=$("$here/busybox-build.sh") || die "hack/busybox-build.sh"
BUSYBOX=${BUSYBOX#BUSYBOX_BIN=}
printf 'E2E_BIN=%s\nAGNHOST_BIN=%s\nNONEWPRIVS_BIN=%s\nNETUTIL_BIN=%s\nBUSYBOX_BIN=%s\nK8S_DIR=%s\n' \
  "$E2E" "$AGNHOST" "$NNP" "$NETUTIL" "$BUSYBOX" "$K8S_DIR"
