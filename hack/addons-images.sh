#!/usr/bin/env bash
# addons-images.sh — build the cluster add-ons' images here (no internet) and push them to the local
# registry of a CRI environment started by hack/cri-up.sh with PODWARD_CRI_MIRRORS=registry.k8s.io,
# under the names a cluster uses (containerd then pulls registry.k8s.io/NAME from
# http://REGISTRY/v2/NAME, as for hack/e2e-images.sh's images):
#   registry.k8s.io/kube-proxy:v$K8S_VERSION         k8s.io/kubernetes/cmd/kube-proxy at the control
#       plane's version, at /usr/local/bin/kube-proxy (kubeadm's DaemonSet runs that path), with
#       Debian's iptables (iptables, -save, -restore and the ip6tables ones as the host's backend:
#       nft or legacy, per `iptables -V` here, or PODWARD_ADDONS_IPTABLES), conntrack, their shared
#       libraries and glibc from Debian's packages (dpkg-deb -x, an ld.so.cache made by ldconfig -r),
#       and busybox-static's applets for a shell. Label podward.iptables says which backend.
#   registry.k8s.io/coredns/coredns:v$COREDNS_VERSION  github.com/coredns/coredns's coremain with the
#       plugins a cluster's DNS uses (below; upstream's image has all of plugin.cfg, which pulls in
#       every cloud SDK), at /coredns with cap_net_bind_service+ep as upstream's Dockerfile sets it
#       (kept in the layer as an xattr), USER 65532:65532, ENTRYPOINT /coredns.
#
# Usage: hack/addons-images.sh       progress on stderr; on stdout KUBE_PROXY_IMAGE= and
#                                    COREDNS_IMAGE= lines (the registry.k8s.io names)
# Env:   PODWARD_CRI_BASE (/tmp/podward-cri): the CRI environment whose registry gets the images
#        PODWARD_CP_K8S_VERSION (1.37.2), PODWARD_CP_CACHE: as hack/control-plane-up.sh
#        PODWARD_ADDONS_COREDNS_VERSION (1.15.0): github.com/coredns/coredns v$X
#        PODWARD_ADDONS_IPTABLES (nft or legacy; default: the host's, from `iptables -V`)
#
# Idempotent and cached: the binaries go to $CACHE/bin (kube-proxy-v$V, built in the control
# plane's scratch module with its flags, under the cache's lock, so the packages it shares with the
# control plane are not compiled again: ~30 s after control-plane-up.sh; coredns-v$X-<hash of its
# main>, in a scratch module $CACHE/src/coredns-v$X: ~5 min cold on 2 cores), the Debian packages to
# $CACHE/debs; the images are deterministic and pushed only when the registry lacks that exact
# config (a second run, with a stamp in $PODWARD_CRI_BASE/cache: about a second, nothing pushed).
# Measured cold (empty PODWARD_CP_CACHE and GOCACHE, modules downloaded already; 2026-12-07, this
# 2-core machine at a load of 40-60, nice 5): 578 CPU-seconds (user 470 s, sys 107 s), 1666 s wall:
# kube-proxy 1409 s (without the control plane's build in the Go cache, which CI has built just
# before it), CoreDNS 235 s, the Debian packages and layers 22 s; the images came out byte-identical
# to the cached ones'.
set -euo pipefail
umask 022
export LC_ALL=C
PATH=$PATH:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin
here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=${PODWARD_CP_K8S_VERSION:-1.37.2}
COREDNS_VERSION=${PODWARD_ADDONS_COREDNS_VERSION:-1.15.0}
CRI_BASE=${PODWARD_CRI_BASE:-/tmp/podward-cri}
say() { echo "[addons-images $(date -u +%T)] $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
[[ $K8S_VERSION =~ ^1\.[0-9]+\.[0-9]+$ ]] || die "bad PODWARD_CP_K8S_VERSION '$K8S_VERSION'"
[[ $COREDNS_VERSION =~ ^1\.[0-9]+\.[0-9]+$ ]] || die "bad PODWARD_ADDONS_COREDNS_VERSION '$COREDNS_VERSION'"
[ "$(id -u)" = 0 ] || die "must run as root (chroot to check the kube-proxy image's iptables, setcap on coredns)"
IPT=${PODWARD_ADDONS_IPTABLES:-}
if [ -z "$IPT" ]; then
  case $(iptables -V 2>/dev/null) in
    *nf_tables*) IPT=nft ;;
    *legacy*) IPT=legacy ;;
    *) die "cannot tell the host's iptables backend from 'iptables -V': set PODWARD_ADDONS_IPTABLES=nft or legacy" ;;
  esac
