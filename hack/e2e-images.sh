#!/usr/bin/env bash
# e2e-images.sh — build the e2e test images the [NodeConformance] specs run, here (no internet),
# and push them to the local registry of a CRI environment started by hack/cri-up.sh with
# PODWARD_CRI_MIRRORS=registry.k8s.io: containerd then pulls registry.k8s.io/NAME from
# http://REGISTRY/v2/NAME, so the specs keep the image names the e2e framework gives them
# (test/utils/image/manifest.go) and no KUBE_TEST_REPO_LIST is needed.
#
# Usage: hack/e2e-images.sh AGNHOST NONEWPRIVS NETUTIL K8S_SRC     (as hack/e2e-build.sh printed
#        them; K8S_SRC: the k8s.io/kubernetes module directory, for the images' data files)
# Env:   PODWARD_CRI_BASE (/tmp/podward-cri): the CRI environment whose registry gets the images
#
# Upstream's images are Alpine or Debian with more tools; these are Debian's busybox-static (the
# shell and the tools the specs call: sh, cat, ls, wget, sleep, id, hostname...) plus what each
# image is for. Deterministic (fixed mtimes, owners and order), pushed only when the registry
# lacks that exact config:
#   e2e-test-images/agnhost:2.66.1, :2.55  busybox + /agnhost (ENTRYPOINT /agnhost, CMD pause),
#                                      bash as /bin/bash and /bin/sh (so that `sh -c` finds nc and
#                                      curl on PATH, which busybox's ash would answer with its own
#                                      applets), nc and curl (test/nodeconformance/netutil),
#                                      porter's /localhost.crt and .key, /uploads, the users
#                                      user-defined-in-image (1000) and group-defined-in-image (50000)
#   e2e-test-images/busybox:1.37.0-2   busybox, CMD sh
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
[ $# -eq 4 ] || { echo "usage: $0 AGNHOST NONEWPRIVS NETUTIL K8S_SRC" >&2; exit 2; }
AGNHOST=$1 NNP=$2 NETUTIL=$3 K8S=$4
BASE=${PODWARD_CRI_BASE:-/tmp/podward-cri}
say() { echo "[e2e-images $(date -u +%T)] $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
REG=$(sed -n 's/^PODWARD_CRI_REGISTRY=//p' "$BASE/env" 2>/dev/null) || REG=
[ -n "$REG" ] || die "no registry in $BASE/env: start hack/cri-up.sh first"
for f in "$AGNHOST" "$NNP" "$NETUTIL" /bin/busybox /bin/bash-static; do [ -x "$f" ] || die "$f missing"; done
[ -d "$K8S/test/images/agnhost" ] || die "$K8S is not the k8s.io/kubernetes module directory"
command -v skopeo >/dev/null || die "skopeo not found (hack/cri-up.sh installs it)"

W=$(mktemp -d "$BASE/tmp/e2e-images.XXXXXX")
trap 'rm -rf "$W"' EXIT
sha() { sha256sum "$1" | cut -d' ' -f1; }
layer() { # DIR NAME: a deterministic tar of DIR's contents as $W/NAME.tar
  (cd "$1" && find . -mindepth 1 -printf '%P\n' | sort) >"$W/$2.list"
  tar --no-recursion --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -C "$1" -T "$W/$2.list" -cf "$W/$2.tar"
}

# layer base: busybox-static, its applets as links, bash-static, passwd and group
r=$W/base
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,tmp,proc,sys,dev,root,var,run,home}
chmod 1777 "$r/tmp"
chmod 0700 "$r/root"
cp /bin/busybox "$r/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
cp /bin/bash-static "$r/bin/bash"
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
layer "$r" base

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

# registry_has NAME TAG CONFIG-DIGEST: the registry serves NAME:TAG with that config
registry_has() {
  curl -fsS --max-time 5 -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REG/v2/$1/manifests/$2" 2>/dev/null | tr -d ' \n' | grep -qF "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"size\":$3,\"digest\":\"sha256:$4\"}"
}
image() { # NAME:TAG CONFIG-FRAGMENT LAYER...: a docker-archive, pushed as $REG/NAME:TAG
  local ref=$1 cfg=$2 d diffs='' files='' l s c
  shift 2
  d=$W/img
  rm -rf "$d" && mkdir -p "$d"
  for l in "$@"; do
    s=$(sha "$W/$l.tar")
    mkdir -p "$d/$s" && cp "$W/$l.tar" "$d/$s/layer.tar"
    diffs+="\"sha256:$s\"," files+="\"$s/layer.tar\","
  done
  printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"WorkingDir":"/",%s},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$(go env GOARCH 2>/dev/null || echo amd64)" "$cfg" "${diffs%,}" >"$d/config.json"
  c=$(sha "$d/config.json")
  if registry_has "${ref%%:*}" "${ref#*:}" "$(stat -c %s "$d/config.json")" "$c"; then
    say "registry has registry.k8s.io/$ref"
    return
  fi
  mv "$d/config.json" "$d/$c.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":[%s]}]\n' "$c" "$REG/$ref" "${files%,}" >"$d/manifest.json"
  (cd "$d" && tar --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -cf "$W/img.tar" -- *)
  TMPDIR=$W skopeo copy -q --insecure-policy --dest-tls-verify=false --format v2s2 "docker-archive:$W/img.tar" "docker://$REG/$ref" ||
    die "skopeo copy $ref to $REG"
  say "pushed registry.k8s.io/$ref"
}
AGNHOST_CFG='"Entrypoint":["/agnhost"],"Cmd":["pause"]'
image e2e-test-images/agnhost:2.66.1 "$AGNHOST_CFG" base agnhost
image e2e-test-images/agnhost:2.55 "$AGNHOST_CFG" base agnhost
image e2e-test-images/busybox:1.37.0-2 '"Cmd":["sh"]' base
image pause:3.10.2 '"Entrypoint":["/agnhost","pause"]' base agnhost
image e2e-test-images/nonewprivs:1.4 '"Cmd":["nnp"]' base nnp
image e2e-test-images/nonroot:1.5 '"User":"1234","Cmd":["sh"]' base
image e2e-test-images/glibc-dns-testing:2.1.1 '"Cmd":["sh"]' base
image e2e-test-images/kitten:1.8 '"Entrypoint":["/agnhost"],"Cmd":["test-webserver"]' base agnhost kitten
image e2e-test-images/nautilus:1.8 '"Entrypoint":["/agnhost"],"Cmd":["test-webserver"]' base agnhost nautilus
say "done: registry $REG"
