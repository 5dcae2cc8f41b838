#!/usr/bin/env bash
# busybox-build.sh — build upstream BusyBox 1.37.0, the BusyBox of the real e2e busybox image
# (registry.k8s.io/e2e-test-images/busybox:1.37.0-2 is docker.io's busybox:1.37.0: the release
# tarball, `make defconfig`), for the stand-in hack/e2e-images.sh builds. Cached; a second run
# builds nothing.
#
# Why not Debian's busybox-static: Debian patches ash to drop, at start, the environment variables
# whose names are not shell names (debian/patches/revert-9c143ce52da11ec3d21a3491c3749841d3dc10f0
# .patch, in bookworm's 1.35 and trixie's 1.37 alike; only the installer's udeb turns it off), so
# `sh -c env` does not show `data-1=value-1`, which the ConfigMap and Secret "consumable via the
# environment" specs expect. Upstream's ash passes them to its children (since its commit 9c143ce).
# Debian's busybox-static also runs its own applets before PATH (FEATURE_SH_STANDALONE), the real
# image does not.
#
# The source: the orig tarball of Debian's busybox source package (apt-get source, from the suite
# PODWARD_BUSYBOX_SUITE, trixie by default: bookworm's is 1.35), which is upstream's release
# tarball unchanged: its sha256 is checked against upstream's (busybox.net's, the one
# docker-library's busybox:1.37.0 checks). Debian's patches are not applied. The apt lists are
# private to the cache (the host's apt configuration is not touched). Config: defconfig with
# CONFIG_STATIC=y (the image has no libc); SOURCE_DATE_EPOCH from the tarball, so the binary is the
# same at each build with the same compiler (two builds in different directories: the same sha256).
# Cold: 5 to 10 min on 2 shared cores.
#
# Usage: hack/busybox-build.sh       progress on stderr; on stdout BUSYBOX_BIN=<path>
# Needs: gcc, make, libc6-dev, bzip2, apt-get (installed here when missing; root).
# Env:   PODWARD_CP_CACHE (as hack/control-plane-up.sh), PODWARD_BUSYBOX_SUITE (trixie)
set -euo pipefail
umask 022
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
VERSION=1.37.0
SHA256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
SUITE=${PODWARD_BUSYBOX_SUITE:-trixie}
say() { echo "[busybox-build $(date -u +%T)] $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
[[ $SUITE =~ ^[a-z-]+$ ]] || die "bad PODWARD_BUSYBOX_SUITE '$SUITE'"
K8S_VERSION=1.0.0 # only for k8s-build.sh's CACHE
# shellcheck source=hack/lib/k8s-build.sh
. "$here/lib/k8s-build.sh"
# the recipe is the key: a change to the version or to the build (this script from its "the build"
# line on) rebuilds; one to the comments above does not
KEY=$({ echo "$VERSION $SHA256"; sed -n '/^# -* the build$/,$p' "$0"; } | sha256sum | cut -c1-12)
BIN=$CACHE/bin/busybox-$VERSION-$KEY
SRC=$CACHE/src/busybox-$VERSION
mkdir -p "$CACHE/bin" "$CACHE/src"
exec 8>"$CACHE/.busybox.lock"
flock -w 3600 8 || die "another build holds $CACHE/.busybox.lock"
if [ -x "$BIN" ]; then
  echo "BUSYBOX_BIN=$BIN"
  exit 0
fi

need=()
for c in gcc:gcc make:make bzip2:bzip2; do command -v "${c%%:*}" >/dev/null || need+=("${c#*:}"); done
# the static libc (libc6-dev): gcc names the libc.a it would link, or echoes the bare name
case $(gcc -print-file-name=libc.a 2>/dev/null) in /*) ;; *) need+=(libc6-dev) ;; esac
if [ ${#need[@]} -gt 0 ]; then
  say "apt-get install ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 ||
    die "apt-get install ${need[*]}"
fi

# ----------------------------------------------------------------------------- the source
TARBALL=$SRC/busybox_$VERSION.orig.tar.bz2
if [ "$(sha256sum "$TARBALL" 2>/dev/null | cut -d' ' -f1)" != "$SHA256" ]; then
  apt=$SRC/apt log=$SRC/apt.log
  rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/dl"
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n' \
    "$SUITE" >"$apt/sources.list"
  opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o APT::Sandbox::User=root)
  say "apt-get source busybox ($SUITE, a private apt list)"
  {
    apt-get "${opts[@]}" update -qq &&
      (cd "$apt/dl" && apt-get "${opts[@]}" source --download-only -qq busybox)
  } >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get source busybox from $SUITE (log: $log)"; }
  f=$apt/dl/busybox_$VERSION.orig.tar.bz2
  [ -f "$f" ] || die "$SUITE's busybox source package is not $VERSION: $(ls "$apt/dl")"
  [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$SHA256" ] || die "$f is not upstream's busybox-$VERSION.tar.bz2 (sha256)"
  mv -f "$f" "$TARBALL"
  rm -rf "$apt"
fi

# ----------------------------------------------------------------------------- the build
t=$SECONDS log=$SRC/build.log tree=$SRC/busybox-$VERSION
say "building busybox $VERSION (defconfig, static; cold 5 to 10 min)"
rm -rf "$tree"
tar -xjf "$TARBALL" -C "$SRC" || die "unpacking $TARBALL"
(
  cd "$tree"
  SOURCE_DATE_EPOCH=$(stat -c %Y .)
  export SOURCE_DATE_EPOCH
  make -s defconfig &&
    sed -i 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' .config &&
    make -s oldconfig </dev/null &&
    grep -qx 'CONFIG_STATIC=y' .config && grep -qx 'CONFIG_SH_IS_ASH=y' .config &&
    nice make -j"$(nproc)" busybox
) >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "building busybox (log: $log)"; }
# what the stand-in is for: ash passes on a variable whose name is not a shell name
out=$(env -i 'data-1=value-1' "$tree/busybox" sh -c env) || die "the built busybox does not run"
grep -qx 'data-1=value-1' <<<"$out" || die "the built busybox's sh drops data-1 from its environment"
cp "$tree/busybox" "$BIN.tmp.$$" && mv -f "$BIN.tmp.$$" "$BIN"
rm -rf "$tree"
say "built in $((SECONDS - t)) s: $BIN ($(sha256sum "$BIN" | cut -c1-16))"
echo "BUSYBOX_BIN=$BIN"
