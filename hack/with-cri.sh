#!/usr/bin/env bash
# with-cri.sh CMD [ARGS...] - run CMD with the CRI test environment up:
# hack/cri-up.sh starts it (a private containerd with a docker.io mirror),
# CMD runs with PODWARD_CRI_ENDPOINT set and PODWARD_REQUIRE_CRI=1 (so the
# CRI tests fail rather than skip), and hack/cri-down.sh tears it down
# whatever CMD did. The exit status is CMD's.
#
# Not root: CMD runs without the environment and the CRI tests skip, with
# a message saying so.
#
# containerd pulls registry.k8s.io through the local registry too (PODWARD_CRI_MIRRORS, default
# registry.k8s.io here): test/cluster's add-ons test runs the images hack/addons-images.sh pushes
# there under those names.
#
# PODWARD_CRI_ENDPOINT already set: that endpoint is
# used as it is, nothing is started or torn down.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ -n "${PODWARD_CRI_ENDPOINT:-}" ]; then
  echo "with-cri: using PODWARD_CRI_ENDPOINT=$PODWARD_CRI_ENDPOINT" >&2
  export PODWARD_REQUIRE_CRI=1
  exec "$@"
fi
if [ "$(id -u)" != 0 ]; then
  echo "with-cri: not root: the CRI runtime tests are skipped (run as root, or set PODWARD_CRI_ENDPOINT)" >&2
  exec "$@"
fi

export PODWARD_CRI_MIRRORS=${PODWARD_CRI_MIRRORS-registry.k8s.io}
out=$("$here/cri-up.sh") || { echo "with-cri: hack/cri-up.sh failed" >&2; "$here/cri-down.sh" >&2 || true; exit 1; }
endpoint=$(printf '%s\n' "$out" | tail -n 1)
case "$endpoint" in
  CRI_ENDPOINT=*) endpoint=${endpoint#CRI_ENDPOINT=} ;;
  *) echo "with-cri: unexpected last line from cri-up.sh: $endpoint" >&2; exit 1 ;;
esac
trap '"$here/cri-down.sh" >&2 || echo "with-cri: hack/cri-down.sh reported leftovers" >&2' EXIT
export PODWARD_CRI_ENDPOINT=$endpoint PODWARD_REQUIRE_CRI=1
echo "with-cri: PODWARD_CRI_ENDPOINT=$endpoint" >&2
status=0
"$@" || status=$?
exit "$status"
