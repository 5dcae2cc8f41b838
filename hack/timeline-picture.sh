#!/usr/bin/env bash
# timeline-picture.sh - draw docs/timeline.svg (`make timeline-picture`)
# from a real run of the defer-containers demo pod, examples/defer-demo.yaml
# (the seed demo, examples/defer-demo-seed.yaml, made to run on the process
# runtime): a throw-away `podward serve` on a temporary state and socket
# runs it; once it is ready and has run for RUNFOR, it is deleted (its
# defer containers run, then its main container is stopped), and
# `podward timeline -o svg` draws the pod that is gone.
#
# Needs root (the demo's shared volume needs a private mount namespace)
# and bin/podward (make build). Arguments: the SVG to write (default
# docs/timeline.svg). Environment: PODWARD (default bin/podward), RUNFOR
# (default 2s).
set -euo pipefail
cd "$(dirname "$0")/.."

PODWARD=${PODWARD:-bin/podward}
RUNFOR=${RUNFOR:-2s}
out=${1:-docs/timeline.svg}

dir=$(mktemp -d /tmp/podward-timeline.XXXXXX)
sock=$dir/pw.sock
"$PODWARD" serve --root "$dir/root" --socket "$sock" >"$dir/serve.log" 2>&1 &
serve=$!
stop() {
	kill "$serve" 2>/dev/null || true
	wait "$serve" 2>/dev/null || true
	rm -rf "$dir"
}
trap stop EXIT

# The agent prints this line once it serves (within 30 s).
for _ in $(seq 300); do
	grep -q 'podward: agent serving on' "$dir/serve.log" && break
	kill -0 "$serve" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q 'podward: agent serving on' "$dir/serve.log"; then
	echo "podward serve did not start; its log:" >&2
	cat "$dir/serve.log" >&2
	exit 1
fi
pw() { "$PODWARD" --socket "$sock" "$@"; }
pw apply -f examples/defer-demo.yaml
pw wait pod/defer-demo --for=condition=Ready --timeout 60s
sleep "$RUNFOR"
pw delete pod defer-demo --timeout 90s
pw timeline pod/defer-demo
pw timeline pod/defer-demo -o svg >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
