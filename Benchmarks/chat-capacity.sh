#!/usr/bin/env bash
# End-to-end figures for the foundation (README, Benchmarks/README.md):
#   1. connections one stampede process holds against a separate `stampede serve`, and the
#      resident memory per idle connection (client process; server process separately);
#   2. chat echo throughput against the embedded target (closed model, no think time):
#      messages/s sent and delivered, and generator CPU per delivered message.
# Everything runs on 127.0.0.1, each run bounded in time. Usage: Benchmarks/chat-capacity.sh [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
HOLD=${1:-19000}
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
OUT=$(mktemp -d)
trap 'kill $SERVE_PID 2>/dev/null || true; rm -rf "$OUT"' EXIT

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$1" "$2"; }
last_results() { grep '^results: ' "$1" | tail -1 | cut -d' ' -f2-; }

echo "== 1. holding $HOLD idle connections (client and server in separate processes)"
$B serve --port 0 --max-seconds 300 > "$OUT/serve.txt" &
SERVE_PID=$!
for _ in $(seq 50); do grep -q listening "$OUT/serve.txt" && break; sleep 0.1; done
PORT=$(sed -n 's|.*127.0.0.1:\([0-9]*\)/chat|\1|p' "$OUT/serve.txt")
SERVE_RSS0=$(awk '/VmRSS/ {print $2}' /proc/$SERVE_PID/status)
$B run Benchmarks/scenarios/hold-idle.yaml --target "ws://127.0.0.1:$PORT/chat" --clients "$HOLD" --quiet --results "$OUT" > "$OUT/hold.txt" &
RUN_PID=$!
# Sample the server's RSS while the clients hold their connections.
SERVE_RSS1=$SERVE_RSS0
while kill -0 $RUN_PID 2>/dev/null; do
  r=$(awk '/VmRSS/ {print $2}' /proc/$SERVE_PID/status); [ "$r" -gt "$SERVE_RSS1" ] && SERVE_RSS1=$r
  sleep 0.2
done
wait $RUN_PID || true
S=$(last_results "$OUT/hold.txt")/summary.json
echo "connected:                $(field "$S" "d['connections']['connected']") of $HOLD (failed $(field "$S" "d['connections']['failed']"))"
echo "client RSS per connection: $(field "$S" "round(d['generator']['rss_per_connection_bytes'] or 0)") bytes (before $(field "$S" "d['generator']['rss_before_connect_bytes']//1024") KiB, connected $(field "$S" "d['generator']['rss_connected_bytes']//1024") KiB)"
echo "server RSS per connection: $(( (SERVE_RSS1 - SERVE_RSS0) * 1024 / HOLD )) bytes (stampede serve: $SERVE_RSS0 KiB → $SERVE_RSS1 KiB)"
echo "ramp-up:                  $(field "$S" "d['phases_s']['ramp_up']") s at connect_rate 5000"
kill $SERVE_PID 2>/dev/null || true

echo
echo "== 2. chat echo, closed model, no think time, embedded target (10 s each)"
printf '%8s %12s %14s %14s %16s %12s %10s\n' clients sent/s delivered/s fanout/s "cpu µs/deliv" "rtt p50" "rtt p99"
for n in 1 10 100; do
  $B run Benchmarks/scenarios/chat-echo-max.yaml --clients $n --quiet --results "$OUT" > "$OUT/echo-$n.txt"
  S=$(last_results "$OUT/echo-$n.txt")/summary.json
  printf '%8s %12s %14s %14s %16s %12s %10s\n' $n \
    "$(field "$S" "round(d['messages']['throughput_per_s']['sent'])")" \
    "$(field "$S" "round(d['messages']['throughput_per_s']['delivered'])")" \
    "$(field "$S" "round(d['messages']['throughput_per_s']['fanout_received'])")" \
    "$(field "$S" "d['generator']['cpu_us_per_delivered_message']")" \
    "$(field "$S" "d['latency_us']['round_trip']['p50']")µs" \
    "$(field "$S" "d['latency_us']['round_trip']['p99']")µs"
done
echo "(cpu µs/deliv = client event-loop CPU / (own echoes + broadcasts received); the embedded server's CPU is not in it)"
