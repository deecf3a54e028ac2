#!/usr/bin/env bash
# Peak memory and wall time of `stampede compare A B`, `report A B`, `report A` and `merge A B` on two one-hour
# results folders (3,600 one-second intervals of six latency metrics, SAMPLES samples each per
# second, default 200: ~hundred-bucket interval histograms). The folders are built by the test
# LongRunReaderTests through the results writer's own spool (STAMPEDE_SYNTHETIC_RUNS keeps them,
# in a debug build: a few minutes); the release binary is then timed with
# /usr/bin/time -v (maximum resident set size, elapsed wall clock). The stated bound
# (docs/results.md, "Memory"): under 200 MB and 20 s each.
# Usage: [SAMPLES=N] [KEEP=DIR] Benchmarks/long-run-readers.sh [STAMPEDE_BINARY]
#   (default binary: the release build of this tree; KEEP=DIR reuses or keeps the folders there)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n "${1:-}" ]]; then B=$1; else swift build -c release --product stampede > /dev/null; B=.build/release/stampede; fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
RUNS=${KEEP:-$OUT/runs}
if [[ ! -f "$RUNS/current/summary.json" ]]; then
  swift build --build-tests > /dev/null
  STAMPEDE_SYNTHETIC_RUNS="$RUNS" STAMPEDE_SYNTHETIC_SAMPLES="${SAMPLES:-200}" swift test --skip-build --filter LongRunReaderTests > "$OUT/test.log" 2>&1 || { cat "$OUT/test.log"; exit 1; }
fi
A="$RUNS/baseline" C="$RUNS/current"
du -sh "$A" "$C"
printf '%-26s %12s %10s %6s\n' "command" "peak RSS" "wall (s)" "exit"
measure() {  # label, command…
  local label=$1; shift
  local status=0
  /usr/bin/time -v "$@" > "$OUT/out.txt" 2> "$OUT/time.txt" || status=$?
  local rss wall
  rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$OUT/time.txt")
  wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$OUT/time.txt" | awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
  printf '%-26s %9d MB %10.1f %6d\n' "$label" $((rss / 1024)) "$wall" "$status"
}
measure "compare A B" "$B" compare "$A" "$C"
measure "report A B" "$B" report "$A" "$C" -o "$OUT/compare.html"
measure "report A" "$B" report "$C" -o "$OUT/run.html"
measure "merge A B" "$B" merge "$A" "$C" -o "$OUT/merged"
