#!/usr/bin/env bash
# `stampede serve --processes P` holding TOTAL idle chat connections from R plain `stampede run`
# processes (each TOTAL/R clients, at most 19,000, from its own source address 127.0.0.(i+1) so
# the ephemeral ports of one address do not run out), all at once on 127.0.0.1, bounded in time.
# Reports: connections per run, how the kernel spread them over the server processes (admin
# /status), server RSS per connection (VmRSS of every server process, summed, before and at the
# peak), the supervisor's own RSS, server CPU, and ramp-up times.
# Usage: Benchmarks/serve-processes.sh [TOTAL] [PROCESSES] [RUNS]   (default 30000 2 2)
set -euo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-30000}
P=${2:-2}
R=${3:-2}
EACH=$((TOTAL / R))
[ "$EACH" -le 19000 ] || { echo "TOTAL/RUNS must be at most 19000 (one process's open files)" >&2; exit 2; }
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
OUT=$(mktemp -d)
SERVE_PID=
trap '[ -n "$SERVE_PID" ] && kill $SERVE_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$OUT"' EXIT

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$1" "$2"; }
rss_kib() { local t=0; for p in "$@"; do t=$((t + $(awk '/VmRSS/ {print $2}' /proc/$p/status))); done; echo $t; }
cpu_ticks() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo $t; }

$B serve --processes "$P" --port 0 --admin-port 0 --max-seconds 300 > "$OUT/serve.txt" 2>&1 &
SERVE_PID=$!
for _ in $(seq 300); do grep -q '^admin on' "$OUT/serve.txt" && break; sleep 0.1; done
PORT=$(sed -n 's|^listening on ws://127.0.0.1:\([0-9]*\)/chat|\1|p' "$OUT/serve.txt")
ADMIN=$(sed -n 's|^admin on http://127.0.0.1:\([0-9]*\)|\1|p' "$OUT/serve.txt")
PIDS=$(sed -n 's/^processes: .*(pids \([0-9, ]*\)).*/\1/p' "$OUT/serve.txt" | tr -d ,)
RSS0=$(rss_kib $PIDS)
CPU0=$(cpu_ticks $PIDS)
echo "== $TOTAL idle chat connections: $R stampede run processes x $EACH -> serve --processes $P (port $PORT, pids $PIDS)"

RUNS=()
for i in $(seq 1 "$R"); do
  sed -e "s/^name: .*/name: hold-$i/" -e "s/^duration: .*/duration: 20s/" Benchmarks/scenarios/hold-idle.yaml > "$OUT/hold-$i.yaml"
  echo "source_addresses: [127.0.0.$((i + 1))]" >> "$OUT/hold-$i.yaml"
  $B run "$OUT/hold-$i.yaml" --target "ws://127.0.0.1:$PORT/chat" --clients "$EACH" --quiet --results "$OUT" > "$OUT/run-$i.txt" 2>&1 &
  RUNS+=($!)
done
PEAK=$RSS0
SPREAD=
while kill -0 "${RUNS[@]}" 2>/dev/null; do
  r=$(rss_kib $PIDS); [ "$r" -gt "$PEAK" ] && PEAK=$r
  s=$(curl -s --max-time 2 "http://127.0.0.1:$ADMIN/status" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['open'], [p['open'] for p in d['perProcess']])" 2>/dev/null || true)
  [ -n "$s" ] && [ "${s%% *}" -ge "${SPREAD%% *}" ] 2>/dev/null && SPREAD=$s
  [ -z "$SPREAD" ] && SPREAD=$s
  sleep 0.5
done
for pid in "${RUNS[@]}"; do wait "$pid" || true; done
CPU1=$(cpu_ticks $PIDS)
for i in $(seq 1 "$R"); do
  S=$(grep '^results: ' "$OUT/run-$i.txt" | tail -1 | cut -d' ' -f2-)/summary.json
  echo "run $i: connected $(field "$S" "d['connections']['connected']") of $EACH (failed $(field "$S" "d['connections']['failed']")), ramp-up $(field "$S" "d['phases_s']['ramp_up']") s, client RSS per connection $(field "$S" "round(d['generator']['rss_per_connection_bytes'] or 0)") B, errors $(field "$S" "{k: v for k, v in d['errors'].items() if v} or 'none'")"
done
echo "open at the peak (total, per server process): $SPREAD"
echo "server RSS: $RSS0 KiB -> $PEAK KiB over $P processes = $(( (PEAK - RSS0) * 1024 / TOTAL )) bytes per connection"
echo "supervisor RSS: $(rss_kib $SERVE_PID) KiB; server CPU for the whole run: $(( (CPU1 - CPU0) * 10 )) ms"
