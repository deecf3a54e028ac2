#!/usr/bin/env bash
# Capacity searches on held connections (issue 26), against reference servers with a known limit:
#   1. connections: `stampede capacity --vary clients` over worker processes against
#      `stampede serve --processes 6 --max-connections CONNECTIONS` (idle clients pinging every
#      10 s; SLO ping_round_trip p(99) < 1s): the answer, the steps, the time, and whether the
#      server saw reconnects (the search's run counts them; the server counts every upgrade).
#   2. rate: `--vary message.rate` at CLIENTS held clients against `stampede serve --processes 2
#      --echo --max-rate RATE` (SLO round_trip p(99) < 50ms).
# Everything on 127.0.0.1, every process bounded in time.
# Usage: Benchmarks/capacity-held.sh [CONNECTIONS] [CLIENTS] [RATE] [STEP] [WARMUP]
#   (defaults 60000 20000 20000 15s 5s; PARTS=1 or PARTS=2 runs one part).
set -euo pipefail
cd "$(dirname "$0")/.."
CONNECTIONS=${1:-60000}; CLIENTS=${2:-20000}; RATE=${3:-20000}; STEP=${4:-15s}; WARMUP=${5:-5s}; PARTS=${PARTS:-1 2}
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
OUT=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done; sleep 1; rm -rf "$OUT"' EXIT
source Benchmarks/capacity-common.sh

serve() {  # serve NAME ARGS...: starts `stampede serve` on a free port; sets PORT
  local name=$1; shift
  $B serve --port 0 --max-seconds 3000 "$@" > "$OUT/$name.txt" 2>&1 &
  PIDS+=($!); SERVE_PID=$!
  wait_for_line "$OUT/$name.txt" "listening on" || { cat "$OUT/$name.txt"; exit 1; }
  PORT=$(sed -n 's|.*127.0.0.1:\([0-9]*\)/chat|\1|p' "$OUT/$name.txt" | head -1)
}

search() {  # search NAME SCENARIO ARGS...: runs the capacity search and prints its steps
  local name=$1 scenario=$2; shift 2
  chat_scenario "$scenario" "$PORT" "$OUT/$name.yaml"
  local t0=$SECONDS
  set +e
  $B capacity "$OUT/$name.yaml" --step-duration "$STEP" --warmup "$WARMUP" --results "$OUT/$name" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local status=$?
  set -e
  local folder; folder=$(sed -n 's/^results: //p' "$OUT/$name.out")
  grep -E "^step .* at |^cool-down|^run:" "$OUT/$name.err" || true
  capacity_steps "$folder/capacity.json" | tail -3
  echo "exit $status, $((SECONDS - t0)) s; $(grep '^capacity:' "$OUT/$name.out")"
  echo "run summary: reconnected $(json_field "$folder/run/summary.json" "d['counters'].get('reconnected', 0)"), workers $(json_field "$folder/run/summary.json" "len(d.get('workers') or [])")"
}

if [[ " $PARTS " == *" 1 "* ]]; then
  echo "== 1. connections: serve --processes 6 --max-connections $CONNECTIONS; search --vary clients from 10,000"
  serve connections --processes 6 --max-connections "$CONNECTIONS"
  search connections scenarios/capacity-connections.yaml --vary clients --slo "ping_round_trip p(99) < 1s" \
    --from 10000 --to $((CONNECTIONS * 4 / 3))
  kill -INT "$SERVE_PID"; sleep 2
  grep -E "refused|upgrad|connections" "$OUT/connections.txt" | tail -3
fi

if [[ " $PARTS " == *" 2 "* ]]; then
  echo "== 2. rate at $CLIENTS held clients: serve --processes 2 --echo --max-rate $RATE; search --vary message.rate"
  serve rate --processes 2 --echo --max-rate "$RATE"
  search rate Benchmarks/scenarios/capacity-held-rate.yaml --vary message.rate --slo "round_trip p(99) < 50ms" \
    --from $((RATE / 8)) --to $((RATE * 2))
  kill -INT "$SERVE_PID"; sleep 2
  grep -E "upgrad|connections" "$OUT/rate.txt" | tail -2
fi
