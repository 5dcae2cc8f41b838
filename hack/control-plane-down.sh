#!/usr/bin/env bash
# control-plane-down.sh — stop the control plane hack/control-plane-up.sh started for the same
# PODWARD_CP_BASE (metrics-server if any, kube-scheduler, kube-controller-manager, kube-apiserver,
# then etcd), remove metrics-server's address from lo and remove that base dir. The built
# binaries in the cache dir (PODWARD_CP_CACHE) are kept, so the next control-plane-up.sh starts in
# seconds.
#
# Usage: hack/control-plane-down.sh     idempotent; exit 1 if a daemon of ours is left behind
#
# Env (optional):
#   PODWARD_CP_BASE=/tmp/podward-cp     the base dir given to control-plane-up.sh
#
# Only processes that have this base dir's own paths in their command line are stopped
# (--cert-dir=$BASE/{metrics-server,kcm-certs,scheduler-certs,apiserver-certs}, --data-dir=$BASE/etcd),
# found through /proc and the pid files; never by program name. SIGTERM, SIGKILL after 10 s, and
# then the wait lasts until every thread is gone (a stopped daemon lingers as a zombie for 1-2 s
# here, `kill -0` is not enough) and its ports are free, so a control-plane-up.sh right after this
# can bind them again.
set -uo pipefail
export LC_ALL=C

BASE=${PODWARD_CP_BASE:-/tmp/podward-cp}
T0=$(date +%s%N)
say() { local ms=$((($(date +%s%N) - T0) / 1000000)); printf '[cp-down %3d.%02ds] %s\n' $((ms / 1000)) $((ms % 1000 / 10)) "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }

case $BASE in
  *[[:space:]]*) die "PODWARD_CP_BASE must not contain white space: '$BASE'" ;;
  / | /*/.. | /*/../* | /*/. | /*/./*) die "bad PODWARD_CP_BASE '$BASE'" ;;
  /?*) BASE=${BASE%/} ;;
  *) die "PODWARD_CP_BASE must be an absolute path: '$BASE'" ;;
esac
ETCDMARK=--data-dir=$BASE/etcd
API_MARK=--cert-dir=$BASE/apiserver-certs
MS_MARK=--cert-dir=$BASE/metrics-server
KCM_MARK=--cert-dir=$BASE/kcm-certs
SCHED_MARK=--cert-dir=$BASE/scheduler-certs

# alive PID: some thread is not a zombie (see above)
alive() {
  local st s
  for st in /proc/"$1"/task/*/stat; do
    read -r s 2>/dev/null <"$st" || continue
    s=${s##*) }
    [ "${s%% *}" != Z ] && return 0
  done
  return 1
}
any_alive() {
  local p
  for p in "$@"; do alive "$p" && return 0; done
  return 1
}
has_arg() { # PID ARG: one of the process's argv elements is exactly ARG
  local a args
  mapfile -d '' -t args 2>/dev/null <"/proc/$1/cmdline" || return 1
  for a in "${args[@]}"; do [ "$a" = "$2" ] && return 0; done
  return 1
}
ours() { # MARK PIDFILE: alive pids carrying MARK (the pid file's, then any other in /proc)
  local d p
  p=$(cat "$2" 2>/dev/null) || p=
  [[ $p =~ ^[0-9]+$ ]] && alive "$p" && has_arg "$p" "$1" && echo "$p"
  for d in /proc/[0-9]*; do
    [ "${d#/proc/}" = "$p" ] && continue
    has_arg "${d#/proc/}" "$1" && alive "${d#/proc/}" && echo "${d#/proc/}"
  done
  return 0
}
stop() { # NAME MARK PIDFILE
  local pids
  mapfile -t pids < <(ours "$2" "$3")
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null
  for _ in $(seq 1 200); do any_alive "${pids[@]}" || break; sleep 0.05; done
  if any_alive "${pids[@]}"; then
    say "$1 (pid ${pids[*]}) ignored SIGTERM for 10 s: SIGKILL"
    kill -KILL "${pids[@]}" 2>/dev/null
    for _ in $(seq 1 200); do any_alive "${pids[@]}" || break; sleep 0.05; done
  fi
  if any_alive "${pids[@]}"; then
    say "$1 (pid ${pids[*]}) is still running"
    return 1
  fi
  say "$1 stopped (pid ${pids[*]})"
}

if [ -d "$BASE" ]; then
  [ -e "$BASE/.podward-cp" ] || die "$BASE was not made by hack/control-plane-up.sh (no .podward-cp marker); not touching it"
  exec 9>"$BASE/.lock"
  flock -w 900 9 || die "another control-plane-up/down holds $BASE/.lock"
fi
# Also without the base dir: a daemon whose state was deleted under it is still found by its args.
rc=0
stop metrics-server "$MS_MARK" "$BASE/run/metrics-server.pid" || rc=1
stop kube-scheduler "$SCHED_MARK" "$BASE/run/kube-scheduler.pid" || rc=1
stop kube-controller-manager "$KCM_MARK" "$BASE/run/kube-controller-manager.pid" || rc=1
stop kube-apiserver "$API_MARK" "$BASE/run/kube-apiserver.pid" || rc=1 # first: no retries on a dead etcd
stop etcd "$ETCDMARK" "$BASE/run/etcd.pid" || rc=1
[ "$rc" = 0 ] || die "daemons of $BASE are left behind; state kept in $BASE"

# Wait until the ports are free again (a listening socket can outlive the last thread briefly).
ports=$(sed -n 's/^[A-Z_]*PORT=//p' "$BASE/run/ports" 2>/dev/null)
for p in $ports; do
  for _ in $(seq 1 100); do
    [ -z "$(ss -Hltn "( sport = :$p )" 2>/dev/null)" ] && break
    sleep 0.05
  done
  [ -z "$(ss -Hltn "( sport = :$p )" 2>/dev/null)" ] || say "warning: port $p is still in use (ss -ltnp 'sport = :$p')"
done

# metrics-server's address on lo (PODWARD_CP_METRICS_SERVER=1)
addr=$(sed -n 's/^METRICS_ADDR=//p' "$BASE/run/ports" 2>/dev/null)
if [ -n "$addr" ] && ip -o -4 addr show dev lo 2>/dev/null | grep -qF " $addr/32 "; then
  ip addr del "$addr/32" dev lo || say "warning: could not remove $addr from lo"
fi

if [ -d "$BASE" ]; then
  rm -rf "$BASE" || die "could not remove $BASE"
  say "removed $BASE"
else
  say "nothing left: $BASE does not exist"
fi
