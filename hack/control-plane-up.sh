#!/usr/bin/env bash
# control-plane-up.sh — start a throw-away Kubernetes control plane on 127.0.0.1 for podward's
# cluster-mode tests and the node-conformance run: etcd, kube-apiserver with the ServiceAccount
# admission plugin on (as in every real cluster), kube-controller-manager and kube-scheduler.
#
# Usage:   hack/control-plane-up.sh            progress on stderr; the LAST line of stdout is
#                                              KUBECONFIG=$PODWARD_CP_BASE/kubeconfig
#          eval "$(hack/control-plane-up.sh)"  sets KUBECONFIG in the calling shell
#          set -a; . "$PODWARD_CP_BASE/env"    every value listed below (written by this script)
#          hack/control-plane-down.sh          stops it and removes its state (keeps the binaries)
# Idempotent: when this base dir's etcd and kube-apiserver are running with the same command
# lines and the apiserver is ready, they are reused (nothing is built or restarted, ~0.1 s).
# Anything else of ours (one daemon dead, different ports or versions) is stopped and the
# control plane is started afresh with an EMPTY etcd (certificates are kept).
# Needs: go, openssl, curl, ss, flock, setsid. Not root (except for the default cache dir).
#
# Env (all optional):
#   PODWARD_CP_BASE=/tmp/podward-cp     state: certs, kubeconfigs, etcd data, logs, pid files
#                                       (absolute path, no white space)
#   PODWARD_CP_CACHE=/var/cache/podward/control-plane   built binaries, named by version; kept by
#                                       control-plane-down.sh. Default falls back to
#                                       $HOME/.cache/podward/control-plane when /var/cache is not
#                                       writable. Go's own GOCACHE/GOMODCACHE are used as they are.
#   PODWARD_CP_ETCD_PORT, PODWARD_CP_ETCD_PEER_PORT, PODWARD_CP_APISERVER_PORT
#                                       ports on 127.0.0.1. Each one set must be free (or already
#                                       ours). Unset: the ports of the last start in this base dir
#                                       when still free, else random free ports in 20000-32767
#                                       (below the ephemeral range). The env file has the ports.
#   PODWARD_CP_K8S_VERSION=1.37.2       k8s.io/kubernetes v$X; staging modules at v0.<minor>.<patch>
#   PODWARD_CP_ETCD_VERSION=3.7.3       go.etcd.io/etcd/server/v3 v$X (latest v3.7 on the proxy)
#   PODWARD_CP_SERVICE_CIDR=10.0.0.0/24 --service-cluster-ip-range
#   PODWARD_CP_NODE_NAMES=""            names (space or comma separated) to mint node identities
#                                       for: $BASE/nodes/NAME.kubeconfig, client cert
#                                       CN=system:node:NAME O=system:nodes, restricted by the Node
#                                       authorizer. Also minted on a reuse run.
#   PODWARD_CP_KUBECTL=""               kubectl to advertise as KUBECTL: empty = `kubectl` on PATH,
#                                       or, when there is none, build kubectl v$K8S_VERSION into the
#                                       cache; "build" = always the built one; else a path.
#   PODWARD_CP_READY_TIMEOUT=120        seconds to wait for the apiserver's /readyz
#   PODWARD_CP_METRICS_SERVER=0         1: also run metrics-server (see below; needs root for the
#                                       address it adds to lo). 0: none is started; one this base dir
#                                       runs is kept (and listed in env) while the control plane is
#                                       reused, else its APIService and address are removed.
#                                       hack/with-control-plane.sh sets 1 as root.
#   PODWARD_CP_METRICS_SERVER_VERSION=0.8.0   sigs.k8s.io/metrics-server v$X
#   PODWARD_CP_CONTROLLERS=1            1: also run kube-controller-manager and kube-scheduler v$K8S_VERSION
#                                       (built into the cache with kube-apiserver, in one go build),
#                                       each with an identity of its own (system:kube-controller-manager,
#                                       system:kube-scheduler) and a secure port on 127.0.0.1: the
#                                       default ServiceAccount of each namespace, kube-root-ca.crt, the
#                                       service-account tokens (--service-account-private-key-file),
#                                       namespace deletion, garbage collection, node lifecycle (the
#                                       not-ready taints and evictions), Deployments, Jobs..., and pods
#                                       placed by the scheduler. 0: neither runs (the older, smaller
#                                       control plane: set spec.nodeName, no default ServiceAccount).
#   PODWARD_CP_SA_ADMISSION=1           1: the ServiceAccount admission plugin is on, as in every real
#                                       cluster: each pod gets its namespace's `default` ServiceAccount
#                                       and, unless automountServiceAccountToken is false, the projected
#                                       volume kube-api-access-* (token, kube-root-ca.crt, namespace).
#                                       Needs PODWARD_CP_CONTROLLERS=1 (the ServiceAccount must exist).
#                                       0: --disable-admission-plugins=ServiceAccount.
#   PODWARD_CP_KCM_PORT, PODWARD_CP_SCHEDULER_PORT   their secure ports (picked like the others)
#   PODWARD_CP_POD_REACHABLE=0          1: the API server is reachable from pods, as in a real cluster:
#                                       it listens on every address of the host (--bind-address=0.0.0.0,
#                                       still https://127.0.0.1:PORT for the host's clients), advertises
#                                       PODWARD_CP_POD_ADDRESS, and keeps the `kubernetes` Service's
#                                       endpoints at that address (the lease endpoint reconciler,
#                                       kube-apiserver's default), so a pod reaches it at
#                                       https://kubernetes.default.svc (10.0.0.1:443 through kube-proxy's
#                                       rules: hack/addons-up.sh) with its service-account token, and at
#                                       CP_APISERVER_POD_URL directly (the pods' traffic to the host's
#                                       address is routed by the host: no NAT needed). The serving cert
#                                       names that address too. 0: loopback only, the `kubernetes`
#                                       Service has no endpoints (--endpoint-reconciler-type=none).
#                                       hack/with-control-plane.sh sets 1 as root.
#   PODWARD_CP_POD_ADDRESS              the address advertised with PODWARD_CP_POD_REACHABLE=1: an address
#                                       of the host's, not loopback (default: the source address of the
#                                       host's default route, `ip -4 route get 203.0.113.1`)
#   PODWARD_CP_METRICS_PORT             its port (as the ports above; picked like them)
#
# Aggregation layer (always on: the flags cost nothing): the apiserver has a front-proxy CA of its
# own (--requestheader-client-ca-file, allowed name front-proxy-client) and presents
# --proxy-client-cert-file to the API servers behind APIServices, and routes to an APIService's
# Service through its EndpointSlices (--enable-aggregator-routing: there is no kube-proxy), whose
# addresses the apiserver's validation refuses on loopback.
#
# metrics-server (PODWARD_CP_METRICS_SERVER=1): built from the Go module proxy into the cache (cold:
# ~560 CPU-seconds and ~1.2 GB RAM, some 5 min on 2 idle cores; 16 min with the module downloads on
# this machine under a load of 12-18; a relink from Go's build cache: 10 s), run as a host process on https://198.19.A.B:PORT (an address of its own added to lo,
# in 198.18.0.0/15, RFC 2544, derived from its port; removed by control-plane-down.sh), as the
# user podward-metrics-server (client cert, the RBAC of metrics-server's own manifests: nodes/metrics,
# pods and nodes, system:auth-delegator, extension-apiserver-authentication-reader), registered as
# APIService v1beta1.metrics.k8s.io -> headless Service kube-system/metrics-server -> an
# EndpointSlice to its address. It scrapes /metrics/resource every 10 s (--metric-resolution's
# minimum) of the nodes labelled podward-cp/metrics-server=scrape only (so that it never loads the
# other tests' nodes), at their InternalIP and status port, verifying their serving certificate
# against CP_CA_FILE (a node needs a --tls-cert-file signed by the cluster CA for its address, not
# podward's self-signed default). `kubectl top` works once it has two scrapes of a pod (~20 s).
#
# $BASE/env (KEY=value lines, no quotes; values contain no white space):
#   KUBECONFIG                admin kubeconfig (user podward-admin, O=system:masters; certs embedded)
#   CP_APISERVER_URL          https://127.0.0.1:PORT
#   CP_CA_FILE                the one cluster CA: signed the apiserver's serving cert, the admin and
#                             node client certs, and the apiserver's kubelet-client cert
#   CP_CA_KEY_FILE            the CA's key, for tests that mint client certs of their own users
#   CP_KUBELET_CLIENT_CERT_FILE  the client cert the apiserver presents when it calls a node's
#                             kubelet port (logs, exec, attach, port-forward, proxy)
#   CP_KUBELET_CLIENT_CN      its CN (kube-apiserver-kubelet-client, no group, as kubeadm mints it;
#                             base dirs whose certs predate this have O=system:masters), allowed the
#                             kubelet API by RBAC as in kubeadm: ClusterRoleBinding
#                             kubeadm:apiserver-kubelet-client to ClusterRole system:kubelet-api-admin
#                             (made on every run), which a node that authorizes its kubelet port
#                             with SubjectAccessReviews (the kubelet's, podward's default) asks about
#   CP_ADMIN_CERT_FILE, CP_ADMIN_KEY_FILE, CP_ADMIN_TOKEN   the admin identity as PEM files / as a
#                             bearer token (--token-auth-file), for curl and hand-made clients
#   CP_NODE_KUBECONFIG        kubeconfig for podward nodes in tests: the admin one (see below)
#   CP_NODE_KUBECONFIG_DIR    $BASE/nodes: NAME.kubeconfig for each PODWARD_CP_NODE_NAMES entry
#   CP_ETCD_URL, CP_ETCD_PORT, CP_ETCD_PEER_PORT, CP_APISERVER_PORT, CP_SERVICE_CIDR
#   CP_K8S_VERSION, CP_ETCD_VERSION   v1.37.2 / v3.7.3 (what the server reports)
#   CP_POD_REACHABLE          1 or 0: PODWARD_CP_POD_REACHABLE's value
#   CP_APISERVER_POD_URL      https://ADDRESS:PORT, the API server as pods reach it (with
#                             CP_POD_REACHABLE=1 only); CP_APISERVER_POD_ADDRESS its address
#   CP_ETCD_LOG, CP_APISERVER_LOG     daemon logs
#   KUBECTL                   path of a kubectl (/usr/bin/kubectl v1.32 warns about the version skew
#                             with a 1.37 server but works)
#   PODWARD_CP_BASE
#   with a metrics-server running (see above), also:
#   CP_METRICS_SERVER_URL     https://198.19.A.B:PORT (its serving cert, signed by CP_CA_FILE, names
#                             metrics-server.kube-system.svc only: curl --resolve)
#   CP_METRICS_SERVER_VERSION v0.8.0
#   CP_METRICS_SERVER_LOG     its log
#   CP_METRICS_NODE_LABEL     podward-cp/metrics-server=scrape: the label a node needs to be scraped
#   CP_METRICS_RESOLUTION     10s (its --metric-resolution: a scrape every 10 s)
#
# Node identity: tests may simply run nodes with the admin kubeconfig (CP_NODE_KUBECONFIG): the
# apiserver then treats the node agent as cluster-admin, which hides authorization mistakes. For a
# kubelet-like identity, set PODWARD_CP_NODE_NAMES and use $BASE/nodes/NAME.kubeconfig: the apiserver
# runs --authorization-mode=Node,RBAC, so such a node may only do what the Node authorizer grants a
# kubelet, and NodeRestriction admission keeps it to its own Node object and its own pods. Seen with
# v1.37.2: it may create/get/update its own Node (not others': "only its own Node object"), PATCH
# or PUT nodes/NAME/status (but not GET nodes/status, so `kubectl patch --subresource=status` fails
# while client-go's Patch/UpdateStatus work), list/watch nodes only with the field selector
# metadata.name=NAME and pods only with spec.nodeName=NAME, get only pods bound to it, patch their
# status, delete only its own pods, create/update its Lease in kube-node-lease.
#
# Calls from the apiserver to a node (kubectl logs/exec/attach/port-forward): it dials the node's
# status.addresses (InternalIP, then Hostname, then ExternalIP) at port
# status.daemonEndpoints.kubeletEndpoint.Port (0 means 10250) over TLS, presenting
# CP_KUBELET_CLIENT_CERT_FILE (verifiable with CP_CA_FILE). There is no --kubelet-certificate-authority,
# so it does NOT verify the node's serving certificate: a self-signed one is fine. An InternalIP of
# 127.0.0.1 works for logs/exec/port-forward; only the nodes/NAME/proxy subresource refuses loopback
# addresses ("address not allowed").
#
# Controllers (PODWARD_CP_CONTROLLERS=1, the default): the scheduler places pods without
# spec.nodeName on a Ready, untainted node (the node lifecycle controller keeps the not-ready taint
# on a node until it reports Ready); the controller-manager makes each namespace's `default`
# ServiceAccount and kube-root-ca.crt, deletes namespaces, collects garbage, evicts pods from a node
# whose lease is not renewed (after the not-ready taint's 300 s toleration) and deletes pods bound
# to a node that no longer exists. With PODWARD_CP_SA_ADMISSION=1 (the default) every pod of a
# namespace waits for that namespace's ServiceAccount and gets the kube-api-access-* projected
# volume unless it says automountServiceAccountToken: false. A pod bound to a node and deleted with
# a grace period stays Terminating until someone deletes it with grace 0 (the node agent's job).
# Delete test nodes in teardown. Keys are ECDSA P-256 (the service-account tokens are ES256).
#
# Layout: $BASE/{env,kubeconfig,nodes/,pki/,etcd/,apiserver-certs/,metrics-server/,logs/,run/} and
# $CACHE/bin/{etcd-vX,kube-apiserver-vX,kube-controller-manager-vX,kube-scheduler-vX,kubectl-vX,
# metrics-server-vX}, $CACHE/src/ (scratch build
# modules).
set -euo pipefail
umask 022
export LC_ALL=C
PATH=$PATH:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin
# Our stdout carries only the final KUBECONFIG= line: everything else goes to stderr.
exec 3>&1 1>&2

