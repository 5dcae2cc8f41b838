#!/usr/bin/env bash
# node-conformance.sh — run Kubernetes' own [NodeConformance] e2e specs against a podward node, and
# write the results. `make node-conformance` runs it (as root).
#
# What it does, each step with the repo's own scripts, everything under $PODWARD_NC_BASE:
#   1. builds podward, the e2e suite, agnhost (hack/e2e-build.sh) and the control plane
#      (hack/control-plane-up.sh), all from the Go module proxy, cached by version;
#   2. starts containerd with a CNI bridge of its own (hack/cri-up.sh: bridge ncbr0, 10.123.0.0/16,
#      registry.k8s.io pulled through its local registry) and pushes the e2e images into it
#      (hack/e2e-images.sh);
#   3. starts the control plane: etcd, kube-apiserver with ServiceAccount admission on,
#      kube-controller-manager and kube-scheduler (hack/control-plane-up.sh);
#   4. starts `podward node --runtime cri --cri-pod-network` with a kubelet identity
#      (system:node:$NODE) and an InternalIP of its own on lo ($NODE_IP: not loopback, which the
#      API server's node proxy refuses), and waits until the Node is Ready and untainted;
#   5. runs the e2e suite: the specs FOCUS selects minus those SKIP selects, serially
#      (SHARDS=N: N processes at once, each serial, the specs dealt out in name order);
#   6. writes $OUT/junit*.xml, $OUT/e2e*.log, $OUT/podward.log and $OUT/results.md (the totals,
#      the failures by cause, every spec: test/nodeconformance/report);
#   7. stops and removes everything it started (the built binaries and the images stay cached).
#
# Env:
#   FOCUS='\[NodeConformance\]'   ginkgo focus (regexp on the spec's full text)
#   FOCUS_FILE                    instead of FOCUS: a file of such regexps, one a line (# comments)
#   SKIP='\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:'   ginkgo skip; ALL=1 drops it
#                                 (keeps only the focus)
#   SHARDS=1                      ginkgo processes at once (each serial, on the same node)
#   STRICT=0                      1: exit 1 unless every selected spec passed (the CI subset)
#   SA_ADMISSION=1                1 (the default): the API server's ServiceAccount admission plugin
#                                 on, as in every real cluster (every pod gets the kube-api-access-*
#                                 token volume); 0: off, as the runs before issue 21 were measured
#   DRY_RUN=0                     1: only list the selected specs into $OUT/specs.txt
#   TIMEOUT=6h                    the suite's timeout (each shard's)
#   OUT=_output/node-conformance  results directory (emptied first)
#   PODWARD_NC_BASE=/tmp/podward-nc  state of the run (short: containerd's socket lives under it)
#   NODE_NAME=nc-podward  NODE_IP=192.0.2.77 (TEST-NET-1)  KUBELET_PORT=10777  CGROUP_ROOT=/podward-nc
#   PODWARD_NC_CNI_BRIDGE=ncbr0  PODWARD_NC_CNI_SUBNET=10.123.0.0/16  the pods' bridge and subnet
#                                 (two runs at once on one machine need their own of these and above)
#   PODWARD_NC_KEEP=0             1: leave the cluster up at the end (stop it with KEEP=0 DOWN_ONLY=1)
#   DOWN_ONLY=0                   1: only tear down what a kept run left
# Needs root, go, and what hack/cri-up.sh installs (containerd, runc, CNI plugins, skopeo...).
#
# Times on 2 cores: cold builds ~45 min (the control plane, then the e2e suite); the 242 specs of
# v1.37.2's focus take ~2 h serially (the probing specs watch pods for minutes), ~45 min with
# SHARDS=3; set-up ~1 min, tear-down ~15 s.
set -euo pipefail
umask 022
export LC_ALL=C
PATH=$PATH:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cd "$repo"

