#!/usr/bin/env bash
# The compare gate's error rates on this machine: PAIRS A/A pairs (same build, same scenario,
# back to back: no change expected) and PAIRS A/B pairs (B: the reference server holds every
# broadcast 2 ms, `stampede serve --delay 2ms`: slower expected), each pair judged by
# `stampede compare BASELINE CURRENT --fail-on slower`. Prints every pair's verdict, then the
# counts. Each run: 50 chat clients, 100 messages/s, 10 s against `stampede serve` in its own
# process (a fresh one per run), everything on 127.0.0.1.
# Usage: Benchmarks/gate-error-rates.sh [PAIRS] [extra compare flags, e.g. --tolerance 5%]
# With GATE_KEEP=DIR, each pair's compare JSON is kept there (aa-1.json, ab-1.json, …) for
# re-judging the same pairs under another rule.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-20}
shift || true
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
OUT=$(mktemp -d)
SERVE_PID=
cleanup() { [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2> /dev/null; rm -rf "$OUT"; }
trap cleanup EXIT
cat > "$OUT/gate.yaml" <<'YAML'
name: gate
target: ws://127.0.0.1:8765/chat
workload: chat
clients: 50
duration: 10s
message:
  rate: 100
  size: 128
connect_timeout: 10s
YAML

run() {  # serve flags... → prints the results folder
  "$B" serve --port 0 --max-seconds 120 "$@" > "$OUT/serve.log" 2>&1 &
  SERVE_PID=$!
  local port=
  for _ in $(seq 100); do
    port=$(sed -n 's|^listening on ws://127.0.0.1:\([0-9]*\)/chat.*|\1|p' "$OUT/serve.log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "serve did not start: $(cat "$OUT/serve.log")" >&2; exit 1; }
  "$B" run "$OUT/gate.yaml" --quiet --results "$OUT/runs" --target "ws://127.0.0.1:$port/chat" > "$OUT/run.txt" 2>&1 || true
  kill "$SERVE_PID" 2> /dev/null || true
  wait "$SERVE_PID" 2> /dev/null || true
  SERVE_PID=
  grep '^results: ' "$OUT/run.txt" | tail -1 | cut -d' ' -f2-
}

declare -A AA AB
judge() {  # kind, index, baseline, current → prints one line, counts the verdict
  local status=0
  "$B" compare "$3" "$4" --format json --fail-on slower "${EXTRA[@]}" > "$OUT/compare.json" || status=$?
  if [ -n "${GATE_KEEP:-}" ]; then mkdir -p "$GATE_KEEP"; cp "$OUT/compare.json" "$GATE_KEEP/$(echo "$1" | tr -d / | tr 'A-Z' 'a-z')-$2.json"; fi
  local line
  line=$(python3 - "$OUT/compare.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = {x["metric"]: x for x in d["metrics"]}
rt = m.get("round_trip")
p = lambda side, q="p50": f'{rt[side]["percentiles"][q]["value"] / 1000:.3f}' if rt else "?"
print(f'{d["verdict"]}|round_trip p50 {p("baseline")} -> {p("current")}, p99 {p("baseline", "p99")} -> {p("current", "p99")} ms; ' +
      ", ".join(f'{k} {v["verdict"]}' for k, v in m.items() if v["gated"]))
PY
)
  local verdict=${line%%|*}
  printf '%s %2d  %-15s exit %-3s %s\n' "$1" "$2" "$verdict" "$status" "${line#*|}"
  if [ "$1" = A/A ]; then AA[$verdict]=$(( ${AA[$verdict]:-0} + 1 )); else AB[$verdict]=$(( ${AB[$verdict]:-0} + 1 )); fi
}

EXTRA=("$@")
echo "gate error rates: $PAIRS A/A and $PAIRS A/B pairs, $(date -u +%Y-%m-%dT%H:%MZ), compare flags: --fail-on slower ${EXTRA[*]}"
for i in $(seq "$PAIRS"); do
  a=$(run); b=$(run)
  judge A/A "$i" "$a" "$b"
  a=$(run); b=$(run --delay 2ms)
  judge A/B "$i" "$a" "$b"
  rm -rf "$OUT/runs"
done
summary() {  # label, expected verdict, name of the associative array
  local -n counts=$3
  local others=
  for k in "${!counts[@]}"; do [ "$k" != "$2" ] && others+=" $k ${counts[$k]},"; done
  echo "$1 \"$2\": ${counts[$2]:-0}/$PAIRS${others:+ (others:${others%,})}"
}
summary "A/A" "no change" AA
summary "A/B (delay 2ms)" "slower" AB
