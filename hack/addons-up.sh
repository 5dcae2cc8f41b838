#!/usr/bin/env bash
# addons-up.sh — run a test cluster's add-ons as pods: kube-proxy (a DaemonSet) and CoreDNS (a
# Deployment behind the Service kube-system/kube-dns), from hack/addons/*.yaml, with images built
# here by hack/addons-images.sh and pushed to the CRI environment's local registry.
#
# Usage (root; a control plane with its controllers and scheduler, and a CRI environment whose
# containerd pulls registry.k8s.io through the local registry):
#   PODWARD_CRI_MIRRORS=registry.k8s.io PODWARD_CRI_CNI=1 hack/with-cri.sh hack/with-control-plane.sh bash -c '
#     make build && set -a && . "$PODWARD_CP_ENV" && set +a &&
#     bin/podward node --runtime cri --cri-endpoint "$PODWARD_CRI_ENDPOINT" --kubeconfig "$KUBECONFIG" \
#       --node-name node-1 --node-ip 127.0.0.1 --client-ca-file "$CP_CA_FILE" --root /tmp/node-1 & ...
#     eval "$(hack/addons-up.sh)"      # DNS_IP=10.0.0.10 CLUSTER_DOMAIN=cluster.local on stdout
#     kubectl get pods -A -o wide'
#   hack/addons-down.sh                deletes them again and removes kube-proxy's iptables rules
# Progress goes to stderr; stdout has DNS_IP=, CLUSTER_DOMAIN=, KUBE_PROXY_IMAGE= and COREDNS_IMAGE=
# lines (the node's --cluster-dns and --cluster-domain, once it has them). Idempotent: the images
# are built and pushed only when missing (hack/addons-images.sh), the manifests are applied
# server-side (a second run changes nothing).
#
# Env (all optional):
#   PODWARD_CP_ENV                 the control plane's env file (hack/with-control-plane.sh sets it;
#                                  default $PODWARD_CP_BASE/env, /tmp/podward-cp/env): KUBECONFIG,
#                                  CP_APISERVER_URL, CP_SERVICE_CIDR, KUBECTL (KUBECONFIG and KUBECTL
#                                  in the environment win). Without one, KUBECONFIG must be set and
#                                  PODWARD_ADDONS_SERVICE_CIDR says the service CIDR.
#   PODWARD_CRI_BASE (/tmp/podward-cri)  the CRI environment (hack/cri-up.sh) that gets the images
#   PODWARD_ADDONS_APISERVER_URL   the API server as kube-proxy and CoreDNS reach it (default: the
#                                  control plane's CP_APISERVER_POD_URL when it has one, i.e. it was
#                                  started with PODWARD_CP_POD_REACHABLE=1, which CoreDNS on the pod
#                                  network needs; else the kubeconfig's server: the test control
#                                  plane's is on 127.0.0.1, which only host-network pods reach)
#   PODWARD_ADDONS_NODE_NAME       pin both to this node (nodeSelector kubernetes.io/hostname): the
#                                  test control plane is shared by tests running many nodes at once,
#                                  and a DaemonSet would otherwise put a kube-proxy on each of them
#   PODWARD_ADDONS_SERVICE_CIDR    default CP_SERVICE_CIDR; kube-dns gets its .10
#   PODWARD_ADDONS_DNS_IP          default: the service CIDR's network address + 10
#   PODWARD_ADDONS_CLUSTER_DOMAIN  cluster.local
#   PODWARD_ADDONS_CLUSTER_CIDR    kube-proxy's clusterCIDR; default: the CRI environment's CNI
#                                  bridge subnet when it has one (PODWARD_CRI_CNI=1), else none
#   PODWARD_ADDONS_KUBE_PROXY_HEALTHZ_PORT (10256), PODWARD_ADDONS_KUBE_PROXY_METRICS_PORT (10249)
#                                  on 127.0.0.1 of the host (kube-proxy is on the host network)
#   PODWARD_ADDONS_WAIT            seconds to wait for both to be rolled out (default 0: no wait)
#   and hack/addons-images.sh's: PODWARD_CP_K8S_VERSION, PODWARD_ADDONS_COREDNS_VERSION,
#   PODWARD_ADDONS_IPTABLES, PODWARD_CP_CACHE.
#
# Bridged traffic through iptables: a pod's packets to a ClusterIP whose endpoint is a pod on the same
# CNI bridge are DNATed by the host, and the reply, bridged straight back, must pass the host's
# conntrack to be un-NATed: the kernel's br_netfilter with net.bridge.bridge-nf-call-iptables=1, as
# kube-proxy (and kubeadm's preflight) require. This script loads br_netfilter when /proc/sys/net/bridge
# is missing (modprobe) and sets the sysctl to 1 when it is 0 (machine-wide; it is 1 on the test
# machines already, where br_netfilter is built into the kernel).
#
# One kube-proxy per machine: its iptables rules are the host's (the host network namespace), so
# two test clusters running it at once overwrite each other's service rules. test/cluster's
# TestClusterNetworking holds the lock /run/podward-addons.lock (flock) from its addons-up.sh to its
# addons-down.sh, so that two test runs on one machine take turns; take it too when running this by
# hand on a machine that runs the tests (flock /run/podward-addons.lock bash -c '...').
set -euo pipefail
umask 022
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "[addons-up $(date -u +%T)] $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
# Our stdout carries only the result lines.
exec 3>&1 1>&2

