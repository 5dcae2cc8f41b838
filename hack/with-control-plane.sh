#!/usr/bin/env bash
# with-control-plane.sh CMD [ARGS...] - run CMD with a throw-away Kubernetes control plane up:
# hack/control-plane-up.sh starts it (etcd + kube-apiserver on loopback, built from the Go module
# proxy on first use and cached), CMD runs with PODWARD_CP_ENV (the control plane's env file,
# KUBECONFIG and friends) and PODWARD_REQUIRE_CLUSTER=1 (so the cluster tests fail rather than
# skip), and hack/control-plane-down.sh tears it down whatever CMD did. The exit status is CMD's.
#
# The control plane it starts has a metrics-server too (PODWARD_CP_METRICS_SERVER, default 1 as
# root, 0 otherwise: it adds an address to lo), and CMD runs with PODWARD_REQUIRE_METRICS_SERVER=1
# then (so the kubectl top test fails rather than skips without it).
#
# As root it is also reachable from pods (PODWARD_CP_POD_REACHABLE, default 1 as root on a host
# with a default route: the API
# server listens on every address of the host, the `kubernetes` Service has its endpoints), for
# test/cluster's add-ons test (kube-proxy, CoreDNS and an in-cluster client as pods).
#
# PODWARD_CP_ENV already set: that control plane is used as it is, nothing is started or stopped
# (the kubectl top test skips when it has no metrics-server).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ -n "${PODWARD_CP_ENV:-}" ]; then
  echo "with-control-plane: using PODWARD_CP_ENV=$PODWARD_CP_ENV" >&2
  export PODWARD_REQUIRE_CLUSTER=1
  exec "$@"
fi
base=${PODWARD_CP_BASE:-/tmp/podward-cp}
export PODWARD_CP_BASE=$base
if [ -z "${PODWARD_CP_METRICS_SERVER:-}" ]; then
  PODWARD_CP_METRICS_SERVER=0
  [ "$(id -u)" != 0 ] || PODWARD_CP_METRICS_SERVER=1
fi
export PODWARD_CP_METRICS_SERVER
if [ -z "${PODWARD_CP_POD_REACHABLE:-}" ]; then
  # (not on a host without a default route: control-plane-up.sh would find no address to advertise,
  # unless PODWARD_CP_POD_ADDRESS names one)
  PODWARD_CP_POD_REACHABLE=0
  if [ "$(id -u)" = 0 ] && { [ -n "${PODWARD_CP_POD_ADDRESS:-}" ] || ip -4 route get 203.0.113.1 2>/dev/null | grep -q ' src '; }; then
    PODWARD_CP_POD_REACHABLE=1
  fi
fi
export PODWARD_CP_POD_REACHABLE
if ! "$here/control-plane-up.sh" >/dev/null; then
  echo "with-control-plane: hack/control-plane-up.sh failed" >&2
  "$here/control-plane-down.sh" >&2 || true
  exit 1
fi
trap '"$here/control-plane-down.sh" >&2 || echo "with-control-plane: hack/control-plane-down.sh failed" >&2' EXIT
export PODWARD_CP_ENV=$base/env PODWARD_REQUIRE_CLUSTER=1
[ "$PODWARD_CP_METRICS_SERVER" != 1 ] || export PODWARD_REQUIRE_METRICS_SERVER=1
echo "with-control-plane: PODWARD_CP_ENV=$PODWARD_CP_ENV" >&2
status=0
"$@" || status=$?
exit "$status"
