# oci-image.sh — sourced by hack/e2e-images.sh and hack/addons-images.sh: deterministic image layers
# and their push to the local registry of hack/cri-up.sh (fixed mtimes,
# owners and order: the same inputs always give the same digests; nothing is pushed when the
# registry already serves that exact config).
#
# Needs: W (a scratch directory of the caller's), REG (the registry, host:port), say and die, sha256sum,
# tar, curl, skopeo. Defines:
#   oci_layer DIR NAME [TAR-ARGS...]   DIR's contents as $W/NAME.tar (TAR-ARGS: e.g. the xattr options
#                                      of OCI_XATTR_TAR_ARGS for a file with capabilities)
#   oci_image REF CONFIG LAYER...      an image of the named layers with CONFIG (a JSON fragment of the
#                                      config's "config" object, without braces), pushed as $REG/REF
#                                      (containerd pulls registry.k8s.io/REF from it when cri-up.sh ran
#                                      with PODWARD_CRI_MIRRORS=registry.k8s.io); sets
#                                      OCI_CONFIG_SIZE and OCI_CONFIG_DIGEST (hex) to its config's
#   oci_registry_has NAME TAG SIZE DIGEST  the registry serves NAME:TAG with that config
#   OCI_XATTR_TAR_ARGS                 pax format with security.capability kept, and no
#                                      time or pid in the extended headers

OCI_XATTR_TAR_ARGS=(--format=posix --xattrs --xattrs-include=security.capability
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime)

oci_sha() { sha256sum "$1" | cut -d' ' -f1; }

oci_layer() { # DIR NAME [TAR-ARGS...]
  local dir=$1 name=$2
  shift 2
  local fmt=(--format=gnu)
  [ $# -eq 0 ] || fmt=("$@")
  (cd "$dir" && find . -mindepth 1 -printf '%P\n' | sort) >"$W/$name.list"
  tar --no-recursion --mtime=@0 --owner=0 --group=0 --numeric-owner "${fmt[@]}" -C "$dir" -T "$W/$name.list" -cf "$W/$name.tar"
}

# oci_registry_has NAME TAG CONFIG-SIZE CONFIG-DIGEST: the registry serves NAME:TAG with that config
oci_registry_has() {
  curl -fsS --max-time 5 -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REG/v2/$1/manifests/$2" 2>/dev/null | tr -d ' \n' |
    grep -qF "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"size\":$3,\"digest\":\"sha256:$4\"}"
}

oci_image() { # REF CONFIG LAYER...
  local ref=$1 cfg=$2 d diffs='' files='' l s c
  shift 2
  d=$W/img
  rm -rf "$d" && mkdir -p "$d"
  for l in "$@"; do
    s=$(oci_sha "$W/$l.tar")
    mkdir -p "$d/$s" && cp "$W/$l.tar" "$d/$s/layer.tar"
    diffs+="\"sha256:$s\"," files+="\"$s/layer.tar\","
  done
  printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"WorkingDir":"/",%s},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$(go env GOARCH 2>/dev/null || echo amd64)" "$cfg" "${diffs%,}" >"$d/config.json"
  c=$(oci_sha "$d/config.json")
  OCI_CONFIG_SIZE=$(stat -c %s "$d/config.json") OCI_CONFIG_DIGEST=$c
  if oci_registry_has "${ref%%:*}" "${ref#*:}" "$OCI_CONFIG_SIZE" "$c"; then
    say "registry has registry.k8s.io/$ref"
    return 0
  fi
  mv "$d/config.json" "$d/$c.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":[%s]}]\n' "$c" "$REG/$ref" "${files%,}" >"$d/manifest.json"
  (cd "$d" && tar --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -cf "$W/img.tar" -- *)
  TMPDIR=$W skopeo copy -q --insecure-policy --dest-tls-verify=false --format v2s2 "docker-archive:$W/img.tar" "docker://$REG/$ref" ||
    die "skopeo copy $ref to $REG"
  say "pushed registry.k8s.io/$ref"
}