fi
case $IPT in nft | legacy) ;; *) die "bad PODWARD_ADDONS_IPTABLES '$IPT' (want nft or legacy)" ;; esac
REG=$(sed -n 's/^PODWARD_CRI_REGISTRY=//p' "$CRI_BASE/env" 2>/dev/null) || REG=
[ -n "$REG" ] || die "no registry in $CRI_BASE/env: start hack/cri-up.sh first"
for b in go skopeo curl tar dpkg-deb apt-get ldconfig setcap getcap flock; do
  command -v "$b" >/dev/null || die "$b not found"
done
[ -x /bin/busybox ] || die "/bin/busybox missing (busybox-static: hack/cri-up.sh installs it)"

# shellcheck source=hack/lib/k8s-build.sh
. "$here/lib/k8s-build.sh"
# shellcheck source=hack/lib/oci-image.sh
. "$here/lib/oci-image.sh"
mkdir -p "$CACHE/bin" "$CACHE/src" "$CACHE/debs"
exec 8>"$CACHE/.lock"
flock -w 3600 8 || die "another build holds $CACHE/.lock"

# ----------------------------------------------------------------------------- kube-proxy
KP=$CACHE/bin/kube-proxy-v$K8S_VERSION
if [ ! -x "$KP" ]; then
  t=$SECONDS log=$CACHE/src/kube-proxy-v$K8S_VERSION.log out=$CACHE/src/out.kp.$$
  say "building kube-proxy v$K8S_VERSION"
  rm -rf "$out"
  (
    k8s_module && (cd "$K8S_SRC" && go get "k8s.io/kubernetes/cmd/kube-proxy@v$K8S_VERSION") &&
      mkdir -p "$out" && k8s_go build -ldflags "$K8S_LDFLAGS" -o "$out/" k8s.io/kubernetes/cmd/kube-proxy
  ) >"$log" 2>&1 || { rm -rf "$out"; tail -n 20 "$log" >&2; die "building kube-proxy (log: $log)"; }
  mv -f "$out/kube-proxy" "$KP"
  rm -rf "$out"
  say "built in $((SECONDS - t)) s: $KP"
fi

# ----------------------------------------------------------------------------- coredns
# The plugins: kubeadm's Corefile (errors health ready kubernetes prometheus forward cache loop
# reload loadbalance) and the ones clusters commonly add; the order of execution is CoreDNS's own
# (core/dnsserver/zdirectives.go), not this list's.
COREDNS_PLUGINS=(any autopath bind bufsize cache cancel chaos debug errors file forward header health
  hosts k8s_external kubernetes loadbalance log loop metadata metrics minimal ready reload rewrite
  root template timeouts whoami)
coredns_main() {
  printf '// Generated by hack/addons-images.sh: CoreDNS v%s with a cluster DNS'"'"'s plugins.\npackage main\n\nimport (\n' "$COREDNS_VERSION"
  printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "${COREDNS_PLUGINS[@]}"
  printf '\n\t"github.com/coredns/coredns/coremain"\n)\n\nfunc main() { coremain.Run() }\n'
}
CD_SUM=$(coredns_main | sha256sum | cut -c1-12)
CD=$CACHE/bin/coredns-v$COREDNS_VERSION-$CD_SUM
if [ ! -x "$CD" ]; then
  t=$SECONDS src=$CACHE/src/coredns-v$COREDNS_VERSION log=$CACHE/src/coredns-v$COREDNS_VERSION.log
  say "building coredns v$COREDNS_VERSION (cold: ~5 min on 2 cores)"
  (
    mkdir -p "$src" && cd "$src" &&
      { [ -s go.mod ] || printf 'module podward.local/addonsbuild/coredns\n\ngo 1.25\n' >go.mod; } &&
      coredns_main >main.go &&
      GOWORK=off go get "github.com/coredns/coredns@v$COREDNS_VERSION" &&
      GOWORK=off go build -mod=mod -trimpath -ldflags '-s -w' -o "coredns.$$" . &&
      "./coredns.$$" -version
  ) >"$log" 2>&1 || { rm -f "$src/coredns.$$"; tail -n 20 "$log" >&2; die "building coredns (log: $log)"; }
  mv -f "$src/coredns.$$" "$CD"
  say "built in $((SECONDS - t)) s: $CD"
