#!/usr/bin/env bash
# full-disk-stop.sh BINARY [LIMIT_SECONDS] — measures issue 12's full state disk: how long after
# `podward delete` a pod that filled the agent's state filesystem with its log is gone.
#
# It mounts a 2 MiB tmpfs as `podward serve --root`, starts a quiet pod (a line every 0.5 s) and a
# pod that floods its log (`yes`, SIGTERM ignored, grace period 5 s) beside 30 idle containers (so
# that its checkpoint needs more of the store than a full disk can give), waits until the disk is
# full, deletes the flooding pod and prints how long its container took to go, or that it still runs
# after LIMIT_SECONDS (default 120). Then it prints /healthz, frees the space and shows the quiet
# pod's last log lines. Needs root (the tmpfs); everything it starts is killed and the tmpfs
# unmounted at the end.
set -euo pipefail
BIN=$(realpath "$1")
LIMIT=${2:-120}
[ "$(id -u)" = 0 ] || { echo "full-disk-stop.sh: needs root (it mounts a tmpfs)" >&2; exit 2; }
D=$(mktemp -d /tmp/podward-full-disk.XXXXXX)
AGENT=
cleanup() {
	[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null || true
	# Every process of the run has $D in its command line.
	pkill -KILL -f "$D" 2>/dev/null || true
	umount -l "$D/root" 2>/dev/null || true
	rm -rf "$D"
}
trap cleanup EXIT
mkdir -p "$D/root"
mount -t tmpfs -o size=2m,mode=0700 tmpfs "$D/root"

{
	cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: flood}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: flood
    image: bash
    command: ["/bin/bash", "-c", "trap '' TERM; sleep 3; exec yes flood-$D"]
YAML
	for i in $(seq -w 0 29); do
		cat <<YAML
  - name: sleeper-with-a-rather-long-name-$i
    image: bash
    command: ["/bin/bash", "-c", "trap '' TERM; while true; do sleep 1; done; : $D"]
YAML
	done
} > "$D/flood.yaml"
cat > "$D/quiet.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: quiet}
spec:
  containers:
  - name: quiet
    image: bash
    command: ["/bin/bash", "-c", "i=0; while true; do i=\$((i+1)); echo tick \$i; sleep 0.5; done; : $D"]
YAML

"$BIN" serve --root "$D/root" --socket "$D/sock" -v > "$D/agent.log" 2>&1 &
AGENT=$!
for _ in $(seq 100); do [ -S "$D/sock" ] && break; sleep 0.1; done
export PODWARD_SOCKET=$D/sock
"$BIN" apply -f "$D/quiet.yaml"
"$BIN" wait pod/quiet --for=condition=Ready --timeout 30s >/dev/null
"$BIN" apply -f "$D/flood.yaml"
for _ in $(seq 600); do
	[ "$(df --output=avail "$D/root" | tail -1)" -le 0 ] && break
	sleep 0.1
done
df -h "$D/root" | tail -1
start=$(date +%s.%N)
"$BIN" delete pod flood --wait=false
healthz=
gone=
while :; do
	if [ -z "$healthz" ] && (( $(echo "$(date +%s.%N) - $start > 1" | bc) )); then
		healthz=$(curl -s --unix-socket "$D/sock" 'http://podward/healthz?verbose' || true)
	fi
	if ! pgrep -f "yes flood-$D" >/dev/null; then gone=$(date +%s.%N); break; fi
	if (( $(echo "$(date +%s.%N) - $start > $LIMIT" | bc) )); then break; fi
	sleep 0.1
done
if [ -n "$gone" ]; then
	printf 'RESULT: the flooding container was gone %.1f s after its delete (grace period 5 s)\n' "$(echo "$gone - $start" | bc)"
else
	echo "RESULT: the flooding container still runs $LIMIT s after its delete (grace period 5 s)"
fi
"$BIN" events --for pod/flood | grep -E 'Warning|Killing' | grep -v 'Stopping container sleeper' | cut -c1-200 | tail -5 || true
echo "--- /healthz?verbose, 1 s after the delete"
echo "$healthz"
echo "--- /healthz?verbose, now"
curl -s --unix-socket "$D/sock" 'http://podward/healthz?verbose' || true
pkill -KILL -f "yes flood-$D" 2>/dev/null || true
for _ in $(seq 50); do pgrep -f "yes flood-$D" >/dev/null || break; sleep 0.1; done
rm -rf "$D"/root/process/pods/*/logs/flood
sleep 2
echo "--- the quiet pod's last lines, once the space is back"
"$BIN" logs quiet | tail -3