BASE=${PODWARD_CP_BASE:-/tmp/podward-cp}
K8S_VERSION=${PODWARD_CP_K8S_VERSION:-1.37.2}
ETCDVERSION=${PODWARD_CP_ETCD_VERSION:-3.7.3}
SERVICE_CIDR=${PODWARD_CP_SERVICE_CIDR:-10.0.0.0/24}
READY_TIMEOUT=${PODWARD_CP_READY_TIMEOUT:-120}
KUBECTL_WANT=${PODWARD_CP_KUBECTL:-}
NODE_NAMES=${PODWARD_CP_NODE_NAMES:-}
METRICS_WANT=${PODWARD_CP_METRICS_SERVER:-0}
CONTROLLERS=${PODWARD_CP_CONTROLLERS:-1}
POD_REACHABLE=${PODWARD_CP_POD_REACHABLE:-0}
SA_ADMISSION=${PODWARD_CP_SA_ADMISSION:-$CONTROLLERS}
MS_VERSION=${PODWARD_CP_METRICS_SERVER_VERSION:-0.8.0}
KUBELET_CLIENT_CN=kube-apiserver-kubelet-client
# metrics-server's identity, the label it scrapes nodes by, its resolution (the minimum it takes)
MS_USER=podward-metrics-server
MS_NODE_LABEL=podward-cp/metrics-server=scrape
MS_RESOLUTION=10s

