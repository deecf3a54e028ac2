#!/usr/bin/env bash
# SIGTERM → exit time of `stampede run` in each state a run can be in: ramping up, sending,
# draining (against a server that never echoes, so the drain has something to wait for), and a
# REST run whose polls are always overdue (5,000 clients at the shortest interval, 1 ms).
# Each row: the seconds from the signal to the process's exit, the exit status (130 expected),
# and whether summary.json was written, marked partial, with the accounting closed. The
# requirement is an exit within 2 s. Everything on 127.0.0.1, every run bounded in time.
# Usage: Benchmarks/stop-latency.sh [--debug]   (--debug: use the debug build, no release build)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--debug" ]]; then B=.build/debug/stampede; else swift build -c release --product stampede > /dev/null; B=.build/release/stampede; fi
OUT=$(mktemp -d)
SILENT_PID=
trap '[[ -n "$SILENT_PID" ]] && kill "$SILENT_PID" 2>/dev/null; rm -rf "$OUT"' EXIT

# A WebSocket server that upgrades and then never answers: the drain waits for echoes in vain.
python3 Tests/peers/silent_ws.py --max-seconds 300 > "$OUT/silent.txt" &
SILENT_PID=$!
for _ in $(seq 100); do grep -q LISTENING "$OUT/silent.txt" 2>/dev/null && break; sleep 0.1; done
SILENT_PORT=$(awk '/LISTENING/ {print $2}' "$OUT/silent.txt")

scenario() {  # name, clients, connect rate, target, extra lines
  printf 'name: %s\ntarget: %s\nworkload: chat\nclients: %s\nconnect_rate: %s\nduration: 60s\nmessage:\n  rate: 200\n  size: 64\ndrain: 30s\n%s\n' \
    "$1" "$4" "$2" "$3" "${5:-}" > "$OUT/$1.yaml"
}
scenario ramp-up 3000 300 embedded
scenario messages 1000 1000 embedded
scenario drain 200 1000 "ws://127.0.0.1:$SILENT_PORT/chat"
# The shortest interval the validator allows, for far more polls than two loops can send: every
# poll timer is overdue, as with the 1 µs interval older versions accepted.
printf 'name: rest-overdue\ntarget: embedded\nworkload: rest\nclients: 5000\nconnect_rate: 5000\nduration: 60s\nrest:\n  interval: 1ms\n  resources: [{path: /items}]\n' > "$OUT/rest-overdue.yaml"

printf '%-34s %9s %6s %8s %8s %10s\n' "state at SIGTERM" "exit (s)" "status" "summary" "partial" "accounted"
measure() {  # label, scenario, stderr pattern that marks the state, extra seconds to wait in it
  local log="$OUT/$2.log" res="$OUT/results-$2"
  "$B" run "$OUT/$2.yaml" --plain --results "$res" > "$OUT/$2.out" 2> "$log" &
  local pid=$!
  for _ in $(seq 600); do grep -q -- "$3" "$log" 2>/dev/null && break; sleep 0.05; done
  sleep "$4"
  local t0 t1 status=0
  t0=$(date +%s.%N)
  kill -TERM "$pid"
  wait "$pid" || status=$?
  t1=$(date +%s.%N)
  local summary
  summary="$(find "$res" -name summary.json 2>/dev/null | head -1)"
  python3 - "$1" "$t0" "$t1" "$status" "$summary" <<'PY'
import json, sys
label, t0, t1, status, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
d = json.load(open(path)) if path else None
print(f"{label:<34} {t1 - t0:>9.3f} {status:>6} {'yes' if d else 'NO':>8} "
      f"{('yes' if d['partial'] else 'no') if d else '-':>8} {('yes' if d['messages']['accounting_closed'] else 'NO') if d else '-':>10}")
PY
}
measure "ramp-up (3,000 chat clients)" ramp-up "] ramp-up" 1
measure "messages (1,000 chat clients)" messages "] messages" 2
measure "drain (200 clients, no echoes)" drain "] drain" 1
measure "REST polls overdue (5,000 × 1 ms)" rest-overdue "] messages" 2
