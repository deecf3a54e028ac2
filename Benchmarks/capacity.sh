#!/usr/bin/env bash
# `stampede capacity` against servers whose limit is known or measured by hand, in one sitting
# (this machine is shared and noisy). Everything on 127.0.0.1, every run bounded in time.
#
#   1. the reference server with a known capacity (`serve --max-rate RATE`): the answer must be
#      within 5 % of RATE; prints the answer, the knee, every step and the wall time;
#   2. a third-party server (Python `websockets` broadcast, Tests/peers/chat_server.py): capacity's
#      answer, then a manual sweep with `stampede run` at fixed rates around it (same step length,
#      same SLO read from each run's round_trip p99), to check that the two agree;
#   3. the generator as the limit: one client loop (--loops 1) against the reference server with
#      no --max-rate: the search must end "generator_limited" and report no knee.
#
# Usage: Benchmarks/capacity.sh [RATE] [STEP] [WARMUP]     (defaults 20000, 10s, 5s)
#        PARTS="1 3" Benchmarks/capacity.sh …                  (only some parts)
#        CONFIRMATIONS=3 Benchmarks/capacity.sh …              (--confirmations for the Python server)
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-20000}
STEP=${2:-10s}
WARMUP=${3:-5s}
SLO="round_trip p(99) < 50ms"
PARTS=${PARTS:-1 2 3}
CONFIRMATIONS=${CONFIRMATIONS:-1}
part() { [[ " $PARTS " == *" $1 "* ]]; }
source Benchmarks/capacity-common.sh
swift build -c release --product stampede > /dev/null
B=$PWD/.build/release/stampede
OUT=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT
scenario() { chat_scenario scenarios/capacity-chat.yaml "$1" "$2"; }

if part 1; then
echo "== 1. reference server, serve --max-rate $RATE (steps of $WARMUP warm-up + $STEP)"
"$B" serve --port 0 --max-rate "$RATE" --max-seconds 3000 > "$OUT/ref.serve" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q '^listening on ' "$OUT/ref.serve" 2> /dev/null && break; sleep 0.1; done
PORT=$(sed -n 's|^listening on ws://127.0.0.1:\([0-9]*\)/chat|\1|p' "$OUT/ref.serve")
scenario "$PORT" "$OUT/ref.yaml"
START=$(date +%s)
"$B" capacity "$OUT/ref.yaml" --vary message.rate --slo "$SLO" --from 2000 --to 64000 --step-duration "$STEP" --warmup "$WARMUP" \
  --results "$OUT/results" > "$OUT/ref.out" 2> "$OUT/ref.err" || true
FOLDER=$(sed -n 's/^results: //p' "$OUT/ref.out")
capacity_steps "$FOLDER/capacity.json"
ANSWER=$(json_field "$FOLDER/capacity.json" "d['max_sustainable']")
python3 -c "a=$ANSWER if '$ANSWER' != 'None' else 0; print(f'  answer {a:,.0f} vs --max-rate {$RATE:,}: {100*(a-$RATE)/$RATE:+.1f} % ' + ('(within 5 %)' if abs(a-$RATE) <= 0.05*$RATE else '(OUTSIDE 5 %)'))"
echo "  capacity run took $(( $(date +%s) - START )) s"

fi

if part 2; then
echo "== 2. Python websockets broadcast server (Tests/peers/chat_server.py --fanout broadcast)"
start_python_chat 3000
scenario "$PYPORT" "$OUT/py.yaml"
START=$(date +%s)
"$B" capacity "$OUT/py.yaml" --vary message.rate --slo "$SLO" --from 1000 --to 64000 --step-duration "$STEP" --warmup "$WARMUP" \
  --confirmations "$CONFIRMATIONS" \
  --results "$OUT/results" > "$OUT/py.out" 2> "$OUT/py.err" || true
FOLDER=$(sed -n 's/^results: //p' "$OUT/py.out")
capacity_steps "$FOLDER/capacity.json"
echo "  capacity run took $(( $(date +%s) - START )) s"
# The sweep is centred on the answer, or on the lowest failing load when none was confirmed.
PYANSWER=$(json_field "$FOLDER/capacity.json" "d['max_sustainable'] or d['first_failing'] or d['held_at_least'] or 0")

echo "== 2b. manual sweep against the same server: stampede run at fixed rates, $WARMUP + $STEP each, twice each;"
echo "   judged as capacity judges a step: the SLO over the window after the warm-up (a windowed threshold)"
sweep "$OUT/py.yaml" "$PYANSWER" "$WARMUP" "$STEP" "${SLO#round_trip }" 2 0.80 0.90 0.95 1.00 1.05 1.10 1.20
fi

if part 3; then
echo "== 3. the generator as the limit: --loops 1 against serve with no --max-rate"
"$B" serve --port 0 --max-seconds 3000 > "$OUT/free.serve" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q '^listening on ' "$OUT/free.serve" 2> /dev/null && break; sleep 0.1; done
FREEPORT=$(sed -n 's|^listening on ws://127.0.0.1:\([0-9]*\)/chat|\1|p' "$OUT/free.serve")
scenario "$FREEPORT" "$OUT/free.yaml"
START=$(date +%s)
set +e
"$B" capacity "$OUT/free.yaml" --vary message.rate --slo "$SLO" --from 8000 --to 512000 --step-duration "$STEP" --warmup "$WARMUP" \
  --loops 1 --results "$OUT/results" > "$OUT/free.out" 2> "$OUT/free.err"
echo "  exit status $?"
set -e
FOLDER=$(sed -n 's/^results: //p' "$OUT/free.out")
capacity_steps "$FOLDER/capacity.json"
echo "  capacity run took $(( $(date +%s) - START )) s"
fi
