#!/usr/bin/env bash
# How repeatable is `stampede capacity` against a third-party server? The Python `websockets`
# broadcast server (Tests/peers/chat_server.py --fanout broadcast, as in Benchmarks/capacity.sh)
# searched SEARCHES times (default 3), each against a fresh server process, `--vary message.rate`,
# SLO round_trip p(99) < 50ms, scenarios/capacity-chat.yaml (2 clients, 64-byte messages); then a
# manual sweep with `stampede run` around the median answer (SHARES of it, default 0.8 … 1.2,
# same warm-up and step length, the SLO judged after the warm-up), against one more fresh server.
# Prints each search's answer, verdict, steps and time, the spread (max / min − 1) and whether it
# is within 10 %, and the sweep's table. Everything on 127.0.0.1, every process bounded in time.
#
# Usage: Benchmarks/capacity-websockets-py.sh [STEP] [WARMUP]   (defaults 10s 5s)
#        SEARCHES=3 FROM=1000 TO=64000 CONFIRMATIONS=1 SHARES="0.8 0.9 1.0 1.1 1.2" REPEATS=1 …
set -euo pipefail
cd "$(dirname "$0")/.."
STEP=${1:-10s}
WARMUP=${2:-5s}
SEARCHES=${SEARCHES:-3}
FROM=${FROM:-1000}
TO=${TO:-64000}
CONFIRMATIONS=${CONFIRMATIONS:-1}
SHARES=${SHARES:-0.8 0.9 1.0 1.1 1.2}
REPEATS=${REPEATS:-1}
CONDITION="p(99) < 50ms"
SLO="round_trip $CONDITION"
source Benchmarks/capacity-common.sh
swift build -c release --product stampede > /dev/null
B=$PWD/.build/release/stampede
OUT=$(mktemp -d)
PIDS=()
stop_servers() { for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; PIDS=(); }
trap 'stop_servers; rm -rf "$OUT"' EXIT

ANSWERS=()
for i in $(seq "$SEARCHES"); do
  start_python_chat 1500
  chat_scenario scenarios/capacity-chat.yaml "$PYPORT" "$OUT/py.yaml"
  echo "== search $i of $SEARCHES: a fresh Python websockets server on $PYPORT, --from $FROM --to $TO, steps of $WARMUP warm-up + $STEP"
  START=$(date +%s)
  set +e
  "$B" capacity "$OUT/py.yaml" --vary message.rate --slo "$SLO" --from "$FROM" --to "$TO" --step-duration "$STEP" --warmup "$WARMUP" \
    --confirmations "$CONFIRMATIONS" --results "$OUT/results" > "$OUT/py.out" 2> "$OUT/py.err"
  CODE=$?
  set -e
  TOOK=$(( $(date +%s) - START ))
  stop_servers
  FOLDER=$(sed -n 's/^results: //p' "$OUT/py.out")
  [ -n "$FOLDER" ] || { echo "capacity wrote no results (exit $CODE): $(tail -5 "$OUT/py.err")" >&2; exit 1; }
  capacity_steps "$FOLDER/capacity.json"
  # Only a confirmed answer (found) or the top of the range (above_range) is an answer to compare.
  A=$(json_field "$FOLDER/capacity.json" "d['max_sustainable'] if d['max_sustainable'] is not None else 'none'")
  echo "  search $i: exit $CODE, verdict $(json_field "$FOLDER/capacity.json" "d['verdict']"), answer $A, held at least $(json_field "$FOLDER/capacity.json" "d['held_at_least']"), $(json_field "$FOLDER/capacity.json" "len(d['steps'])") steps, $TOOK s"
  ANSWERS+=("$A")
done

echo "== the $SEARCHES answers"
MEDIAN=$(python3 - "${ANSWERS[@]}" << 'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1:] if x != "none"]
missing = len(sys.argv) - 1 - len(a)
note = f" ({missing} search(es) gave no answer, left out)" if missing else ""
if not a:
    print(f"  no search gave an answer{note}", file=sys.stderr); print(0); sys.exit()
m = statistics.median(a)
spread = max(a) / min(a) - 1
print(f'  answers {", ".join(f"{x:,.0f}" for x in a)} messages/s{note}; median {m:,.0f}; spread (max/min - 1) {spread*100:.1f} % '
      + ("(within 10 %)" if spread <= 0.10 else "(NOT within 10 %)"), file=sys.stderr)
print(round(m))
PY
)
[ "$MEDIAN" -gt 0 ] || exit 1

echo "== manual sweep around the median $MEDIAN/s: stampede run, $WARMUP + $STEP each, $REPEATS time(s) each, a fresh server;"
echo "   judged as capacity judges a step: round_trip $CONDITION over the window after the warm-up"
start_python_chat 1500
chat_scenario scenarios/capacity-chat.yaml "$PYPORT" "$OUT/py.yaml"
# shellcheck disable=SC2086 # SHARES is a list
sweep "$OUT/py.yaml" "$MEDIAN" "$WARMUP" "$STEP" "$CONDITION" "$REPEATS" $SHARES