CP_ENV=${PODWARD_CP_ENV:-${PODWARD_CP_BASE:-/tmp/podward-cp}/env}
if [ -s "$CP_ENV" ]; then
  val() { sed -n "s/^$1=//p" "$CP_ENV" | tail -n 1; }
  : "${KUBECONFIG:=$(val KUBECONFIG)}"
  CP_URL=$(val CP_APISERVER_URL)
  CP_CIDR=$(val CP_SERVICE_CIDR)
  CP_POD_URL=$(val CP_APISERVER_POD_URL)
  KUBECTL=${KUBECTL:-$(val KUBECTL)}
  [ "$(val CP_CONTROLLERS)" != 0 ] ||
    die "the control plane of $CP_ENV runs no controller-manager and scheduler (PODWARD_CP_CONTROLLERS=0): nothing would create the DaemonSet's and the Deployment's pods"
else
  CP_URL='' CP_CIDR='' CP_POD_URL=''
fi
KUBECTL=${KUBECTL:-kubectl}
[ -n "${KUBECONFIG:-}" ] || die "no KUBECONFIG (and no control plane env file at $CP_ENV)"
export KUBECONFIG
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

URL=${PODWARD_ADDONS_APISERVER_URL:-$CP_POD_URL}
[ -n "$URL" ] || URL=$(k config view --minify -o 'jsonpath={.clusters[0].cluster.server}') || URL=
URL=${URL:-$CP_URL}
[[ $URL =~ ^https://[^[:space:]|]+$ ]] || die "no https URL of the API server (PODWARD_ADDONS_APISERVER_URL or $KUBECONFIG's server): '$URL'"
CIDR=${PODWARD_ADDONS_SERVICE_CIDR:-$CP_CIDR}
[[ $CIDR =~ ^([0-9]+\.[0-9]+\.[0-9]+)\.([0-9]+)/([0-9]+)$ ]] ||
  die "no service CIDR (CP_SERVICE_CIDR in $CP_ENV or PODWARD_ADDONS_SERVICE_CIDR): '$CIDR'"
DNS_IP=${PODWARD_ADDONS_DNS_IP:-${BASH_REMATCH[1]}.$((BASH_REMATCH[2] + 10))}
[ "${BASH_REMATCH[3]}" -le 28 ] || [ -n "${PODWARD_ADDONS_DNS_IP:-}" ] ||
  die "service CIDR $CIDR is too small for the .10 address: set PODWARD_ADDONS_DNS_IP"
DOMAIN=${PODWARD_ADDONS_CLUSTER_DOMAIN:-cluster.local}
[[ $DOMAIN =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "bad PODWARD_ADDONS_CLUSTER_DOMAIN '$DOMAIN'"
KP_HEALTHZ=${PODWARD_ADDONS_KUBE_PROXY_HEALTHZ_PORT:-10256}
KP_METRICS=${PODWARD_ADDONS_KUBE_PROXY_METRICS_PORT:-10249}
WAIT=${PODWARD_ADDONS_WAIT:-0}
NODE_NAME=${PODWARD_ADDONS_NODE_NAME:-}
[ -z "$NODE_NAME" ] || [[ $NODE_NAME =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]] || die "bad PODWARD_ADDONS_NODE_NAME '$NODE_NAME'"
[[ $WAIT =~ ^[0-9]+$ ]] || die "bad PODWARD_ADDONS_WAIT '$WAIT'"

CRI_BASE=${PODWARD_CRI_BASE:-/tmp/podward-cri}
export PODWARD_CRI_BASE=$CRI_BASE
[ -s "$CRI_BASE/env" ] || die "no CRI environment at $CRI_BASE (hack/cri-up.sh)"
grep -qF 'registry.mirrors."registry.k8s.io"' "$CRI_BASE/config.toml" 2>/dev/null ||
  die "the containerd of $CRI_BASE does not pull registry.k8s.io through the local registry: start it with PODWARD_CRI_MIRRORS=registry.k8s.io"
CLUSTER_CIDR=${PODWARD_ADDONS_CLUSTER_CIDR-}
if [ -z "${PODWARD_ADDONS_CLUSTER_CIDR+set}" ] && grep -qx 'PODWARD_CRI_CNI=1' "$CRI_BASE/env"; then
  CLUSTER_CIDR=$(sed -n 's/.*"subnet": *"\([0-9./]*\)".*/\1/p' "$CRI_BASE"/cni/net.d/*.conflist 2>/dev/null | sed -n 1p)
fi

NF=/proc/sys/net/bridge/bridge-nf-call-iptables
if [ ! -e "$NF" ] && command -v modprobe >/dev/null; then
  modprobe br_netfilter || die "modprobe br_netfilter (bridged pod traffic must pass iptables for ClusterIPs)"
fi
[ -e "$NF" ] || die "$NF missing: the kernel has no br_netfilter (pod -> ClusterIP -> pod on one bridge would not work)"
if [ "$(cat "$NF")" != 1 ]; then
  say "setting net.bridge.bridge-nf-call-iptables=1 (was $(cat "$NF"))"
  echo 1 >"$NF" || die "cannot set $NF to 1 (root?)"
fi

images=$("$here/addons-images.sh") || die "hack/addons-images.sh"
KUBE_PROXY_IMAGE=$(sed -n 's/^KUBE_PROXY_IMAGE=//p' <<<"$images")
COREDNS_IMAGE=$(sed -n 's/^COREDNS_IMAGE=//p' <<<"$images")
[ -n "$KUBE_PROXY_IMAGE" ] && [ -n "$COREDNS_IMAGE" ] || die "hack/addons-images.sh printed no image names"

render() { # FILE: its @VALUES@ filled in
  sed -e "s|@APISERVER_URL@|$URL|g" -e "s|@CLUSTER_CIDR@|$CLUSTER_CIDR|g" -e "s|@DNS_IP@|$DNS_IP|g" \
    -e "s|@CLUSTER_DOMAIN@|$DOMAIN|g" -e "s|@KUBE_PROXY_IMAGE@|$KUBE_PROXY_IMAGE|g" \
    -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|g" -e "s|@KUBE_PROXY_HEALTHZ_PORT@|$KP_HEALTHZ|g" \
    -e "s|@KUBE_PROXY_METRICS_PORT@|$KP_METRICS|g" "$1" | pin
}
pin() { # the pod templates' nodeSelector gets the node's name (PODWARD_ADDONS_NODE_NAME)
  if [ -n "$NODE_NAME" ]; then
    sed "s|^\( *\)kubernetes.io/os: linux\$|&\n\1kubernetes.io/hostname: $NODE_NAME|"
  else
    cat
  fi
}
out=$(render "$here/addons/kube-proxy.yaml" && echo --- && render "$here/addons/coredns.yaml") ||
  die "rendering hack/addons/*.yaml"
! grep -v '^[[:space:]]*#' <<<"$out" | grep '@[A-Z_]*@' || die "a value of hack/addons/*.yaml was left unfilled"
say "applying kube-proxy ($KUBE_PROXY_IMAGE) and CoreDNS ($COREDNS_IMAGE, kube-dns $DNS_IP, $DOMAIN); API $URL, clusterCIDR '${CLUSTER_CIDR}'${NODE_NAME:+, on node $NODE_NAME}"
k apply --server-side --force-conflicts --field-manager=addons-up -f - <<<"$out" >&2 ||
  die "kubectl apply of hack/addons/*.yaml"
if [ "$WAIT" -gt 0 ]; then
  k -n kube-system rollout status daemonset/kube-proxy "--timeout=${WAIT}s" >&2 || die "kube-proxy not rolled out within $WAIT s"
  k -n kube-system rollout status deployment/coredns "--timeout=${WAIT}s" >&2 || die "CoreDNS not rolled out within $WAIT s"
fi
printf 'DNS_IP=%s\nCLUSTER_DOMAIN=%s\nKUBE_PROXY_IMAGE=%s\nCOREDNS_IMAGE=%s\n' "$DNS_IP" "$DOMAIN" "$KUBE_PROXY_IMAGE" "$COREDNS_IMAGE" >&3
