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

# fuzz_one PKG NAME: one target's run, its output on stdout and in $out.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fuzz_one() {
  "$GO" test -run '^$' -fuzz "^${2}\$" -fuzztime "$FUZZTIME" \
    -fuzzminimizetime "$FUZZMINIMIZETIME" "${parallel[@]}" "$1" 2>&1 | tee "$out"
  return "${PIPESTATUS[0]}"
}

# deadline_race: the failure in $out is Go 1.26's fuzz coordinator racing
# its own -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27): the
# target's only message is "context deadline exceeded", no input was
# written and nothing panicked or reported an error. Such a run is tried
# once more; a real finding always writes its input, and fails at once.
deadline_race() {
  grep -q '^    context deadline exceeded$' "$out" &&
    ! grep -qE 'Failing input written|^panic:|_test\.go:[0-9]+:|fatal error:' "$out"
}

failed=()
while read -r pkg name; do
  echo "== $name ($pkg, $FUZZTIME)"
  if fuzz_one "$pkg" "$name"; then
    continue
  fi
  if deadline_race; then
    echo "fuzz: $name ended with the fuzz coordinator's deadline race (go.dev/issue/75804), nothing found; once more"
    fuzz_one "$pkg" "$name" && continue
  fi
  failed+=("$name ($pkg)")
done <<<"$targets"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
