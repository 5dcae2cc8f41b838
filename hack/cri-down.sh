#!/usr/bin/env bash
# cri-down.sh — tear down what hack/cri-up.sh started for the same PODWARD_CRI_BASE: every pod
# sandbox and container of THIS containerd, containerd itself, its shims, the registry, all mounts
# under the base dir, this instance's shim sockets in /run/containerd/s, the CNI bridge (the one
# cri-up.sh recorded in $BASE/cni/bridge, when PODWARD_CRI_CNI=1 made one) and its portmap rules
# left by sandboxes removed without CNI, the pod cgroups, and the state. Works also when containerd is
# already dead (it then kills runc containers and shims itself). Debian packages stay installed.
#
# Usage: hack/cri-down.sh        (as root; idempotent; exit 1 if anything of ours is left behind)
#
# Env (all optional):
#   PODWARD_CRI_BASE=/tmp/podward-cri   the base dir given to cri-up.sh
#   PODWARD_CRI_KEEP_CACHE=1            keep $BASE/cache (registry storage with the pushed images,
#                                       image tars, crictl) so the next cri-up.sh pushes and builds
#                                       nothing. 0 = remove the whole base dir.
#   PODWARD_CRI_CGROUP_ROOT=podward     top cgroup of podward's pods (/podward/<qos>/pod<uid>): the
#                                       cgroups of this containerd's containers are removed, and
#                                       their parents while empty (a pod's cgroup), but never that
#                                       root or its QoS levels (besteffort, burstable), nor any other
#                                       pod's cgroup: an agent running beside this instance may
#                                       have just made one, still empty, to start a pod in.
set -uo pipefail
export LC_ALL=C
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

BASE=${PODWARD_CRI_BASE:-/tmp/podward-cri}
SOCK=$BASE/containerd.sock
KEEP_CACHE=${PODWARD_CRI_KEEP_CACHE:-1}
CG_ROOT=${PODWARD_CRI_CGROUP_ROOT:-podward}
# the bridge cri-up.sh configured (PODWARD_CRI_CNI_BRIDGE), as it recorded it
BRIDGE=$(cat "$BASE/cni/bridge" 2>/dev/null) || BRIDGE=
[ -n "$BRIDGE" ] || BRIDGE=pwcni0
NETWORK=podward-bridge # as cri-up.sh names it
[ "$BRIDGE" = pwcni0 ] || NETWORK=podward-$BRIDGE
T0=$(date +%s%N)
say() { local ms=$((($(date +%s%N) - T0) / 1000000)); printf '[cri-down %3d.%02ds] %s\n' $((ms / 1000)) $((ms % 1000 / 10)) "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"
case $BASE in
  *[[:space:]]* | / | /*/.. | /*/../*) die "bad PODWARD_CRI_BASE '$BASE'" ;;
  /?*) ;;
  *) die "PODWARD_CRI_BASE must be an absolute path: '$BASE'" ;;
esac
case $CG_ROOT in '' | */* | . | ..) die "bad PODWARD_CRI_CGROUP_ROOT '$CG_ROOT'" ;; esac
if [ ! -d "$BASE" ]; then
  say "nothing to do: $BASE does not exist"
  exit 0
fi
[ -e "$BASE/.podward-cri" ] || die "$BASE was not made by hack/cri-up.sh (no .podward-cri marker); not touching it"
exec 9>"$BASE/.lock"
flock -w 600 9 || die "another cri-up/cri-down holds $BASE/.lock"