fi

# ----------------------------------------------------------------------------- Debian packages
# What kube-proxy's iptables mode execs (iptables-save, iptables-restore, iptables, ip6tables...,
# conntrack) and their libraries (apt-cache depends --recurse), glibc, netbase's /etc/protocols.
DEBS=(libc6 libgcc-s1 iptables libxtables12 libip4tc2 libip6tc2 libnftnl11 libmnl0
  libnetfilter-conntrack3 libnfnetlink0 conntrack netbase)
deb_files() { # prints the cached .deb of each package at its candidate version; fails when one is missing
  local p v f cand
  # one apt-cache call (some 50 ms each, seconds under load): "PACKAGE VERSION" lines
  cand=$(apt-cache policy "${DEBS[@]}" 2>/dev/null | awk '/^[^ ]/ {p = $1; sub(/:$/, "", p)} /^  Candidate:/ {print p, $2}')
  for p in "${DEBS[@]}"; do
    v=$(awk -v p="$p" '$1 == p {print $2}' <<<"$cand")
    [ -n "$v" ] && [ "$v" != "(none)" ] || return 1
    f=$(printf '%s/%s_%s_*.deb' "$CACHE/debs" "$p" "${v//:/%3a}")
    # shellcheck disable=SC2086 # the glob is intended
    f=$(ls $f 2>/dev/null | sed -n 1p)
    [ -n "$f" ] || return 1
    echo "$f"
  done
}
if ! deb_files >/dev/null; then
  say "apt-get download ${DEBS[*]}"
  dl() { (cd "$CACHE/debs" && apt-get -o APT::Sandbox::User=root download -qq "${DEBS[@]}") >>"$CACHE/src/apt.log" 2>&1; }
  if ! dl || ! deb_files >/dev/null; then # package lists missing or stale: refresh once
    apt-get update -qq >>"$CACHE/src/apt.log" 2>&1 || { tail -n 20 "$CACHE/src/apt.log" >&2; die "apt-get update"; }
    dl || { tail -n 20 "$CACHE/src/apt.log" >&2; die "apt-get download ${DEBS[*]}"; }
  fi
