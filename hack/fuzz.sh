#!/usr/bin/env bash
# fuzz.sh - run every Go fuzz target of the module, one after another, each
# for FUZZTIME (default 30s; `make fuzz`, and `make fuzz-smoke` with 3s,
# which `make test` runs). The targets are found with `go test -list`, so a
# new FuzzX is run without being listed anywhere. Every target runs even
# when one fails; the exit status says whether any did. A failing input is
# written to the package's testdata/fuzz/FuzzX/: keep it there, with the
# fix, as a regression case that `go test` then runs.
#
# Environment: GO (default go), FUZZTIME, FUZZMINIMIZETIME (how long a new
# input is minimized, default 10s; Go's 60s would eat short runs),
# FUZZPARALLEL (workers per target, default Go's: GOMAXPROCS).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}
parallel=()
if [ -n "${FUZZPARALLEL:-}" ]; then
  parallel=(-parallel "$FUZZPARALLEL")
fi

# The packages with a fuzz target (listing every package would build every
# test binary); `go test -list` prints a package's matching names, then
# "ok <package>".
mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func Fuzz' cmd internal test 2>/dev/null |
  xargs -r -n1 dirname | sort -u | sed 's|^|./|')
if [ ${#pkgs[@]} -eq 0 ]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi
targets=$("$GO" test -list '^Fuzz' "${pkgs[@]}" | awk '
  /^Fuzz/ { names[n++] = $1 }
  /^ok /  { for (i = 0; i < n; i++) print $2 " " names[i]; n = 0 }')
if [ -z "$targets" ]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi

failed=()
while read -r pkg name; do
  echo "== $name ($pkg, $FUZZTIME)"
  if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" \
    -fuzzminimizetime "$FUZZMINIMIZETIME" "${parallel[@]}" "$pkg"; then
    failed+=("$name ($pkg)")
  fi
done <<<"$targets"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