pids_of() { # exact command line, as in cri-up.sh
  local d args
  for d in /proc/[0-9]*; do
    mapfile -d '' -t args 2>/dev/null <"$d/cmdline" || continue
    [ "${args[*]:-}" = "$1" ] && echo "${d#/proc/}"
  done
  return 0
}
# shim_pids: this instance's shims; their command line ends in "-address $SOCK"
shim_pids() {
  local d args
  for d in /proc/[0-9]*; do
    mapfile -d '' -t args 2>/dev/null <"$d/cmdline" || continue
    case "${args[*]:-}" in *containerd-shim*" -address $SOCK") echo "${d#/proc/}" ;; esac
  done
  return 0
}
# alive pid: running and not a zombie (our daemons are reparented to PID 1, which may reap late)
alive() {
  local st
  read -r st 2>/dev/null <"/proc/$1/stat" || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ]
}
stop_pids() { # signal pid...: TERM (or KILL), wait up to 10 s, then KILL
  local sig=$1 p left
  shift
  [ $# -gt 0 ] || return 0
  kill "-$sig" "$@" 2>/dev/null
  for _ in $(seq 1 200); do
    left=()
    for p in "$@"; do alive "$p" && left+=("$p"); done
    [ ${#left[@]} -eq 0 ] && return 0
    sleep 0.05
  done
  kill -KILL "${left[@]}" 2>/dev/null
  sleep 0.2
}

STATE=$BASE/containerd/state
TASKDIR=$STATE/io.containerd.runtime.v2.task
CTR=(ctr --address "$SOCK")
cd_pid=$(pids_of "containerd --config $BASE/config.toml")
cgroups=() # cgroupsPath of every container we know of (from the runc bundles)
# Cgroup hierarchies as "mount-dir:containerd's cgroup in it". runc (cgroupfs driver) takes a
# relative cgroupsPath as relative to the cgroup of the shim, which is containerd's.
hier=()
read_hierarchies() { # pid
  local id ctrls path dir
  [ -r "/proc/$1/cgroup" ] || return 1
  hier=()
  while IFS=: read -r id ctrls path; do
    if [ "$id" = 0 ] && [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
      dir=/sys/fs/cgroup # pure cgroup v2
    else
      case $ctrls in '') dir=unified ;; name=*) dir=${ctrls#name=} ;; *) dir=$ctrls ;; esac
      dir=/sys/fs/cgroup/$dir
    fi
    [ -d "$dir" ] && hier+=("$dir:$path")
  done <"/proc/$1/cgroup"
  [ ${#hier[@]} -gt 0 ]
}
shim_socks=()
collect() {
  local f p
  for f in "$TASKDIR"/*/*/config.json; do
    [ -f "$f" ] || continue
    p=$(tr -d '\n' <"$f" | grep -o '"cgroupsPath": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/')
    [ -n "$p" ] && cgroups+=("$p")
  done
  for f in "$TASKDIR"/*/*/address; do
    [ -f "$f" ] && shim_socks+=("$(sed 's|^unix://||' "$f")")
  done
  for f in "$STATE"/io.containerd.grpc.v1.cri/sandboxes/* "$BASE"/containerd/root/io.containerd.grpc.v1.cri/sandboxes/*; do
    [ -e "$f" ] && sandboxes+=("${f##*/}")
  done
}
sandboxes=()
collect
first_shim=$(shim_pids | sed -n 1p)
read_hierarchies "${cd_pid%% *}" 2>/dev/null || read_hierarchies "${first_shim:-x}" 2>/dev/null || read_hierarchies $$

# ----------------------------------------------------------------------------- 1. pods, via containerd
if [ -n "$cd_pid" ] && timeout 5 "${CTR[@]}" version >/dev/null 2>&1; then
  if [ -x "$BASE/cache/bin/crictl" ]; then # the CRI way: also runs CNI DEL for every sandbox
    CRI_CONFIG_FILE=$BASE/crictl.yaml timeout 60 "$BASE/cache/bin/crictl" rmp --all --force >/dev/null 2>&1 &&
      say "crictl: removed all pods"
  fi
  n=0
  for ns in $(timeout 10 "${CTR[@]}" namespaces ls -q 2>/dev/null); do
    for id in $(timeout 10 "${CTR[@]}" -n "$ns" tasks ls -q 2>/dev/null); do
      timeout 10 "${CTR[@]}" -n "$ns" tasks kill --all --signal SIGKILL "$id" >/dev/null 2>&1
    done
    for id in $(timeout 10 "${CTR[@]}" -n "$ns" tasks ls -q 2>/dev/null); do
      timeout 20 "${CTR[@]}" -n "$ns" tasks delete --force "$id" >/dev/null 2>&1
    done
    for id in $(timeout 10 "${CTR[@]}" -n "$ns" containers ls -q 2>/dev/null); do
      timeout 20 "${CTR[@]}" -n "$ns" containers delete "$id" >/dev/null 2>&1 && n=$((n + 1))
    done
  done
  say "removed $n containers and sandboxes through containerd"
fi

# ----------------------------------------------------------------------------- 2. containerd
if [ -n "$cd_pid" ]; then
  # shellcheck disable=SC2086 # one pid per word
  stop_pids TERM $cd_pid
  say "stopped containerd ($cd_pid)"
fi

# ----------------------------------------------------------------------------- 3. leftovers: runc containers, shims
if [ -d "$BASE/containerd/runc" ]; then
  for root in "$BASE"/containerd/runc/*/; do
    [ -d "$root" ] || continue
    for id in $(runc --root "$root" list -q 2>/dev/null); do
      runc --root "$root" kill "$id" KILL >/dev/null 2>&1
      runc --root "$root" delete --force "$id" >/dev/null 2>&1 && say "runc: deleted $id"
    done
  done
fi
shims=$(shim_pids)
if [ -n "$shims" ]; then
  # shellcheck disable=SC2086
  stop_pids KILL $shims
  say "killed shims: ${shims//$'\n'/ }"
fi
for s in "${shim_socks[@]}"; do
  case $s in /run/containerd/s/*) [ -S "$s" ] && rm -f "$s" && say "removed shim socket $s" ;; esac
done
rmdir /run/containerd/s /run/containerd 2>/dev/null # only when empty: other instances keep theirs

# ----------------------------------------------------------------------------- 4. registry
reg=$(pids_of "docker-registry serve $BASE/registry/config.yml")
if [ -n "$reg" ]; then
  # shellcheck disable=SC2086
  stop_pids TERM $reg
  say "stopped registry ($reg)"
fi

# ----------------------------------------------------------------------------- 5. mounts under $BASE
# rootfs overlays, sandbox netns and shm; deepest first. /proc/self/mounts escapes no characters
# that matter here: the base dir has no white space.
for _ in 1 2 3; do
  mapfile -t mounts < <(awk -v b="$BASE/" 'index($2, b) == 1 {print $2}' /proc/self/mounts | sort -r)
  [ ${#mounts[@]} -eq 0 ] && break
  for m in "${mounts[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
  say "unmounted ${#mounts[@]} mounts under $BASE"
done

# ----------------------------------------------------------------------------- 6. network
# only when cri-up.sh configured CNI for this base dir (it leaves cni/bridge as a marker)
if [ -e "$BASE/cni/bridge" ] && ip link show "$BRIDGE" >/dev/null 2>&1; then
  ip link delete "$BRIDGE" && say "deleted bridge $BRIDGE"
fi
# portmap's rules of our network's sandboxes that went without a CNI DEL (removed through ctr, or
# containerd killed): each sandbox's CNI-DN-* chain, named in a rule of CNI-HOSTPORT-DNAT whose
# comment names our network. Other networks' rules are left alone.
if [ -e "$BASE/cni/bridge" ] && command -v iptables-save >/dev/null; then
  for chain in $(iptables-save -t nat 2>/dev/null | grep -F "dnat name: \\\"$NETWORK\\\"" |
    grep -o -- '-j CNI-DN-[0-9a-f]*' | awk '{print $2}' | sort -u); do
    while n=$(iptables -t nat -L CNI-HOSTPORT-DNAT -n --line-numbers 2>/dev/null | awk -v c="$chain" '$2 == c {print $1; exit}') && [ -n "$n" ]; do
      iptables -t nat -D CNI-HOSTPORT-DNAT "$n" || break
    done
    iptables -t nat -F "$chain" 2>/dev/null && iptables -t nat -X "$chain" 2>/dev/null && say "removed portmap chain $chain"
  done
fi
# libcni's result cache (not configurable in containerd 1.6): our network's entries and the
# loopback entries of our sandboxes (CRI removes them itself when a pod is removed through it)
rm -f /var/lib/cni/results/"$NETWORK"-* 2>/dev/null
for id in "${sandboxes[@]}"; do rm -f /var/lib/cni/results/*-"$id"-* 2>/dev/null; done

# ----------------------------------------------------------------------------- 7. cgroups
# cgroup rmdir fails on a cgroup that still has processes or children: depth-first rmdir removes
# exactly the empty ones.
rm_empty_cgroups() { # cgroup path: absolute, or relative to containerd's cgroup
  local h d
  for h in "${hier[@]}"; do
    case $1 in
      /*) d=${h%%:*}$1 ;;
      *) d=${h%%:*}${h#*:}; d=${d%/}/$1 ;;
    esac
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}
# A container's cgroup, then each ancestor runc created for it (its pod parent, ...) while empty,
# up to the hierarchy root (absolute paths) or containerd's own cgroup (relative paths), short of
# podward's root and its QoS levels: those are the agents', shared by every pod (an empty pod
# cgroup under them may be one an agent beside us just made, not yet entered: it is not ours).
for c in "${cgroups[@]}"; do
  while [ -n "${c#/}" ]; do
    case $c in "/$CG_ROOT" | "/$CG_ROOT/besteffort" | "/$CG_ROOT/burstable") break ;; esac
    rm_empty_cgroups "$c"
    case $c in */*) c=${c%/*} ;; *) c= ;; esac
  done
done

# ----------------------------------------------------------------------------- 8. state
had_bridge=
[ -e "$BASE/cni/bridge" ] && had_bridge=1
rm -rf "${BASE:?}"/{containerd,cni,registry,logs,tmp} "$BASE"/{config.toml,config.toml.new,crictl.yaml,env,containerd.pid} \
  "$SOCK" "$SOCK.ttrpc"
if [ "$KEEP_CACHE" = 0 ]; then
  rm -rf "${BASE:?}"
  say "removed $BASE"
else
  say "kept $BASE/cache (PODWARD_CRI_KEEP_CACHE=0 removes it)"
fi

# ----------------------------------------------------------------------------- 9. verify
bad=0
procs=$(pids_of "containerd --config $BASE/config.toml"; pids_of "docker-registry serve $BASE/registry/config.yml"; shim_pids)
[ -n "$procs" ] && { say "LEFT: processes ${procs//$'\n'/ }"; bad=1; }
grep -q " $BASE/" /proc/self/mounts && { say "LEFT: mounts under $BASE"; bad=1; }
left=$(for h in "${hier[@]}"; do for c in "${cgroups[@]}"; do
  case $c in /*) d=${h%%:*}$c ;; *) d=${h%%:*}${h#*:}; d=${d%/}/$c ;; esac
  [ -d "$d" ] && echo "$d"
done; done)
[ -n "$left" ] && say "note: container cgroups still in use, left alone: ${left//$'\n'/ }"
[ -n "$had_bridge" ] && ip link show "$BRIDGE" >/dev/null 2>&1 && { say "LEFT: bridge $BRIDGE"; bad=1; }
[ "$bad" = 0 ] || die "teardown incomplete"
say "done"