BASE=${PODWARD_NC_BASE:-/tmp/podward-nc}
OUT=${OUT:-$repo/_output/node-conformance}
FOCUS=${FOCUS:-'\[NodeConformance\]'}
if [ -n "${FOCUS_FILE:-}" ]; then
  FOCUS=$(grep -v '^[[:space:]]*\(#\|$\)' "$FOCUS_FILE" | paste -sd'|') || { echo "no regexp in FOCUS_FILE $FOCUS_FILE" >&2; exit 2; }
fi
SA_ADMISSION=${SA_ADMISSION:-1}
SKIP=${SKIP-'\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:'}
[ "${ALL:-0}" = 1 ] && SKIP=''
SHARDS=${SHARDS:-1}
STRICT=${STRICT:-0}
DRY_RUN=${DRY_RUN:-0}
TIMEOUT=${TIMEOUT:-6h}
NODE=${NODE_NAME:-nc-podward}
NODE_IP=${NODE_IP:-192.0.2.77}
KUBELET_PORT=${KUBELET_PORT:-10777}
CGROUP_ROOT=${CGROUP_ROOT:-/podward-nc}
CNI_BRIDGE=${PODWARD_NC_CNI_BRIDGE:-ncbr0}
CNI_SUBNET=${PODWARD_NC_CNI_SUBNET:-10.123.0.0/16}
KEEP=${PODWARD_NC_KEEP:-0}
K8S_VERSION=${PODWARD_CP_K8S_VERSION:-1.37.2}
T0=$SECONDS
say() { echo "[node-conformance $(date -u +%T) +$((SECONDS - T0))s] $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (containerd, the CNI bridge, the node's address on lo)"
[[ $SHARDS =~ ^[1-9][0-9]?$ ]] || die "bad SHARDS '$SHARDS'"
[[ $SA_ADMISSION =~ ^[01]$ ]] || die "bad SA_ADMISSION '$SA_ADMISSION' (0 or 1)"
case $BASE in /?*) ;; *) die "PODWARD_NC_BASE must be an absolute path" ;; esac
[[ $NODE_IP =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "bad NODE_IP '$NODE_IP'"

export PODWARD_CRI_BASE=$BASE/cri PODWARD_CP_BASE=$BASE/cp
PODWARD_PID=$BASE/podward.pid
NODE_ROOT=$BASE/node

# ----------------------------------------------------------------------------- tear-down
stop_podward() {
  local p
  p=$(cat "$PODWARD_PID" 2>/dev/null) || return 0
  if [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- "--root $NODE_ROOT "; then
    say "stopping podward node (pid $p)"
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 300); do [ -e "/proc/$p" ] || break; sleep 0.1; done
    [ ! -e "/proc/$p" ] || { kill -KILL "$p" 2>/dev/null || true; }
  fi
  rm -f "$PODWARD_PID"
}
# unmount_under DIR: the mounts below DIR, deepest first (the pods' volumes: a secret, token or
# projected volume is a tmpfs of its own, and the node leaves its pods' volumes mounted when it
# stops, as the kubelet does), so that DIR can be removed.
unmount_under() {
  local m mounts
  for _ in 1 2 3; do
    mapfile -t mounts < <(awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r)
    [ ${#mounts[@]} -eq 0 ] && return 0
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
}
down() {
  stop_podward
  "$here/control-plane-down.sh" || say "warning: hack/control-plane-down.sh failed"
  # the pods' containers outlive podward: cri-down.sh removes them with containerd
  PODWARD_CRI_CGROUP_ROOT=${CGROUP_ROOT#/} "$here/cri-down.sh" || say "warning: hack/cri-down.sh failed"
  if ip -o -4 addr show dev lo | grep -qF " $NODE_IP/32 "; then ip addr del "$NODE_IP/32" dev lo || true; fi
  # podward's cgroup root and its QoS levels (cri-down.sh keeps a root): only while empty
  local c
  for c in /sys/fs/cgroup/*"$CGROUP_ROOT" /sys/fs/cgroup/*/"${CGROUP_ROOT#/}"; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  unmount_under "$NODE_ROOT"
  rm -rf "$NODE_ROOT"
  return 0
}
if [ "${DOWN_ONLY:-0}" = 1 ]; then
  down
  say "torn down"
  exit 0
fi
on_exit() {
  local rc=$?
  if [ "$KEEP" = 1 ]; then
    say "PODWARD_NC_KEEP=1: the cluster stays up (KUBECONFIG=$BASE/cp/kubeconfig); DOWN_ONLY=1 $0 stops it"
  else
    down
  fi
  exit "$rc"
}
trap on_exit EXIT

# ----------------------------------------------------------------------------- 1. builds
mkdir -p "$BASE" "$OUT"
rm -rf "${OUT:?}"/*
say "building podward"
# the commit the node runs: the results name it, not the one checked out when the specs end
REV=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?')
go build -o "$BASE/bin/" ./cmd/podward ./cmd/podward-shim ./test/nodeconformance/report ||
  die "go build"
say "building the e2e suite and the images' programs (hack/e2e-build.sh; cold ~10 min after the control plane)"
built=$("$here/e2e-build.sh") || die "hack/e2e-build.sh"
eval "$built" # E2E_BIN AGNHOST_BIN NONEWPRIVS_BIN NETUTIL_BIN BUSYBOX_BIN K8S_DIR

# ----------------------------------------------------------------------------- 2. containerd, images
say "starting containerd (hack/cri-up.sh)"
PODWARD_CRI_CNI=1 PODWARD_CRI_CNI_BRIDGE=$CNI_BRIDGE PODWARD_CRI_CNI_SUBNET=$CNI_SUBNET PODWARD_CRI_MIRRORS=registry.k8s.io \
  "$here/cri-up.sh" >/dev/null || die "hack/cri-up.sh"
"$here/e2e-images.sh" "$AGNHOST_BIN" "$NONEWPRIVS_BIN" "$NETUTIL_BIN" "$BUSYBOX_BIN" "$K8S_DIR" || die "hack/e2e-images.sh"

# ----------------------------------------------------------------------------- 3. control plane
say "starting the control plane (hack/control-plane-up.sh)"
PODWARD_CP_CONTROLLERS=1 PODWARD_CP_SA_ADMISSION=$SA_ADMISSION PODWARD_CP_METRICS_SERVER=0 PODWARD_CP_NODE_NAMES=$NODE \
  "$here/control-plane-up.sh" >/dev/null || die "hack/control-plane-up.sh"
set -a
# shellcheck disable=SC1091
. "$BASE/cp/env"
set +a

# ----------------------------------------------------------------------------- 4. the node
ip -o -4 addr show dev lo | grep -qF " $NODE_IP/32 " || ip addr add "$NODE_IP/32" dev lo
stop_podward
unmount_under "$NODE_ROOT"
rm -rf "$NODE_ROOT"
mkdir -p "$NODE_ROOT"
say "starting podward node $NODE (log $OUT/podward.log)"
setsid "$BASE/bin/podward" node --kubeconfig "$CP_NODE_KUBECONFIG_DIR/$NODE.kubeconfig" --node-name "$NODE" \
  --root "$NODE_ROOT" --node-ip "$NODE_IP" --kubelet-port "$KUBELET_PORT" --client-ca-file "$CP_CA_FILE" \
  --runtime cri --cri-endpoint "unix://$PODWARD_CRI_BASE/containerd.sock" --cri-pod-network \
  --cgroup-root "$CGROUP_ROOT" -v </dev/null >"$OUT/podward.log" 2>&1 &
echo $! >"$PODWARD_PID"
K() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
ok=0
for _ in $(seq 1 240); do
  if [ "$(K get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] &&
    [ -z "$(K get node "$NODE" -o jsonpath='{.spec.taints}' 2>/dev/null)" ]; then
    ok=1
    break
  fi
  [ -e "/proc/$(cat "$PODWARD_PID")" ] || break
  sleep 0.5
done
[ "$ok" = 1 ] || { tail -n 30 "$OUT/podward.log" >&2; K get node -o wide >&2 || true; die "node $NODE not Ready and untainted within 120 s"; }
say "node $NODE Ready"

# ----------------------------------------------------------------------------- 5. the specs
E2E_ARGS=(--kubeconfig="$KUBECONFIG" --provider=skeleton --minStartupPods=0 --node-schedulable-timeout=2m
  --system-pods-startup-timeout=2m --kubectl-path="$KUBECTL" "--ginkgo.skip=$SKIP"
  --ginkgo.v --ginkgo.no-color "--ginkgo.timeout=$TIMEOUT")
say "listing the specs (focus $FOCUS, skip ${SKIP:-none})"
"$E2E_BIN" "${E2E_ARGS[@]}" "--ginkgo.focus=$FOCUS" --ginkgo.dry-run --ginkgo.json-report="$BASE/dry-run.json" \
  --report-dir="$BASE/dry-run" >"$BASE/dry-run.log" 2>&1 || true
# the selected specs' full texts (what --ginkgo.focus matches), one a line, sorted
"$BASE/bin/report" -list "$BASE/dry-run.json" >"$OUT/specs.txt" || die "reading the dry run's report ($BASE/dry-run.log)"
n=$(wc -l <"$OUT/specs.txt")
[ "$n" -gt 0 ] || die "no spec selected (focus $FOCUS, skip $SKIP)"
say "$n specs selected: $OUT/specs.txt"
if [ "$DRY_RUN" = 1 ]; then exit 0; fi

# shard i gets the specs at positions i, i+SHARDS, ... of the sorted list, as an exact focus
pids=()
for i in $(seq 0 $((SHARDS - 1))); do
  if [ "$SHARDS" = 1 ]; then
    focus=$FOCUS
    suffix=''
  else
    focus=$(awk -v n="$SHARDS" -v i="$i" '(NR - 1) % n == i' "$OUT/specs.txt" | "$BASE/bin/report" -focus "$BASE/dry-run.json")
    suffix=-$((i + 1))
  fi
  "$E2E_BIN" "${E2E_ARGS[@]}" "--ginkgo.focus=$focus" --report-dir="$OUT/report$suffix" \
    --ginkgo.junit-report="$OUT/junit$suffix.xml" >"$OUT/e2e$suffix.log" 2>&1 &
  pids+=($!)
  say "shard $((i + 1)) of $SHARDS: pid $!, log $OUT/e2e$suffix.log"
done
for p in "${pids[@]}"; do wait "$p" || true; done
say "specs done in $((SECONDS - T0)) s"

# ----------------------------------------------------------------------------- 6. results
status=0
strict=()
[ "$STRICT" = 1 ] && strict=(-strict)
{
  echo "# [NodeConformance] e2e specs against a podward node — $(date -u +%F)"
  echo
  echo "k8s.io/kubernetes v$K8S_VERSION e2e (test/nodeconformance/suite), focus \`$FOCUS\`, skip \`${SKIP:-none}\`;"
  echo "podward $REV as \`podward node --runtime cri --cri-pod-network\`,"
  echo "$(containerd --version | awk '{print "containerd " $3}'), control plane $CP_K8S_VERSION (scheduler, controller-manager), ServiceAccount admission $([ "$SA_ADMISSION" = 1 ] && echo on || echo off); $SHARDS shard(s);"
  echo "run time $((SECONDS - T0)) s (hack/node-conformance.sh)."
  echo
  "$BASE/bin/report" -log "$OUT/podward.log" "${strict[@]}" "$OUT"/junit*.xml || status=$?
} >"$OUT/results.md"
sed -n '1,/^| # |/p' "$OUT/results.md" | head -n -1 >&2
say "results: $OUT/results.md"
exit "$status"
