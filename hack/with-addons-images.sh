#!/usr/bin/env bash
# with-addons-images.sh CMD [ARGS...] - build the cluster add-ons' images (hack/addons-images.sh:
# kube-proxy and CoreDNS, cached under the control plane's cache; a cold CoreDNS build takes minutes
# of both cores) and push them to the CRI environment's registry, then run CMD. `make
# test-integration` runs the tests under it, inside hack/with-cri.sh and hack/with-control-plane.sh,
# so that the build is done before any test runs: test/cluster's TestClusterNetworking, which runs the
# add-ons, then finds them in the registry (its own call of hack/addons-images.sh takes a second),
# and the other tests' deadlines do not run out while the build takes the machine's cores.
#
# Nothing is built when there is no CRI environment (PODWARD_CRI_ENDPOINT unset: not root, see
# hack/with-cri.sh): the CRI tests skip then. The CRI environment's base dir is the endpoint's
# (unix://BASE/containerd.sock), as the test derives it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ep=${PODWARD_CRI_ENDPOINT:-}
if [ -n "$ep" ] && [ "$(id -u)" = 0 ]; then
  sock=${ep#unix://}
  case $sock in
    /*/containerd.sock) ;;
    *) echo "with-addons-images: PODWARD_CRI_ENDPOINT=$ep is not a CRI environment of hack/cri-up.sh" >&2; exit 1 ;;
  esac
  t=$SECONDS
  PODWARD_CRI_BASE=${sock%/containerd.sock} "$here/addons-images.sh" >/dev/null ||
    { echo "with-addons-images: hack/addons-images.sh failed" >&2; exit 1; }
  echo "with-addons-images: the add-ons' images are in the registry ($((SECONDS - t)) s)" >&2
fi
exec "$@"
