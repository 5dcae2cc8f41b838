#!/usr/bin/env bash
# addons-down.sh — undo hack/addons-up.sh: delete the add-ons' objects (kube-proxy's DaemonSet,
# CoreDNS's Deployment and Service, their ConfigMaps, ServiceAccounts and RBAC) and remove the
# iptables rules kube-proxy left in the host's netfilter tables (kube-proxy --cleanup, with the
# binary hack/addons-images.sh cached: it runs the host's iptables). The images stay in the
# registry. Safe to run twice, or without a control plane (then only the rules are removed).
#
# Env: as hack/addons-up.sh (PODWARD_CP_ENV or KUBECONFIG; PODWARD_CP_K8S_VERSION, PODWARD_CP_CACHE).
# Run it while the node still runs, so that the pods are stopped before their objects go; the
# control plane going away (hack/with-control-plane.sh) leaves the rules behind otherwise.
set -euo pipefail
export LC_ALL=C
PATH=$PATH:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "[addons-down $(date -u +%T)] $*" >&2; }
K8S_VERSION=${PODWARD_CP_K8S_VERSION:-1.37.2}
CP_ENV=${PODWARD_CP_ENV:-${PODWARD_CP_BASE:-/tmp/podward-cp}/env}
if [ -s "$CP_ENV" ]; then
  : "${KUBECONFIG:=$(sed -n 's/^KUBECONFIG=//p' "$CP_ENV" | tail -n 1)}"
  KUBECTL=${KUBECTL:-$(sed -n 's/^KUBECTL=//p' "$CP_ENV" | tail -n 1)}
fi
KUBECTL=${KUBECTL:-kubectl}
status=0
if [ -n "${KUBECONFIG:-}" ]; then
  # the names of hack/addons/*.yaml (their @VALUES@ do not matter for a delete)
  if ! { sed 's/@[A-Z_]*@/x/g' "$here/addons/kube-proxy.yaml" && echo --- && sed 's/@[A-Z_]*@/x/g' "$here/addons/coredns.yaml"; } |
    "$KUBECTL" --kubeconfig "$KUBECONFIG" delete --ignore-not-found --cascade=foreground --wait=true --timeout=90s -f - >&2; then
    say "deleting the add-ons' objects failed"
    status=1
  fi
fi
# shellcheck source=hack/lib/k8s-build.sh
. "$here/lib/k8s-build.sh"
KP=$CACHE/bin/kube-proxy-v$K8S_VERSION
kube_chains() { # the number of KUBE-* chains in the host's tables, both backends
  local n=0 s
  for s in iptables-save ip6tables-save iptables-legacy-save ip6tables-legacy-save; do
    command -v "$s" >/dev/null || continue
    n=$((n + $("$s" 2>/dev/null | grep -c '^:KUBE-' || true)))
  done
  echo "$n"
}
if [ "$(id -u)" = 0 ] && [ -x "$KP" ] && [ "$(kube_chains)" -gt 0 ]; then
  say "removing kube-proxy's iptables rules ($KP --cleanup)"
  "$KP" --cleanup >/dev/null 2>&1 || { say "kube-proxy --cleanup failed"; status=1; }
  # --cleanup leaves an empty KUBE-FIREWALL chain and its jumps from INPUT and OUTPUT behind
  for t in iptables ip6tables; do
    rules=$("$t" -w 5 -S KUBE-FIREWALL 2>/dev/null) || continue
    [ "$rules" = "-N KUBE-FIREWALL" ] || continue
    "$t" -w 5 -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
    "$t" -w 5 -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
    "$t" -w 5 -X KUBE-FIREWALL 2>/dev/null || true
  done
  n=$(kube_chains)
  [ "$n" = 0 ] || { say "$n KUBE-* chains left in the host's tables (iptables-save | grep KUBE)"; status=1; }
fi
exit "$status"
