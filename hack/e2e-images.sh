#!/usr/bin/env bash
# e2e-images.sh — build the e2e test images the [NodeConformance] specs run, here (no internet),
# and push them to the local registry of a CRI environment started by hack/cri-up.sh with
# PODWARD_CRI_MIRRORS=registry.k8s.io: containerd then pulls registry.k8s.io/NAME from
# http://REGISTRY/v2/NAME, so the specs keep the image names the e2e framework gives them
# (test/utils/image/manifest.go) and no KUBE_TEST_REPO_LIST is needed.
#
# Usage: hack/e2e-images.sh AGNHOST NONEWPRIVS NETUTIL BUSYBOX K8S_SRC    (as hack/e2e-build.sh
#        printed them; K8S_SRC: the k8s.io/kubernetes module directory, for the images' data files)
# Env:   PODWARD_CRI_BASE (/tmp/podward-cri): the CRI environment whose registry gets the images
#
# Upstream's images are Alpine or Debian with more tools; these are Debian's busybox-static (the
# shell and the tools the specs call: sh, cat, ls, wget, sleep, id, hostname...) plus what each
# image is for; the busybox image alone is upstream's BusyBox (below). Deterministic (fixed mtimes,
# owners and order), pushed only when the registry lacks that exact config:
#   e2e-test-images/agnhost:2.66.1, :2.55  busybox + /agnhost (ENTRYPOINT /agnhost, CMD pause),
#                                      bash as /bin/bash and /bin/sh (so that `sh -c` finds nc and
#                                      curl on PATH, which busybox's ash would answer with its own
#                                      applets), nc and curl (test/nodeconformance/netutil),
#                                      porter's /localhost.crt and .key, /uploads, the users
#                                      user-defined-in-image (1000) and group-defined-in-image (50000)
#   e2e-test-images/busybox:1.37.0-2   upstream's BusyBox 1.37.0, CMD sh: the real image is docker.io's
#                                      busybox:1.37.0 (the release, defconfig), this one the same
#                                      release and config built here by hack/busybox-build.sh, linked
#                                      statically, with its applets as symlinks in /bin and this
#                                      passwd and group. Not Debian's busybox-static, whose ash drops
#                                      at start the environment variables that are no shell names (a
#                                      Debian patch), so that `sh -c env` missed the ConfigMap and
#                                      Secret specs' `data-1=value-1`, and which prefers its applets
#                                      to PATH. No bash in it, as in the real one.
#   pause:3.10.2                       /agnhost pause (it exits on SIGTERM)
#   e2e-test-images/nonewprivs:1.4     busybox + setuid-root /usr/local/bin/nnp, CMD nnp
#   e2e-test-images/nonroot:1.5        busybox, USER 1234
#   e2e-test-images/glibc-dns-testing:2.1.1  busybox (the hostnameOverride specs run hostname
#                                      and hostname -f in it)
#   e2e-test-images/kitten:1.8, nautilus:1.8  agnhost + the image's html files, CMD test-webserver
# Not built (no [NodeConformance] spec of this focus runs them; a spec that did would fail on
# its pull, never pass): nginx, httpd, perl, node-perf/*, volume/*, sample-*, ipc-utils,
# apparmor-loader, resource-consumer, regression-issue-74839, and the private- and
# invalid-registry images (the specs that use them expect the pull to fail).
set -euo pipefail
umask 022
export LC_ALL=C
[ $# -eq 5 ] || { echo "usage: $0 AGNHOST NONEWPRIVS NETUTIL BUSYBOX K8S_SRC" >&2; exit 2; }
AGNHOST=$1 NNP=$2 NETUTIL=$3 BUSYBOX=$4 K8S=$5
BASE=${PODWARD_CRI_BASE:-/tmp/podward-cri}
say() { echo "[e2e-images $(date -u +%T)] $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
REG=$(sed -n 's/^PODWARD_CRI_REGISTRY=//p' "$BASE/env" 2>/dev/null) || REG=
[ -n "$REG" ] || die "no registry in $BASE/env: start hack/cri-up.sh first"
for f in "$AGNHOST" "$NNP" "$NETUTIL" "$BUSYBOX" /bin/busybox /bin/bash-static; do [ -x "$f" ] || die "$f missing"; done
[ -d "$K8S/test/images/agnhost" ] || die "$K8S is not the k8s.io/kubernetes module directory"
command -v skopeo >/dev/null || die "skopeo not found (hack/cri-up.sh installs it)"

W=$(mktemp -d "$BASE/tmp/e2e-images.XXXXXX")
trap 'rm -rf "$W"' EXIT
# shellcheck source=hack/lib/oci-image.sh
. "$(dirname "$0")/lib/oci-image.sh"
layer() { oci_layer "$@"; } # DIR NAME: a deterministic tar of DIR's contents as $W/NAME.tar

# rootfs DIR BUSYBOX: the directories, BUSYBOX as /bin/busybox with its applets as links, passwd, group
rootfs() {
  local r=$1 bb=$2 a
  mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,tmp,proc,sys,dev,root,var,run,home}
  chmod 1777 "$r/tmp"
  chmod 0700 "$r/root"
  cp "$bb" "$r/bin/busybox"
  chmod 0755 "$r/bin/busybox"
  for a in $("$bb" --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
  cat >"$r/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh
P
  cat >"$r/etc/group" <<'G'
root:x:0:
nogroup:x:65534:
user-defined-in-image:x:1000:
group-defined-in-image:x:50000:user-defined-in-image
G
}

# layer base: Debian's busybox-static, bash-static (the images but busybox)
rootfs "$W/base" /bin/busybox
cp /bin/bash-static "$W/base/bin/bash"
layer "$W/base" base

# layer busybox: upstream's BusyBox (the busybox image); its sh passes on what the specs check
rootfs "$W/busybox" "$BUSYBOX"
out=$(env -i 'data-1=value-1' "$W/busybox/bin/sh" -c env) || die "$BUSYBOX does not run"
grep -qx 'data-1=value-1' <<<"$out" || die "$BUSYBOX's sh drops data-1 from the environment"
layer "$W/busybox" busybox

# layer agnhost: the server, /bin/sh as bash, nc and curl before busybox's on PATH
r=$W/agnhost
mkdir -p "$r/uploads" "$r/usr/bin" "$r/bin"
cp "$AGNHOST" "$r/agnhost"
ln -s agnhost "$r/agnhost-2"
install -m 0644 "$K8S/test/images/agnhost/porter/localhost.crt" "$K8S/test/images/agnhost/porter/localhost.key" "$r/"
cp "$NETUTIL" "$r/usr/bin/nc"
ln -s nc "$r/usr/bin/curl"
ln -s bash "$r/bin/sh"
layer "$r" agnhost

# layer nnp: the setuid probe
r=$W/nnp
mkdir -p "$r/usr/local/bin"
install -m 4755 "$NNP" "$r/usr/local/bin/nnp"
layer "$r" nnp

for k in kitten nautilus; do
  r=$W/$k
  mkdir -p "$r"
  install -m 0644 "$K8S/test/images/$k/html/"* "$r/"
  layer "$r" "$k"
done

image() { oci_image "$@"; } # NAME:TAG CONFIG-FRAGMENT LAYER...: pushed as $REG/NAME:TAG
AGNHOST_CFG='"Entrypoint":["/agnhost"],"Cmd":["pause"]'
image e2e-test-images/agnhost:2.66.1 "$AGNHOST_CFG" base agnhost
image e2e-test-images/agnhost:2.55 "$AGNHOST_CFG" base agnhost
image e2e-test-images/busybox:1.37.0-2 '"Cmd":["sh"]' busybox
image pause:3.10.2 '"Entrypoint":["/agnhost","pause"]' base agnhost
image e2e-test-images/nonewprivs:1.4 '"Cmd":["nnp"]' base nnp
image e2e-test-images/nonroot:1.5 '"User":"1234","Cmd":["sh"]' base
image e2e-test-images/glibc-dns-testing:2.1.1 '"Cmd":["sh"]' base
image e2e-test-images/kitten:1.8 '"Entrypoint":["/agnhost"],"Cmd":["test-webserver"]' base agnhost kitten
image e2e-test-images/nautilus:1.8 '"Entrypoint":["/agnhost"],"Cmd":["test-webserver"]' base agnhost nautilus
say "done: registry $REG"
