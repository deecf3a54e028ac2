#!/usr/bin/env bash
# Hub clients side by side, in one run, against the same aiosignalr hub (PyPI; a real SignalR
# server): Stampede (JSON and MessagePack over WebSockets) and pysignalr, each invoking Echo
# in a closed loop from CLIENTS clients. Reports messages/s, generator CPU per message and
# resident memory per connection. Then Stampede alone against its embedded hub, where the
# server is not the bottleneck. Everything on 127.0.0.1, bounded in time.
# Usage: Benchmarks/hub-vs-pysignalr.sh [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-50}
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
AIO=$(bash Tests/peers/ensure-venv.sh aiosignalr | tail -1)
PYS=$(bash Tests/peers/ensure-venv.sh pysignalr | tail -1)
OUT=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$1" "$2"; }
summary() { echo "$(grep '^results: ' "$1" | tail -1 | cut -d' ' -f2-)/summary.json"; }

$AIO Tests/peers/signalr_hub_server.py --port 0 --max-seconds 600 > "$OUT/server.txt" 2> "$OUT/server.err" &
SERVER=$!
for _ in $(seq 100); do grep -q LISTENING "$OUT/server.txt" && break; sleep 0.1; done
PORT=$(sed -n 's/LISTENING //p' "$OUT/server.txt")
URL="http://127.0.0.1:$PORT/hub"

printf '%-30s %10s %14s %14s %14s\n' "client (vs aiosignalr, $N clients)" "msgs/s" "cpu µs/msg" "rss/conn KiB" "rtt p50"
for proto in json messagepack; do
  sed "s/protocol: json/protocol: $proto/" Benchmarks/scenarios/hub-echo-max.yaml > "$OUT/s.yaml"
  $B run "$OUT/s.yaml" --target "$URL" --clients "$N" --quiet --results "$OUT" > "$OUT/st-$proto.txt" 2>&1
  S=$(summary "$OUT/st-$proto.txt")
  printf '%-30s %10s %14s %14s %14s\n' "stampede $proto" \
    "$(field "$S" "round(d['messages']['throughput_per_s']['delivered'])")" \
    "$(field "$S" "round(d['generator']['process_cpu_s']*1e6/max(1,d['messages']['delivered']),1)")" \
    "$(field "$S" "round((d['generator']['rss_per_connection_bytes'] or 0)/1024,1)")" \
    "$(field "$S" "d['latency_us']['round_trip']['p50']")µs"
done

# pysignalr: each client invokes Echo M times, one after another (its own closed loop).
M=200
for proto in json messagepack; do
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/time-$proto" "$PYS" Tests/peers/signalr_clients.py --url "$URL" --transport websockets \
    --protocol "$proto" --clients "$N" --messages "$M" --scenario echo --timeout 300 > "$OUT/py-$proto.json" 2> "$OUT/py-$proto.err" || true
  read -r wall user sys maxrss < "$OUT/time-$proto"
  /usr/bin/time -f "%M" -o "$OUT/time1-$proto" "$PYS" Tests/peers/signalr_clients.py --url "$URL" --transport websockets \
    --protocol "$proto" --clients 1 --messages 1 --scenario echo --timeout 60 > /dev/null 2>&1 || true
  base=$(cat "$OUT/time1-$proto")
  python3 - "$N" "$M" "$wall" "$user" "$sys" "$maxrss" "$base" "$proto" "$OUT/py-$proto.json" <<'PY'
import json, sys
n, m, wall, user, sys_, rss, base, proto, path = sys.argv[1:]
n, m = int(n), int(m); wall, user, sys_ = float(wall), float(user), float(sys_)
ok = json.loads(open(path).read().strip().splitlines()[-1]).get("ok")
msgs = n * m
print(f"{'pysignalr ' + proto + ('' if ok else ' (NOT ok)'):30} {msgs / wall:10.0f} {(user + sys_) * 1e6 / msgs:14.1f} {(int(rss) - int(base)) / max(1, n - 1):14.1f} {'-':>14}")
PY
done
echo "(pysignalr msgs/s include its connect time; cpu = whole process user+sys / messages)"
kill $SERVER 2>/dev/null || true

echo
echo "== stampede against its embedded hub ($N clients, closed loop; server shares the 2 cores)"
for proto in json messagepack; do
  sed "s/protocol: json/protocol: $proto/" Benchmarks/scenarios/hub-echo-max.yaml > "$OUT/s.yaml"
  $B run "$OUT/s.yaml" --clients "$N" --quiet --results "$OUT" > "$OUT/emb-$proto.txt" 2>&1 || true
  S=$(summary "$OUT/emb-$proto.txt")
  echo "$proto: $(field "$S" "round(d['messages']['throughput_per_s']['delivered'])") msgs/s, client loops $(field "$S" "d['generator']['cpu_us_per_delivered_message']") µs/msg, rtt p50 $(field "$S" "d['latency_us']['round_trip']['p50']") µs p99 $(field "$S" "d['latency_us']['round_trip']['p99']") µs"
done