fi
mapfile -t DEB_FILES < <(deb_files) || die "Debian packages missing in $CACHE/debs"
[ ${#DEB_FILES[@]} = ${#DEBS[@]} ] || die "Debian packages missing in $CACHE/debs"
exec 8>&-

# ----------------------------------------------------------------------------- up to date?
# The stamp: a key of everything the images are made of, then "REF SIZE DIGEST" of each config
# pushed. Same key and the registry still serving those configs: nothing to do (~0.1 s).
STAMP=$CRI_BASE/cache/addons-images.stamp
KEY=$({
  cat "$0" "$here/lib/oci-image.sh"
  stat -c '%n %s %Y' "$KP" "$CD" /bin/busybox "${DEB_FILES[@]}"
  echo "$IPT $K8S_VERSION $COREDNS_VERSION $REG"
} | sha256sum | cut -c1-16)
result() {
  printf 'KUBE_PROXY_IMAGE=registry.k8s.io/kube-proxy:v%s\nCOREDNS_IMAGE=registry.k8s.io/coredns/coredns:v%s\n' "$K8S_VERSION" "$COREDNS_VERSION"
}
if [ "$(sed -n 1p "$STAMP" 2>/dev/null)" = "$KEY" ]; then
  fresh=1
  while read -r ref size digest; do
    oci_registry_has "${ref%%:*}" "${ref#*:}" "$size" "$digest" || { fresh=0; break; }
  done < <(sed 1d "$STAMP")
  if [ "$fresh" = 1 ]; then
    say "registry $REG has both images (stamp $STAMP)"
    result
    exit 0
  fi
fi
rm -f "$STAMP"

# ----------------------------------------------------------------------------- layers
mkdir -p "$CRI_BASE/tmp"
W=$(mktemp -d "$CRI_BASE/tmp/addons-images.XXXXXX")
trap 'rm -rf "$W"' EXIT

# base: busybox-static and its applets (a shell for kubectl exec), passwd and group, /tmp
r=$W/base
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,tmp,proc,sys,dev,root,var,run}
chmod 1777 "$r/tmp"
chmod 0700 "$r/root"
cp /bin/busybox "$r/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
oci_layer "$r" base

# iptables: the packages' files (no docs), the backend's links, ld.so.cache; checked by running
# them in a chroot of the layer over base
r=$W/iptables
mkdir -p "$r"
for f in "${DEB_FILES[@]}"; do dpkg-deb -x "$f" "$r" || die "dpkg-deb -x $f"; done
rm -rf "$r/usr/share/doc" "$r/usr/share/man" "$r/usr/share/lintian" "$r/usr/share/locale" "$r/usr/share/info" \
  "$r"/usr/lib/*-linux-gnu/gconv "$r/usr/sbin/iptables-apply" "$r/usr/sbin/ip6tables-apply"
for t in iptables ip6tables; do
  for s in '' -save -restore; do ln -sfn "xtables-$IPT-multi" "$r/usr/sbin/$t$s"; done
done
printf 'include /etc/ld.so.conf.d/*.conf\n' >"$r/etc/ld.so.conf"
ldconfig -r "$r" || die "ldconfig -r $r"
c=$W/chroot
mkdir -p "$c"
cp -a "$W/base/." "$c/" && cp -a "$r/." "$c/"
for cmd in "iptables -V" "iptables-save -V" "iptables-restore -V" "ip6tables -V" "conntrack --version"; do
  # shellcheck disable=SC2086 # the command's words
  out=$(chroot "$c" /usr/sbin/$cmd 2>&1) || die "$cmd in the kube-proxy image's root: $out"
done
say "kube-proxy image: $(chroot "$c" /usr/sbin/iptables -V), $(chroot "$c" /usr/sbin/conntrack --version 2>&1 | head -n 1)"
rm -rf "$c"
oci_layer "$r" iptables

r=$W/kube-proxy
mkdir -p "$r/usr/local/bin"
cp "$KP" "$r/usr/local/bin/kube-proxy"
oci_layer "$r" kube-proxy

# coredns: the binary with its file capability, distroless's nonroot user, /tmp
r=$W/coredns
mkdir -p "$r"/{etc,tmp}
chmod 1777 "$r/tmp"
cp "$CD" "$r/coredns"
setcap cap_net_bind_service=+ep "$r/coredns" || die "setcap on coredns"
getcap "$r/coredns" | grep -q cap_net_bind_service || die "coredns lost its capability (no xattrs on $W?)"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$r/etc/group"
oci_layer "$r" coredns "${OCI_XATTR_TAR_ARGS[@]}"

# ----------------------------------------------------------------------------- images
stamp=$KEY
oci_image "kube-proxy:v$K8S_VERSION" "\"Entrypoint\":[\"/usr/local/bin/kube-proxy\"],\"Labels\":{\"podward.iptables\":\"$IPT\"}" base iptables kube-proxy
stamp+=$'\n'"kube-proxy:v$K8S_VERSION $OCI_CONFIG_SIZE $OCI_CONFIG_DIGEST"
oci_image "coredns/coredns:v$COREDNS_VERSION" '"User":"65532:65532","Entrypoint":["/coredns"],"ExposedPorts":{"53/tcp":{},"53/udp":{}}' coredns
stamp+=$'\n'"coredns/coredns:v$COREDNS_VERSION $OCI_CONFIG_SIZE $OCI_CONFIG_DIGEST"
echo "$stamp" >"$STAMP"
say "done: registry $REG"
result