T0=$(date +%s%N)
say() { local ms=$((($(date +%s%N) - T0) / 1000000)); printf '[cp-up %3d.%02ds] %s\n' $((ms / 1000)) $((ms % 1000 / 10)) "$*" >&2; }
SHOW_LOGS=0
die() {
  say "FAILED: $*"
  local f
  if [ "$SHOW_LOGS" = 1 ]; then
    for f in "$BASE/logs/etcd.log" "$BASE/logs/kube-apiserver.log"; do
      [ -s "$f" ] && { echo "--- last lines of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  exit 1
}

# ----------------------------------------------------------------------------- 0. preconditions
case $BASE in
  *[[:space:]]*) die "PODWARD_CP_BASE must not contain white space: '$BASE'" ;;
  / | /*/.. | /*/../* | /*/. | /*/./*) die "PODWARD_CP_BASE must be a plain absolute directory: '$BASE'" ;;
  /?*) BASE=${BASE%/} ;;
  *) die "PODWARD_CP_BASE must be an absolute path: '$BASE'" ;;
esac
[[ $K8S_VERSION =~ ^1\.[0-9]+\.[0-9]+$ ]] || die "bad PODWARD_CP_K8S_VERSION '$K8S_VERSION' (want 1.MINOR.PATCH)"
[[ $ETCDVERSION =~ ^3\.[0-9]+\.[0-9]+$ ]] || die "bad PODWARD_CP_ETCD_VERSION '$ETCDVERSION' (want 3.MINOR.PATCH)"
[[ $SERVICE_CIDR =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || die "bad PODWARD_CP_SERVICE_CIDR '$SERVICE_CIDR'"
[[ $READY_TIMEOUT =~ ^[0-9]+$ ]] || die "bad PODWARD_CP_READY_TIMEOUT '$READY_TIMEOUT'"
[[ $METRICS_WANT =~ ^[01]$ ]] || die "bad PODWARD_CP_METRICS_SERVER '$METRICS_WANT' (want 0 or 1)"
[[ $CONTROLLERS =~ ^[01]$ ]] || die "bad PODWARD_CP_CONTROLLERS '$CONTROLLERS' (want 0 or 1)"
[[ $POD_REACHABLE =~ ^[01]$ ]] || die "bad PODWARD_CP_POD_REACHABLE '$POD_REACHABLE' (want 0 or 1)"
POD_ADDR=
if [ "$POD_REACHABLE" = 1 ]; then
  POD_ADDR=${PODWARD_CP_POD_ADDRESS:-}
  if [ -z "$POD_ADDR" ]; then
    command -v ip >/dev/null || die "ip (iproute2) not found: PODWARD_CP_POD_REACHABLE=1 looks up the host's address (or set PODWARD_CP_POD_ADDRESS)"
    POD_ADDR=$(ip -4 route get 203.0.113.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -n 1)
  fi
  [[ $POD_ADDR =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] && [[ $POD_ADDR != 127.* ]] ||
    die "PODWARD_CP_POD_REACHABLE=1: no address of the host's for pods to reach the API server at ('$POD_ADDR'; the host has no default route?): set PODWARD_CP_POD_ADDRESS"
fi
[[ $SA_ADMISSION =~ ^[01]$ ]] || die "bad PODWARD_CP_SA_ADMISSION '$SA_ADMISSION' (want 0 or 1)"
[ "$SA_ADMISSION" = 0 ] || [ "$CONTROLLERS" = 1 ] ||
  die "PODWARD_CP_SA_ADMISSION=1 needs PODWARD_CP_CONTROLLERS=1: without the controller-manager no namespace has its default ServiceAccount, and admission refuses every pod"
[[ $MS_VERSION =~ ^0\.[0-9]+\.[0-9]+$ ]] || die "bad PODWARD_CP_METRICS_SERVER_VERSION '$MS_VERSION' (want 0.MINOR.PATCH)"
NODE_NAMES=${NODE_NAMES//,/ }
for n in $NODE_NAMES; do
  [[ $n =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]] || die "bad node name '$n' in PODWARD_CP_NODE_NAMES"
done
for b in openssl curl ss flock setsid base64; do
  command -v "$b" >/dev/null || die "$b not found"
done
if [ "$METRICS_WANT" = 1 ]; then
  command -v ip >/dev/null || die "ip (iproute2) not found: PODWARD_CP_METRICS_SERVER=1 adds metrics-server's address to lo"
fi
# etcd reads every ETCD_* environment variable as a flag (ETCD_VERSION=x makes it exit): drop them.
# (So none of this script's own variables starts with ETCD_.)
while read -r v; do unset "$v"; done < <(compgen -e | grep '^ETCD_' || true)

# CACHE (PODWARD_CP_CACHE or its default), the scratch module and the build flags
# shellcheck source=hack/lib/k8s-build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/k8s-build.sh"
case $CACHE in /?*) ;; *) die "PODWARD_CP_CACHE must be an absolute path: '$CACHE'" ;; esac
mkdir -p "$CACHE/bin" "$CACHE/src" || die "cannot create cache dir $CACHE (set PODWARD_CP_CACHE)"
ETCDBIN=$CACHE/bin/etcd-v$ETCDVERSION
APISERVER_BIN=$CACHE/bin/kube-apiserver-v$K8S_VERSION
KCM_BIN=$CACHE/bin/kube-controller-manager-v$K8S_VERSION
SCHED_BIN=$CACHE/bin/kube-scheduler-v$K8S_VERSION
MSBIN=$CACHE/bin/metrics-server-v$MS_VERSION

if [ -d "$BASE" ] && [ ! -e "$BASE/.podward-cp" ] && [ -n "$(ls -A "$BASE")" ]; then
  die "$BASE exists, is not empty and was not made by this script (no .podward-cp marker)"
fi
mkdir -p "$BASE"
touch "$BASE/.podward-cp"
# One up or down at a time per base dir. fds 8 and 9 are closed for the daemons.
exec 9>"$BASE/.lock"
flock -w 900 9 || die "another control-plane-up/down holds $BASE/.lock"
mkdir -p "$BASE"/{pki,nodes,logs,run}
PKI=$BASE/pki
KC=$BASE/kubeconfig

# ----------------------------------------------------------------------------- helpers
# alive PID: some thread is not a zombie. Our daemons are reparented to PID 1, which reaps late
# here, and a Go process's leader thread can be Z while its other threads still hold sockets.
alive() {
  local st s
  for st in /proc/"$1"/task/*/stat; do
    read -r s 2>/dev/null <"$st" || continue
    s=${s##*) }
    [ "${s%% *}" != Z ] && return 0
  done
  return 1
}
# pids_with_arg ARG: alive pids one of whose argv elements is exactly ARG (a path under $BASE, so
# only this base dir's daemons match; never a program name).
pids_with_arg() {
  local d a args
  for d in /proc/[0-9]*; do
    mapfile -d '' -t args 2>/dev/null <"$d/cmdline" || continue
    for a in "${args[@]}"; do
      if [ "$a" = "$1" ]; then alive "${d#/proc/}" && echo "${d#/proc/}"; break; fi
    done
  done
  return 0
}
# same_argv PID FILE: the process's command line is exactly the NUL-separated argv in FILE
# (through a pipe: `cmp -s` trusts st_size, which is 0 for /proc files)
same_argv() { [ -r "/proc/$1/cmdline" ] && [ -s "$2" ] && cmp -s "$2" <(cat "/proc/$1/cmdline" 2>/dev/null); }
any_alive() {
  local p
  for p in "$@"; do alive "$p" && return 0; done
  return 1
}
stop_pids() { # NAME PID...: TERM, KILL after 10 s, then wait until every thread is gone
  local name=$1
  shift
  [ $# -gt 0 ] || return 0
  say "stopping $name (pid $*)"
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 1 200); do any_alive "$@" || return 0; sleep 0.05; done
  kill -KILL "$@" 2>/dev/null || true
  for _ in $(seq 1 200); do any_alive "$@" || return 0; sleep 0.05; done
  die "$name (pid $*) does not go away"
}
port_busy() { [ -n "$(ss -Hltn "( sport = :$1 )" 2>/dev/null)" ]; }
valid_port() { [[ $1 =~ ^[0-9]{1,5}$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]; }
curl_admin() { curl -fsS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"; }
etcd_ok() { curl -fsS --max-time 2 "http://127.0.0.1:$ETCDPORT/health" 2>/dev/null | grep '"health":"true"' >/dev/null; }
api_ok() { [ "$(curl_admin "https://127.0.0.1:$APISERVER_PORT/readyz" 2>/dev/null)" = ok ]; }

ETCDMARK=--data-dir=$BASE/etcd
API_MARK=--cert-dir=$BASE/apiserver-certs
KCM_MARK=--cert-dir=$BASE/kcm-certs
SCHED_MARK=--cert-dir=$BASE/scheduler-certs

# ----------------------------------------------------------------------------- 1. certificates
# One CA signs everything; kept across restarts so kubeconfigs and CA files stay valid.
# ECDSA P-256 keys: generating five RSA keys takes seconds on a busy 2-core machine.
EC=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
sign() { # NAME SUBJECT EXTENSIONS [CA]: key + CSR + cert signed by CA (default: ca), 10 years
  local ca=${4:-ca}
  openssl req -new "${EC[@]}" -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" -subj "$2" 2>/dev/null &&
    printf '%b' "$3" >"$PKI/$1.ext" &&
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
      -days 3650 -sha256 -extfile "$PKI/$1.ext" -out "$PKI/$1.crt.tmp" 2>/dev/null &&
    rm -f "$PKI/$1.csr" "$PKI/$1.ext" && mv "$PKI/$1.crt.tmp" "$PKI/$1.crt"
}
self_ca() { # NAME CN: a self-signed CA, 10 years
  openssl req -x509 "${EC[@]}" -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.crt" -days 3650 -sha256 \
    -subj "/CN=$2" \
    -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature' \
    2>/dev/null
}
CLIENT_EXT='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n'
# the serving cert: the first service IP as a SAN, and the pod address (PODWARD_CP_POD_REACHABLE=1)
sign_apiserver() {
  local svc_ip extra=
  svc_ip=$(awk -F'[./]' '{print $1"."$2"."$3"."$4+1}' <<<"$SERVICE_CIDR")
  [ -z "$POD_ADDR" ] || extra=",IP:$POD_ADDR"
  sign apiserver /CN=kube-apiserver "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:$svc_ip$extra,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n"
}
# .complete records the service CIDR: the serving cert has the first service IP as a SAN
if [ ! -s "$PKI/ca.crt" ] || [ "$(cat "$PKI/.complete" 2>/dev/null)" != "$SERVICE_CIDR" ]; then
  say "generating certificates in $PKI"
  rm -rf "${PKI:?}"/* "$BASE/nodes"/*
  self_ca ca podward-control-plane-ca || die "openssl: CA"
  sign_apiserver || die "openssl: apiserver serving cert"
  sign admin "/O=system:masters/CN=podward-admin" "$CLIENT_EXT" || die "openssl: admin cert"
  sign kubelet-client "/CN=$KUBELET_CLIENT_CN" "$CLIENT_EXT" || die "openssl: kubelet-client cert"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/sa.key" 2>/dev/null || die "openssl: service-account key"
  openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null || die "openssl: service-account public key"
  printf '%s,podward-admin-token,podward-admin-token,system:masters\n' "$(openssl rand -hex 24)" >"$PKI/tokens.csv"
  chmod 600 "$PKI"/*.key "$PKI/tokens.csv"
  echo "$SERVICE_CIDR" >"$PKI/.complete"
fi
if [ -n "$POD_ADDR" ] && ! openssl x509 -noout -ext subjectAltName -in "$PKI/apiserver.crt" 2>/dev/null | grep -q "IP Address:$POD_ADDR\(,\|\$\)"; then
  say "signing the API server's serving cert again, for $POD_ADDR too"
  sign_apiserver || die "openssl: apiserver serving cert"
fi
# The aggregation layer's front proxy: a CA of its own, as kubeadm has (the apiserver trusts the
# identity headers of a client it signed, for the allowed name alone). Base dirs made before it
# get it added.
if [ ! -s "$PKI/front-proxy-client.crt" ]; then
  say "generating the front-proxy certificates in $PKI"
  self_ca front-proxy-ca podward-front-proxy-ca || die "openssl: front-proxy CA"
  sign front-proxy-client /CN=front-proxy-client "$CLIENT_EXT" front-proxy-ca || die "openssl: front-proxy client cert"
  chmod 600 "$PKI"/front-proxy-*.key
fi
if [ "$METRICS_WANT" = 1 ] && [ ! -s "$PKI/metrics-server.crt" ]; then
  say "generating metrics-server's certificates in $PKI"
  # the aggregator checks the name of the APIService's Service, SERVICE.NAMESPACE.svc
  sign metrics-server /CN=metrics-server "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:metrics-server.kube-system.svc,DNS:metrics-server.kube-system.svc.cluster.local\n" ||
    die "openssl: metrics-server serving cert"
  sign metrics-server-client "/CN=$MS_USER" "$CLIENT_EXT" || die "openssl: metrics-server client cert"
  chmod 600 "$PKI"/metrics-server*.key
fi
if [ "$CONTROLLERS" = 1 ] && [ ! -s "$PKI/kube-scheduler.crt" ]; then
  say "generating the controller-manager's and the scheduler's client certificates in $PKI"
  # the names RBAC's bootstrap policy binds (system:kube-controller-manager, system:kube-scheduler)
  sign kube-controller-manager /CN=system:kube-controller-manager "$CLIENT_EXT" || die "openssl: controller-manager cert"
  sign kube-scheduler /CN=system:kube-scheduler "$CLIENT_EXT" || die "openssl: scheduler cert"
  chmod 600 "$PKI"/kube-controller-manager.key "$PKI"/kube-scheduler.key
fi
TOKEN=$(cut -d, -f1 "$PKI/tokens.csv")

# ----------------------------------------------------------------------------- 2. ports, argv
saved() { sed -n "s/^$1=//p" "$BASE/run/ports" 2>/dev/null || true; }
pick_port() { # VAR OVERRIDE: override, else the saved port when free, else a random free one
  local var=$1 want=$2 p taken=" ${ETCDPORT:-} ${ETCDPEERPORT:-} ${APISERVER_PORT:-} ${METRICS_PORT:-} ${KCM_PORT:-} ${SCHEDULER_PORT:-} "
  if [ -n "$want" ]; then
    valid_port "$want" || die "bad port '$want' for $var"
    printf -v "$var" %s "$want"
    return
  fi
  p=$(saved "$var")
  if [ -n "$p" ] && ! port_busy "$p" && [[ $taken != *" $p "* ]]; then
    printf -v "$var" %s "$p"
    return
  fi
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 12768))
    if ! port_busy "$p" && [[ $taken != *" $p "* ]]; then
      printf -v "$var" %s "$p"
      return
    fi
  done
  die "no free port found for $var"
}
write_argv() { # FILE ARGS...: the exact argv, NUL-separated, as /proc/PID/cmdline shows it
  local f=$1
  shift
  printf '%s\0' "$@" >"$f"
}
# ServiceAccount admission on (the default, as in any real cluster) or off
SA_ADMISSION_ARGS=()
[ "$SA_ADMISSION" = 1 ] || SA_ADMISSION_ARGS=(--disable-admission-plugins=ServiceAccount)
# where the API server listens and what it advertises (PODWARD_CP_POD_REACHABLE)
API_ADDR_ARGS=(--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --endpoint-reconciler-type=none)
[ -z "$POD_ADDR" ] || API_ADDR_ARGS=(--bind-address=0.0.0.0 "--advertise-address=$POD_ADDR" --endpoint-reconciler-type=lease)
make_argvs() {
  ETCDARGV=("$ETCDBIN" --name=podward-cp "$ETCDMARK"
    "--listen-client-urls=http://127.0.0.1:$ETCDPORT" "--advertise-client-urls=http://127.0.0.1:$ETCDPORT"
    "--listen-peer-urls=http://127.0.0.1:$ETCDPEERPORT" "--initial-advertise-peer-urls=http://127.0.0.1:$ETCDPEERPORT"
    "--initial-cluster=podward-cp=http://127.0.0.1:$ETCDPEERPORT" --initial-cluster-state=new
    --unsafe-no-fsync --heartbeat-interval=20 --election-timeout=200
    --quota-backend-bytes=2147483648 --snapshot-count=10000 --log-level=warn)
  # shellcheck disable=SC2054 # the commas are inside flag values
  API_ARGV=("$APISERVER_BIN" "--etcd-servers=http://127.0.0.1:$ETCDPORT"
    "${API_ADDR_ARGS[@]}" "--secure-port=$APISERVER_PORT" "$API_MARK"
    "--service-cluster-ip-range=$SERVICE_CIDR"
    "--tls-cert-file=$PKI/apiserver.crt" "--tls-private-key-file=$PKI/apiserver.key"
    "--client-ca-file=$PKI/ca.crt" "--token-auth-file=$PKI/tokens.csv"
    --service-account-issuer=https://kubernetes.default.svc.cluster.local
    "--service-account-key-file=$PKI/sa.pub" "--service-account-signing-key-file=$PKI/sa.key"
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction
    "${SA_ADMISSION_ARGS[@]}" --allow-privileged=true
    "--kubelet-client-certificate=$PKI/kubelet-client.crt" "--kubelet-client-key=$PKI/kubelet-client.key"
    --kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP
    "--requestheader-client-ca-file=$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group
    --requestheader-extra-headers-prefix=X-Remote-Extra-
    "--proxy-client-cert-file=$PKI/front-proxy-client.crt" "--proxy-client-key-file=$PKI/front-proxy-client.key"
    --enable-aggregator-routing=true
    --profiling=false --v=1)
}
# metrics-server: its address on lo is derived from its port (unique among running base dirs)
MS_MARK=--cert-dir=$BASE/metrics-server
MS_KC=$BASE/metrics-server/kubeconfig
make_ms_argv() {
  MS_ADDR=198.19.$((METRICS_PORT / 256)).$((METRICS_PORT % 256))
  # shellcheck disable=SC2054 # the commas are inside flag values
  MS_ARGV=("$MSBIN" "$MS_MARK" "--bind-address=$MS_ADDR" "--secure-port=$METRICS_PORT"
    "--tls-cert-file=$PKI/metrics-server.crt" "--tls-private-key-file=$PKI/metrics-server.key"
    "--kubeconfig=$MS_KC" "--authentication-kubeconfig=$MS_KC" "--authorization-kubeconfig=$MS_KC"
    "--kubelet-certificate-authority=$PKI/ca.crt" --kubelet-use-node-status-port
    --kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP
    "--node-selector=$MS_NODE_LABEL" "--metric-resolution=$MS_RESOLUTION" --kubelet-request-timeout=5s
    --profiling=false --v=1)
}

# ----------------------------------------------------------------------------- 3. reuse?
# metrics-server's port and address of the last start (the ports file is rewritten on a restart)
MS_SAVED_PORT=$(saved METRICS_PORT)
MS_SAVED_ADDR=$(saved METRICS_ADDR)
ETCDPORT=${PODWARD_CP_ETCD_PORT:-$(saved ETCDPORT)}
ETCDPEERPORT=${PODWARD_CP_ETCD_PEER_PORT:-$(saved ETCDPEERPORT)}
APISERVER_PORT=${PODWARD_CP_APISERVER_PORT:-$(saved APISERVER_PORT)}
REUSED=0
if [ -n "$ETCDPORT" ] && [ -n "$ETCDPEERPORT" ] && [ -n "$APISERVER_PORT" ]; then
  make_argvs
  write_argv "$BASE/run/etcd.argv.want" "${ETCDARGV[@]}"
  write_argv "$BASE/run/kube-apiserver.argv.want" "${API_ARGV[@]}"
  ep=$(cat "$BASE/run/etcd.pid" 2>/dev/null) || ep=
  ap=$(cat "$BASE/run/kube-apiserver.pid" 2>/dev/null) || ap=
  if [ -n "$ep" ] && [ -n "$ap" ] && alive "$ep" && alive "$ap" &&
    same_argv "$ep" "$BASE/run/etcd.argv.want" && same_argv "$ap" "$BASE/run/kube-apiserver.argv.want"; then
    for _ in $(seq 1 100); do
      api_ok && { REUSED=1; break; }
      if ! alive "$ap" || ! alive "$ep"; then break; fi
      sleep 0.1
    done
    if [ "$REUSED" = 1 ]; then
      say "reusing the running control plane: etcd pid $ep, kube-apiserver pid $ap on https://127.0.0.1:$APISERVER_PORT"
    else
      say "our kube-apiserver (pid $ap) is running but not ready: restarting everything"
    fi
  fi
fi

KUBECTL_BIN=$CACHE/bin/kubectl-v$K8S_VERSION
case $KUBECTL_WANT in
  build) KUBECTL=$KUBECTL_BIN ;;
  '') KUBECTL=$(command -v kubectl || echo "$KUBECTL_BIN") ;;
  *) [ -x "$KUBECTL_WANT" ] || die "PODWARD_CP_KUBECTL=$KUBECTL_WANT is not executable"; KUBECTL=$KUBECTL_WANT ;;
esac

# ----------------------------------------------------------------------------- 4. build
# Everything comes from the Go module proxy. Same flags every time (-trimpath, CGO_ENABLED=0), so
# Go's default build cache makes a rebuild fast. Binaries are named by version.

build_etcd() {
  [ -x "$ETCDBIN" ] && return 0
  local d=$CACHE/src/etcd-v$ETCDVERSION t=$SECONDS
  say "building etcd v$ETCDVERSION from the Go module proxy (cold: ~1 min)"
  rm -rf "$d" && mkdir -p "$d"
  # server/v3 is a main package at its module root, but its go.mod has replace directives, so
  # `go install ...@v` refuses it: build it from a scratch module.
  (
    cd "$d" && go mod init podward.local/cpbuild/etcd >/dev/null 2>&1 &&
      go get "go.etcd.io/etcd/server/v3@v$ETCDVERSION" &&
      go build -mod=mod -trimpath -ldflags '-s -w' -o "$ETCDBIN.tmp.$$" go.etcd.io/etcd/server/v3
  ) >"$CACHE/src/etcd-v$ETCDVERSION.log" 2>&1 || { tail -n 20 "$CACHE/src/etcd-v$ETCDVERSION.log" >&2; die "building etcd"; }
  mv -f "$ETCDBIN.tmp.$$" "$ETCDBIN"
  say "etcd built in $((SECONDS - t)) s: $ETCDBIN"
}
build_k8s() { # CMD...: build k8s.io/kubernetes/cmd/CMD into $CACHE/bin/CMD-v$K8S_VERSION, for each
  # CMD not there yet, in ONE go build: the packages they share (most of them) are compiled once,
  # and the compiles of two binaries fill both cores.
  local c want=() pkgs=() t=$SECONDS log out=$CACHE/src/out.$$
  for c in "$@"; do [ -x "$CACHE/bin/$c-v$K8S_VERSION" ] || want+=("$c"); done
  [ ${#want[@]} -gt 0 ] || return 0
  for c in "${want[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  log=$CACHE/src/$(IFS=+ && echo "${want[*]}")-v$K8S_VERSION.log
  say "building ${want[*]} v$K8S_VERSION from the Go module proxy (cold: kube-apiserver alone ~5 min and ~2.5 GB RAM on 2 cores, with the controller-manager and the scheduler ~10 min)"
  rm -rf "$out"
  (
    k8s_module && (cd "$K8S_SRC" && go get "${pkgs[@]/%/@v$K8S_VERSION}") &&
      mkdir -p "$out" && k8s_go build -ldflags "$K8S_LDFLAGS" -o "$out/" "${pkgs[@]}"
  ) >"$log" 2>&1 || { rm -rf "$out"; tail -n 20 "$log" >&2; die "building ${want[*]} (log: $log)"; }
  for c in "${want[@]}"; do mv -f "$out/$c" "$CACHE/bin/$c-v$K8S_VERSION"; done
  rm -rf "$out"
  say "${want[*]} built in $((SECONDS - t)) s: $CACHE/bin"
}
build_metrics_server() {
  [ -x "$MSBIN" ] && return 0
  local d=$CACHE/src/metrics-server-v$MS_VERSION t=$SECONDS log=$CACHE/src/metrics-server-v$MS_VERSION.log
  local ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=v$MS_VERSION"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitMajor=0 -X k8s.io/client-go/pkg/version.gitMinor=$(cut -d. -f2 <<<"$MS_VERSION")"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitTreeState=clean"
  say "building metrics-server v$MS_VERSION from the Go module proxy (cold: ~5 min and ~1.2 GB RAM on 2 cores)"
  rm -rf "$d" && mkdir -p "$d"
  # a main package without replace directives: `go install PKG@V` builds it with its own go.mod
  (
    cd "$d" && GOBIN=$d go install -trimpath -ldflags "$ldflags" "sigs.k8s.io/metrics-server/cmd/metrics-server@v$MS_VERSION" &&
      mv -f "$d/metrics-server" "$MSBIN.tmp.$$"
  ) >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "building metrics-server (log: $log)"; }
  mv -f "$MSBIN.tmp.$$" "$MSBIN"
  say "metrics-server built in $((SECONDS - t)) s: $MSBIN"
}
K8S_CMDS=(kube-apiserver)
[ "$CONTROLLERS" = 0 ] || K8S_CMDS+=(kube-controller-manager kube-scheduler)
[ "$KUBECTL" != "$KUBECTL_BIN" ] || K8S_CMDS+=(kubectl)
missing=0
[ -x "$ETCDBIN" ] || missing=1
for c in "${K8S_CMDS[@]}"; do [ -x "$CACHE/bin/$c-v$K8S_VERSION" ] || missing=1; done
if [ "$missing" = 1 ]; then
  command -v go >/dev/null || die "go not found (needed to build the binaries into $CACHE/bin)"
  # one build at a time per cache dir (concurrent ups with other base dirs, hack/e2e-build.sh)
  exec 8>"$CACHE/.lock"
  flock -w 3600 8 || die "another build holds $CACHE/.lock"
  build_etcd
  build_k8s "${K8S_CMDS[@]}"
  exec 8>&-
fi
if [ "$METRICS_WANT" = 1 ] && [ ! -x "$MSBIN" ]; then
  command -v go >/dev/null || die "go not found (needed to build metrics-server into $CACHE/bin)"
  exec 8>"$CACHE/.lock"
  flock -w 1800 8 || die "another control-plane-up holds $CACHE/.lock"
  build_metrics_server
  exec 8>&-
fi

# ----------------------------------------------------------------------------- 5. start
# If this run fails after starting a daemon, stop what it started (by pid) before exiting.
STARTED=()
on_exit() {
  local rc=$?
  if [ "$rc" != 0 ] && [ ${#STARTED[@]} -gt 0 ]; then
    say "stopping what this run started (pid ${STARTED[*]}); logs are in $BASE/logs"
    kill -KILL "${STARTED[@]}" 2>/dev/null || true
    for _ in $(seq 1 200); do any_alive "${STARTED[@]}" || break; sleep 0.05; done
    rm -f "$BASE/run"/*.pid
  fi
}
trap on_exit EXIT
start_daemon() { # NAME ARGV...: start in its own session, holding none of our fds
  local name=$1 p
  shift
  write_argv "$BASE/run/$name.argv" "$@"
  SHOW_LOGS=1
  # a script has no job control, so the background child is no process-group leader and setsid
  # execs in place: $! is the daemon itself.
  setsid "$@" </dev/null >"$BASE/logs/$name.log" 2>&1 3>&- 8>&- 9>&- &
  p=$!
  disown "$p" # no "Killed" job report from bash if the EXIT trap has to stop it
  STARTED+=("$p")
  echo "$p" >"$BASE/run/$name.pid"
  for _ in $(seq 1 100); do
    same_argv "$p" "$BASE/run/$name.argv" && return 0
    alive "$p" || break
    sleep 0.02
  done
  return 0 # the health checks below tell whether it runs
}
if [ "$REUSED" = 0 ]; then
  # a port asked for that another program holds: fail before stopping anything of ours
  for v in ETCD_PORT ETCD_PEER_PORT APISERVER_PORT; do
    want=$(printenv "PODWARD_CP_$v" || true)
    [ -n "$want" ] || continue
    valid_port "$want" || die "bad PODWARD_CP_$v '$want'"
    case " $(saved ETCDPORT) $(saved ETCDPEERPORT) $(saved APISERVER_PORT) " in *" $want "*) continue ;; esac
    ! port_busy "$want" || die "PODWARD_CP_$v=$want: the port is in use by another program (ss -ltnp 'sport = :$want')"
  done
  # stop whatever of ours still runs (pid files, then any process with our base-dir arguments)
  mp=$(pids_with_arg "$MS_MARK")
  # shellcheck disable=SC2046 # word splitting of the pid lists is intended
  stop_pids kube-scheduler $(pids_with_arg "$SCHED_MARK")
  # shellcheck disable=SC2046
  stop_pids kube-controller-manager $(pids_with_arg "$KCM_MARK")
  ap=$(pids_with_arg "$API_MARK")
  ep=$(pids_with_arg "$ETCDMARK")
  # shellcheck disable=SC2086 # word splitting of pid lists is intended
  stop_pids metrics-server $mp
  # shellcheck disable=SC2086
  stop_pids kube-apiserver $ap
  # shellcheck disable=SC2086
  stop_pids etcd $ep
  rm -f "$BASE/run"/*.pid
  AUTO_PORTS=1
  [ -z "${PODWARD_CP_ETCD_PORT:-}${PODWARD_CP_ETCD_PEER_PORT:-}${PODWARD_CP_APISERVER_PORT:-}" ] || AUTO_PORTS=0
  for attempt in 1 2 3; do
    ETCDPORT='' ETCDPEERPORT='' APISERVER_PORT=''
    # the ports of a daemon stopped just now may take a moment to be released
    for _ in $(seq 1 50); do
      busy=0
      for p in "${PODWARD_CP_ETCD_PORT:-}" "${PODWARD_CP_ETCD_PEER_PORT:-}" "${PODWARD_CP_APISERVER_PORT:-}"; do
        [ -n "$p" ] && port_busy "$p" && busy=1
      done
      [ "$busy" = 0 ] && break
      sleep 0.1
    done
    [ "$busy" = 0 ] || die "port(s) ${PODWARD_CP_ETCD_PORT:-} ${PODWARD_CP_ETCD_PEER_PORT:-} ${PODWARD_CP_APISERVER_PORT:-} in use by another program (ss -ltnp)"
    pick_port ETCDPORT "${PODWARD_CP_ETCD_PORT:-}"
    pick_port ETCDPEERPORT "${PODWARD_CP_ETCD_PEER_PORT:-}"
    pick_port APISERVER_PORT "${PODWARD_CP_APISERVER_PORT:-}"
    make_argvs
    printf 'ETCDPORT=%s\nETCDPEERPORT=%s\nAPISERVER_PORT=%s\n' "$ETCDPORT" "$ETCDPEERPORT" "$APISERVER_PORT" >"$BASE/run/ports"

    rm -rf "$BASE/etcd" "$BASE/apiserver-certs"
    say "starting etcd v$ETCDVERSION on 127.0.0.1:$ETCDPORT (peer $ETCDPEERPORT)"
    start_daemon etcd "${ETCDARGV[@]}"
    ok=0
    for _ in $(seq 1 300); do
      etcd_ok && { ok=1; break; }
      alive "$(cat "$BASE/run/etcd.pid")" || break
      sleep 0.05
    done
    if [ "$ok" = 0 ]; then
      if [ "$AUTO_PORTS" = 1 ] && [ "$attempt" -lt 3 ] && grep -q 'address already in use' "$BASE/logs/etcd.log"; then
        say "etcd: a port was taken meanwhile, picking others"
        stop_pids etcd "$(cat "$BASE/run/etcd.pid")"
        rm -f "$BASE/run/ports"
        continue
      fi
      die "etcd did not become healthy on 127.0.0.1:$ETCDPORT"
    fi
    say "etcd ready (pid $(cat "$BASE/run/etcd.pid"))"

    say "starting kube-apiserver v$K8S_VERSION on https://127.0.0.1:$APISERVER_PORT"
    start_daemon kube-apiserver "${API_ARGV[@]}"
    ok=0
    deadline=$((SECONDS + READY_TIMEOUT))
    while [ "$SECONDS" -le "$deadline" ]; do
      api_ok && { ok=1; break; }
      alive "$(cat "$BASE/run/kube-apiserver.pid")" || break
      sleep 0.1
    done
    if [ "$ok" = 0 ]; then
      if [ "$AUTO_PORTS" = 1 ] && [ "$attempt" -lt 3 ] && grep -q 'address already in use' "$BASE/logs/kube-apiserver.log"; then
        say "kube-apiserver: its port was taken meanwhile, picking others"
        stop_pids kube-apiserver "$(cat "$BASE/run/kube-apiserver.pid")"
        stop_pids etcd "$(cat "$BASE/run/etcd.pid")"
        rm -f "$BASE/run/ports"
        continue
      fi
      die "kube-apiserver did not become ready within $READY_TIMEOUT s (https://127.0.0.1:$APISERVER_PORT/readyz)"
    fi
    break
  done
  # /readyz can be ok a moment before the bootstrap controller has made the system namespaces
  for _ in $(seq 1 100); do
    curl_admin -o /dev/null "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/default" 2>/dev/null &&
      curl_admin -o /dev/null "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/kube-node-lease" 2>/dev/null && break
    sleep 0.1
  done
  say "kube-apiserver ready (pid $(cat "$BASE/run/kube-apiserver.pid"))"
fi

# ----------------------------------------------------------------------------- 6. kubeconfigs, env
API_URL=https://127.0.0.1:$APISERVER_PORT
kubeconfig() { # FILE USER CERT KEY
  cat >"$1.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: podward-cp
  cluster:
    server: $API_URL
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$3")
    client-key-data: $(base64 -w0 <"$4")
contexts:
- name: $2@podward-cp
  context:
    cluster: podward-cp
    user: $2
current-context: $2@podward-cp
EOF
  chmod 600 "$1.tmp"
  mv -f "$1.tmp" "$1"
}
kubeconfig "$KC" podward-admin "$PKI/admin.crt" "$PKI/admin.key"
for n in $NODE_NAMES; do
  if [ ! -s "$PKI/node-$n.crt" ]; then
    sign "node-$n" "/O=system:nodes/CN=system:node:$n" "$CLIENT_EXT" || die "openssl: node cert for $n"
    chmod 600 "$PKI/node-$n.key"
    say "minted node identity system:node:$n: $BASE/nodes/$n.kubeconfig"
  fi
  kubeconfig "$BASE/nodes/$n.kubeconfig" "system:node:$n" "$PKI/node-$n.crt" "$PKI/node-$n.key"
done
# As kubeadm does (AllowAPIServerToAccessKubeletAPI): the apiserver's kubelet client may use the
# whole kubelet API. Idempotent: an existing binding (409) is left as it is.
crb='{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",'
crb+='"metadata":{"name":"kubeadm:apiserver-kubelet-client"},'
crb+='"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:kubelet-api-admin"},'
crb+='"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"'$KUBELET_CLIENT_CN'"}]}'
code=$(curl -sS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" -o /dev/null -w '%{http_code}' \
  -X POST -H 'Content-Type: application/json' --data "$crb" "$API_URL/apis/rbac.authorization.k8s.io/v1/clusterrolebindings") ||
  die "creating the ClusterRoleBinding kubeadm:apiserver-kubelet-client"
case $code in
  201) say "bound $KUBELET_CLIENT_CN to ClusterRole system:kubelet-api-admin" ;;
  409) ;;
  *) die "creating the ClusterRoleBinding kubeadm:apiserver-kubelet-client: HTTP $code" ;;
esac

# ----------------------------------------------------------------------------- 6b. controller-manager, scheduler
# Reused when they run with the same command lines against a reused apiserver and are healthy;
# else (re)started. Ports KCM_PORT and SCHEDULER_PORT in $BASE/run/ports.
KCM_KC=$BASE/kcm.kubeconfig
SCHED_KC=$BASE/scheduler.kubeconfig
make_controller_argvs() {
  # shellcheck disable=SC2054 # the commas are inside flag values
  KCM_ARGV=("$KCM_BIN" "$KCM_MARK" --bind-address=127.0.0.1 "--secure-port=$KCM_PORT"
    "--kubeconfig=$KCM_KC" "--authentication-kubeconfig=$KCM_KC" "--authorization-kubeconfig=$KCM_KC"
    --leader-elect=false --use-service-account-credentials=true
    "--service-account-private-key-file=$PKI/sa.key" "--root-ca-file=$PKI/ca.crt"
    "--service-cluster-ip-range=$SERVICE_CIDR" --allocate-node-cidrs=false
    "--cluster-signing-cert-file=$PKI/ca.crt" "--cluster-signing-key-file=$PKI/ca.key"
    --profiling=false --v=1)
  SCHED_ARGV=("$SCHED_BIN" "$SCHED_MARK" --bind-address=127.0.0.1 "--secure-port=$SCHEDULER_PORT"
    "--kubeconfig=$SCHED_KC" "--authentication-kubeconfig=$SCHED_KC" "--authorization-kubeconfig=$SCHED_KC"
    --leader-elect=false --profiling=false --v=1)
}
healthy() { curl -fsS --max-time 2 -k "https://127.0.0.1:$1/healthz" 2>/dev/null | grep -qx ok; }
CONTROLLERS_RUNNING=0
KCM_PORT=$(saved KCM_PORT)
SCHEDULER_PORT=$(saved SCHEDULER_PORT)
if [ "$CONTROLLERS" = 1 ] && [ "$REUSED" = 1 ] && [ -n "$KCM_PORT" ] && [ -n "$SCHEDULER_PORT" ]; then
  make_controller_argvs
  write_argv "$BASE/run/kube-controller-manager.argv.want" "${KCM_ARGV[@]}"
  write_argv "$BASE/run/kube-scheduler.argv.want" "${SCHED_ARGV[@]}"
  kp=$(cat "$BASE/run/kube-controller-manager.pid" 2>/dev/null) || kp=
  sp=$(cat "$BASE/run/kube-scheduler.pid" 2>/dev/null) || sp=
  if [ -n "$kp" ] && [ -n "$sp" ] && alive "$kp" && alive "$sp" &&
    same_argv "$kp" "$BASE/run/kube-controller-manager.argv.want" && same_argv "$sp" "$BASE/run/kube-scheduler.argv.want" &&
    healthy "$KCM_PORT" && healthy "$SCHEDULER_PORT"; then
    CONTROLLERS_RUNNING=1
    say "reusing kube-controller-manager (pid $kp) and kube-scheduler (pid $sp)"
  fi
fi
if [ "$CONTROLLERS_RUNNING" = 0 ]; then
  # shellcheck disable=SC2046 # word splitting of the pid lists is intended
  stop_pids kube-scheduler $(pids_with_arg "$SCHED_MARK")
  # shellcheck disable=SC2046
  stop_pids kube-controller-manager $(pids_with_arg "$KCM_MARK")
  rm -f "$BASE/run/kube-controller-manager.pid" "$BASE/run/kube-scheduler.pid"
  sed -i '/^KCM_PORT=/d; /^SCHEDULER_PORT=/d' "$BASE/run/ports"
fi
if [ "$CONTROLLERS" = 1 ] && [ "$CONTROLLERS_RUNNING" = 0 ]; then
  KCM_PORT='' SCHEDULER_PORT=''
  pick_port KCM_PORT "${PODWARD_CP_KCM_PORT:-}"
  pick_port SCHEDULER_PORT "${PODWARD_CP_SCHEDULER_PORT:-}"
  printf 'KCM_PORT=%s\nSCHEDULER_PORT=%s\n' "$KCM_PORT" "$SCHEDULER_PORT" >>"$BASE/run/ports"
  make_controller_argvs
  kubeconfig "$KCM_KC" system:kube-controller-manager "$PKI/kube-controller-manager.crt" "$PKI/kube-controller-manager.key"
  kubeconfig "$SCHED_KC" system:kube-scheduler "$PKI/kube-scheduler.crt" "$PKI/kube-scheduler.key"
  mkdir -p "$BASE/kcm-certs" "$BASE/scheduler-certs"
  say "starting kube-controller-manager (127.0.0.1:$KCM_PORT) and kube-scheduler (127.0.0.1:$SCHEDULER_PORT)"
  start_daemon kube-controller-manager "${KCM_ARGV[@]}"
  start_daemon kube-scheduler "${SCHED_ARGV[@]}"
  ok=0
  deadline=$((SECONDS + READY_TIMEOUT))
  while [ "$SECONDS" -le "$deadline" ]; do
    healthy "$KCM_PORT" && healthy "$SCHEDULER_PORT" && { ok=1; break; }
    alive "$(cat "$BASE/run/kube-controller-manager.pid")" && alive "$(cat "$BASE/run/kube-scheduler.pid")" || break
    sleep 0.2
  done
  if [ "$ok" = 0 ]; then
    tail -n 20 "$BASE/logs/kube-controller-manager.log" "$BASE/logs/kube-scheduler.log" >&2
    die "kube-controller-manager or kube-scheduler not healthy within $READY_TIMEOUT s"
  fi
  CONTROLLERS_RUNNING=1
  say "kube-controller-manager (pid $(cat "$BASE/run/kube-controller-manager.pid")) and kube-scheduler (pid $(cat "$BASE/run/kube-scheduler.pid")) healthy"
fi
if [ "$CONTROLLERS_RUNNING" = 1 ]; then
  # Pods of the default namespace are admitted once its ServiceAccount exists, and the
  # controller-manager works once it does (made within a second or two of its start).
  ok=0
  for _ in $(seq 1 "$((READY_TIMEOUT * 5))"); do
    curl_admin -o /dev/null "$API_URL/api/v1/namespaces/default/serviceaccounts/default" 2>/dev/null &&
      curl_admin -o /dev/null "$API_URL/api/v1/namespaces/default/configmaps/kube-root-ca.crt" 2>/dev/null && { ok=1; break; }
    sleep 0.2
  done
  [ "$ok" = 1 ] || die "the controller-manager made no default ServiceAccount and kube-root-ca.crt in namespace default within $READY_TIMEOUT s (log: $BASE/logs/kube-controller-manager.log)"
fi

# ----------------------------------------------------------------------------- 7. metrics-server
# ms_live: it serves, with its certificate for the Service's name; ms_served: the apiserver's
# aggregator reaches it as v1beta1.metrics.k8s.io (the admin is allowed by the delegated authz).
ms_live() {
  curl -fsS --max-time 2 --cacert "$PKI/ca.crt" --resolve "metrics-server.kube-system.svc:$METRICS_PORT:$MS_ADDR" \
    -o /dev/null "https://metrics-server.kube-system.svc:$METRICS_PORT/livez" 2>/dev/null
}
ms_served() { curl_admin -o /dev/null "$API_URL/apis/metrics.k8s.io/v1beta1/nodes" 2>/dev/null; }
has_lo_addr() { ip -o -4 addr show dev lo 2>/dev/null | grep -qF " $1/32 "; }
# ms_objects: its RBAC (as metrics-server's own manifests, for a user instead of a ServiceAccount),
# the headless Service without selector, the EndpointSlice to its address, the APIService.
ms_objects() {
  cat <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server"}
rules:
- {apiGroups: [""], resources: [nodes/metrics], verbs: [get]}
- {apiGroups: [""], resources: [pods, nodes], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:metrics-server"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:metrics-server"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: $MS_USER}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "metrics-server:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: $MS_USER}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: metrics-server-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: $MS_USER}]
---
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  clusterIP: None
  ports: [{name: https, port: 443, protocol: TCP, targetPort: $METRICS_PORT}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server, endpointslice.kubernetes.io/managed-by: control-plane-up.podward}
addressType: IPv4
endpoints: [{addresses: ["$MS_ADDR"], conditions: {ready: true}}]
ports: [{name: https, port: $METRICS_PORT, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {name: metrics-server, namespace: kube-system, port: 443}
  caBundle: $(base64 -w0 <"$PKI/ca.crt")
EOF
}
MS_RUNNING=0
METRICS_PORT=${PODWARD_CP_METRICS_PORT:-$MS_SAVED_PORT}
if [ "$REUSED" = 1 ] && [ -n "$METRICS_PORT" ] && [ -x "$MSBIN" ]; then
  make_ms_argv
  write_argv "$BASE/run/metrics-server.argv.want" "${MS_ARGV[@]}"
  mp=$(cat "$BASE/run/metrics-server.pid" 2>/dev/null) || mp=
  if [ -n "$mp" ] && alive "$mp" && same_argv "$mp" "$BASE/run/metrics-server.argv.want" && ms_live && ms_served; then
    MS_RUNNING=1
    say "reusing metrics-server (pid $mp) on https://$MS_ADDR:$METRICS_PORT"
  fi
fi
# (a base dir that never ran one has no METRICS_PORT saved: nothing to look for)
if [ "$MS_RUNNING" = 0 ] && [ -n "$MS_SAVED_PORT" ]; then
  # one of another command line, or one that served the control plane restarted above
  # shellcheck disable=SC2046 # word splitting of the pid list is intended
  stop_pids metrics-server $(pids_with_arg "$MS_MARK")
  rm -f "$BASE/run/metrics-server.pid"
  # an APIService nobody serves makes every kubectl discovery complain ("unable to handle the request")
  [ "$REUSED" = 0 ] || curl_admin -o /dev/null -X DELETE "$API_URL/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io" 2>/dev/null || true
  if [ "$METRICS_WANT" = 0 ]; then
    if [ -n "$MS_SAVED_ADDR" ] && command -v ip >/dev/null && has_lo_addr "$MS_SAVED_ADDR"; then
      ip addr del "$MS_SAVED_ADDR/32" dev lo 2>/dev/null || true
    fi
    sed -i '/^METRICS_/d' "$BASE/run/ports"
  fi
fi
if [ "$MS_RUNNING" = 0 ] && [ "$METRICS_WANT" = 1 ]; then
  METRICS_PORT=
  want=${PODWARD_CP_METRICS_PORT:-}
  if [ -n "$want" ]; then
    valid_port "$want" || die "bad PODWARD_CP_METRICS_PORT '$want'"
    for _ in $(seq 1 50); do port_busy "$want" || break; sleep 0.1; done
    ! port_busy "$want" || die "PODWARD_CP_METRICS_PORT=$want: the port is in use by another program (ss -ltnp 'sport = :$want')"
  elif [ -n "$MS_SAVED_PORT" ] && ! port_busy "$MS_SAVED_PORT" &&
    [[ " $ETCDPORT $ETCDPEERPORT $APISERVER_PORT " != *" $MS_SAVED_PORT "* ]]; then
    want=$MS_SAVED_PORT
  fi
  pick_port METRICS_PORT "$want"
  make_ms_argv
  if [ -n "$MS_SAVED_ADDR" ] && [ "$MS_SAVED_ADDR" != "$MS_ADDR" ] && has_lo_addr "$MS_SAVED_ADDR"; then
    ip addr del "$MS_SAVED_ADDR/32" dev lo 2>/dev/null || true
  fi
  if ! has_lo_addr "$MS_ADDR"; then
    ip addr add "$MS_ADDR/32" dev lo || die "adding metrics-server's address $MS_ADDR to lo (needs root)"
  fi
  sed -i '/^METRICS_/d' "$BASE/run/ports"
  printf 'METRICS_PORT=%s\nMETRICS_ADDR=%s\n' "$METRICS_PORT" "$MS_ADDR" >>"$BASE/run/ports"
  mkdir -p "$BASE/metrics-server"
  kubeconfig "$MS_KC" "$MS_USER" "$PKI/metrics-server-client.crt" "$PKI/metrics-server-client.key"
  ms_objects | "$KUBECTL" --kubeconfig "$KC" apply --server-side --force-conflicts --field-manager=control-plane-up -f - >/dev/null ||
    die "creating metrics-server's RBAC, Service, EndpointSlice and APIService"
  say "starting metrics-server v$MS_VERSION on https://$MS_ADDR:$METRICS_PORT"
  start_daemon metrics-server "${MS_ARGV[@]}"
  ok=0
  deadline=$((SECONDS + READY_TIMEOUT))
  while [ "$SECONDS" -le "$deadline" ]; do
    ms_live && ms_served && { ok=1; break; }
    alive "$(cat "$BASE/run/metrics-server.pid")" || break
    sleep 0.2
  done
  if [ "$ok" = 0 ]; then
    tail -n 20 "$BASE/logs/metrics-server.log" >&2
    die "metrics-server is not served as v1beta1.metrics.k8s.io within $READY_TIMEOUT s (log: $BASE/logs/metrics-server.log)"
  fi
  MS_RUNNING=1
  say "metrics-server ready (pid $(cat "$BASE/run/metrics-server.pid")): scrapes the nodes labelled $MS_NODE_LABEL every $MS_RESOLUTION"
fi

cat >"$BASE/env.tmp" <<EOF
KUBECONFIG=$KC
CP_APISERVER_URL=$API_URL
CP_CA_FILE=$PKI/ca.crt
CP_CA_KEY_FILE=$PKI/ca.key
CP_KUBELET_CLIENT_CERT_FILE=$PKI/kubelet-client.crt
CP_KUBELET_CLIENT_CN=$KUBELET_CLIENT_CN
CP_ADMIN_CERT_FILE=$PKI/admin.crt
CP_ADMIN_KEY_FILE=$PKI/admin.key
CP_ADMIN_TOKEN=$TOKEN
CP_NODE_KUBECONFIG=$KC
CP_NODE_KUBECONFIG_DIR=$BASE/nodes
CP_ETCD_URL=http://127.0.0.1:$ETCDPORT
CP_ETCD_PORT=$ETCDPORT
CP_ETCD_PEER_PORT=$ETCDPEERPORT
CP_APISERVER_PORT=$APISERVER_PORT
CP_SERVICE_CIDR=$SERVICE_CIDR
CP_K8S_VERSION=v$K8S_VERSION
CP_ETCD_VERSION=v$ETCDVERSION
CP_ETCD_LOG=$BASE/logs/etcd.log
CP_APISERVER_LOG=$BASE/logs/kube-apiserver.log
CP_SA_ADMISSION=$SA_ADMISSION
CP_POD_REACHABLE=$POD_REACHABLE
CP_CONTROLLERS=$CONTROLLERS_RUNNING
KUBECTL=$KUBECTL
PODWARD_CP_BASE=$BASE
EOF
if [ "$CONTROLLERS_RUNNING" = 1 ]; then
  cat >>"$BASE/env.tmp" <<EOF
CP_KCM_PORT=$KCM_PORT
CP_SCHEDULER_PORT=$SCHEDULER_PORT
CP_KCM_LOG=$BASE/logs/kube-controller-manager.log
CP_SCHEDULER_LOG=$BASE/logs/kube-scheduler.log
EOF
fi
if [ "$MS_RUNNING" = 1 ]; then
  cat >>"$BASE/env.tmp" <<EOF
CP_METRICS_SERVER_URL=https://$MS_ADDR:$METRICS_PORT
CP_METRICS_SERVER_VERSION=v$MS_VERSION
CP_METRICS_SERVER_LOG=$BASE/logs/metrics-server.log
CP_METRICS_NODE_LABEL=$MS_NODE_LABEL
CP_METRICS_RESOLUTION=$MS_RESOLUTION
EOF
fi
if [ -n "$POD_ADDR" ]; then
  printf 'CP_APISERVER_POD_ADDRESS=%s\nCP_APISERVER_POD_URL=https://%s:%s\n' "$POD_ADDR" "$POD_ADDR" "$APISERVER_PORT" >>"$BASE/env.tmp"
fi
mv -f "$BASE/env.tmp" "$BASE/env"
say "ready: $API_URL (etcd 127.0.0.1:$ETCDPORT, peer $ETCDPEERPORT); env in $BASE/env"
echo "KUBECONFIG=$KC" >&3
