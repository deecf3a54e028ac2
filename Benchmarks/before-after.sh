#!/usr/bin/env bash
# Two builds of stampede side by side, in one sitting, alternating round by round (the machine
# is shared and noisy): the end-to-end figures a refactoring must keep.
#   1. chat echo, closed model, 10 clients, embedded target: delivered/s, client-loop CPU µs per delivery;
#   2. hub echo (JSON over WebSockets), 50 clients, embedded hub: messages/s, client-loop CPU µs per message;
#   3. REST ETag polling, 50 connections, one loop, against one `stampede serve --rest` (the NEW
#      build's, shared by both): responses/s, process CPU µs per response;
#   4. a chat reconnect storm (full jitter), 2,000 clients: recovery p50/p99/p100, accounting.
# Everything on 127.0.0.1, each run bounded (10 s of messages). Scenarios are the NEW tree's.
# Usage: Benchmarks/before-after.sh OLD_BINARY NEW_BINARY [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$(realpath "$1"); NEW=$(realpath "$2"); ROUNDS=${3:-2}
OUT=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
summary() { echo "$(grep '^results: ' "$1" | tail -1 | cut -d' ' -f2-)/summary.json"; }

$NEW serve --rest --port 0 --change-rate 0 --max-seconds 1800 > "$OUT/serve.txt" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q "listening on" "$OUT/serve.txt" && break; sleep 0.1; done
PORT=$(sed -n 's|listening on http://127.0.0.1:\([0-9]*\)/api.*|\1|p' "$OUT/serve.txt")
cat > "$OUT/poll.yaml" <<YAML
name: before-after-rest
workload: rest
target: http://127.0.0.1:$PORT/api
clients: 50
connect_rate: 10000
duration: 10s
drain: 2s
load_model: closed
think_time: 0s
rest:
  resources: [/items]
YAML
JITTER='{exponential: {initial: 1s, max: 30s, attempts: 10, jitter: full}}'
sed -e "s/^clients: .*/clients: 2000/" -e "s/^connect_rate: .*/connect_rate: 5000/" \
    -e "s/^reconnect: .*/reconnect: $JITTER/" scenarios/reconnect-storm.yaml > "$OUT/storm.yaml"

printf '%-6s %-4s %-10s %16s %14s %s\n' round build test "per second" "CPU µs/msg" "other"
for round in $(seq "$ROUNDS"); do
  for build in old new; do
    B=$OLD; [ $build = new ] && B=$NEW
    $B run Benchmarks/scenarios/chat-echo-max.yaml --clients 10 --quiet --results "$OUT" > "$OUT/chat.txt" 2>&1 || true
    S=$(summary "$OUT/chat.txt")
    printf '%-6s %-4s %-10s %16s %14s %s\n' "$round" $build chat-echo "$(field "$S" "round(d['messages']['throughput_per_s']['delivered'])")" \
      "$(field "$S" "d['generator']['cpu_us_per_delivered_message']")" "rtt p50 $(field "$S" "d['latency_us']['round_trip']['p50']") µs"
    $B run Benchmarks/scenarios/hub-echo-max.yaml --clients 50 --quiet --results "$OUT" > "$OUT/hub.txt" 2>&1 || true
    S=$(summary "$OUT/hub.txt")
    printf '%-6s %-4s %-10s %16s %14s %s\n' "$round" $build hub-echo "$(field "$S" "round(d['messages']['throughput_per_s']['delivered'])")" \
      "$(field "$S" "d['generator']['cpu_us_per_delivered_message']")" "rtt p50 $(field "$S" "d['latency_us']['round_trip']['p50']") µs"
    $B run "$OUT/poll.yaml" --loops 1 --quiet --results "$OUT" > "$OUT/rest.txt" 2>&1 || true
    S=$(summary "$OUT/rest.txt")
    printf '%-6s %-4s %-10s %16s %14s %s\n' "$round" $build rest-poll "$(field "$S" "round(d['rest']['responses_per_s'])")" \
      "$(field "$S" "round(d['generator']['process_cpu_s'] * 1e6 / max(1, sum(d['rest']['by_status'].values())), 2)")" \
      "304 share $(field "$S" "round(d['rest']['by_status'].get('304', 0) / max(1, sum(d['rest']['by_status'].values())), 4)")"
    $B run "$OUT/storm.yaml" --quiet --results "$OUT" > "$OUT/storm.txt" 2>&1 || true
    S=$(summary "$OUT/storm.txt")
    printf '%-6s %-4s %-10s %16s %14s %s\n' "$round" $build storm-2k "-" "-" \
      "$(field "$S" "'recovery ms p50 %s p99 %s p100 %s, accounted %s' % (d['storms'][0]['recovery_ms']['p50'], d['storms'][0]['recovery_ms']['p99'], d['storms'][0]['recovery_ms']['p100'], d['messages']['accounting_closed'])")"
  done
done
echo "chat/hub CPU: the client event loops' CPU per delivered message; REST: the whole process's CPU per response."
