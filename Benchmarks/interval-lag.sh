#!/usr/bin/env bash
# The generator's own timer lag and the light-load tail, two builds side by side in one sitting
# (alternating round by round: the machine is shared). Before 2026-11-24 each client loop
# cleared its measurements at every one-second boundary while the engine still shared their
# storage, which copied every histogram on the loop thread; now the loop swaps in a cleared set.
# Scenario: 2 chat clients, RATE messages/s, 10 s, against one `stampede serve` (the NEW build's)
# in its own process. Prints per run: max timer lag, round_trip p50/p99/max, saturated.
# Usage: Benchmarks/interval-lag.sh OLD_BINARY NEW_BINARY [ROUNDS] [RATE]    (defaults 3, 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$(realpath "$1"); NEW=$(realpath "$2"); ROUNDS=${3:-3}; RATE=${4:-1000}
OUT=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT
"$NEW" serve --port 0 --max-seconds 1800 > "$OUT/serve.txt" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q "listening on" "$OUT/serve.txt" && break; sleep 0.1; done
PORT=$(sed -n 's|listening on ws://127.0.0.1:\([0-9]*\)/chat|\1|p' "$OUT/serve.txt")
cat > "$OUT/lag.yaml" << YAML
name: interval-lag
target: ws://127.0.0.1:$PORT/chat
workload: chat
clients: 2
duration: 10s
message: {rate: $RATE, size: 64}
drain: 1s
YAML
for round in $(seq "$ROUNDS"); do
  for build in OLD NEW; do
    BIN=$OLD; [ "$build" = NEW ] && BIN=$NEW
    "$BIN" run "$OUT/lag.yaml" --quiet --results "$OUT/results" > "$OUT/run.txt" 2>&1 || true
    S="$(grep '^results: ' "$OUT/run.txt" | tail -1 | cut -d' ' -f2-)/summary.json"
    python3 - "$S" "$build" "$round" << 'PY'
import json, sys
d = json.load(open(sys.argv[1])); g = d["generator"]; rt = d["latency_us"]["round_trip"]
print(f'round {sys.argv[3]} {sys.argv[2]}: max timer lag {g["max_timer_lag_us"]/1000:6.2f} ms  '
      f'round_trip p50 {rt["p50"]:5} µs  p99 {rt["p99"]:6} µs  max {rt["max"]:6} µs  saturated {g["saturated"]}')
PY
  done
done
