#!/usr/bin/env bash
# Socket.IO load generators side by side, in one sitting, against the same python-socketio server
# (AsyncServer on aiohttp, Tests/peers/socketio_server.py, restarted for each generator):
#   - Stampede (`workload: socketio`),
#   - python-socketio AsyncClients (Tests/peers/socketio_clients.py),
#   - Locust's SocketIOUser (Tests/peers/locust_socketio.py),
#   - the floor: Benchmarks/floor/socketio_floor_client.c (C, epoll, one thread, no parsing beyond
#     frame lengths and a packet's first bytes), so the figures say what any client pays here.
# Each generator: CLIENTS clients over WebSocket join room-{client % (CLIENTS/2)} (rooms of two),
# then together emit RATE `say` events per second with ack for SECONDS; the server sends `said` to
# both clients of the room. Reported per generator: clients connected, acks, generator CPU per
# acknowledged emit, resident memory per idle connection ((RSS with every client connected and
# idle − RSS before any) / clients), ack latency p50/p99. Everything on 127.0.0.1, bounded in time.
# Usage: Benchmarks/socketio-vs-python.sh [CLIENTS] [RATE] [SECONDS]
#   SKIP_STAMPEDE=1: the Python generators only (no Swift build); B=path/to/stampede: that binary, no build.
#   LOOPS=K: Stampede with --loops K (default: its own choice; 1 is one thread, as each Python
#   generator and the floor are). SKIP_FLOOR=1: no C floor (it needs gcc).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
N=${1:-500}
RATE=${2:-500}
SECS=${3:-15}
ROOMS=$(( N / 2 > 0 ? N / 2 : 1 ))
SPY=$(bash Tests/peers/ensure-venv.sh socketio | tail -1)
LPY=$(bash Tests/peers/ensure-venv.sh locust | tail -1)
OUT=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; rm -rf "$OUT"' EXIT

start_server() {
  $SPY Tests/peers/socketio_server.py --port 0 --max-seconds 600 > "$OUT/server.txt" 2> "$OUT/server.err" &
  SERVER=$!
  for _ in $(seq 100); do grep -q LISTENING "$OUT/server.txt" && break; sleep 0.1; done
  PORT=$(sed -n 's/LISTENING //p' "$OUT/server.txt")
}
stop_server() {
  # The server's own CPU over the whole run (utime + stime in clock ticks), to see which side was busy.
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' /proc/$SERVER/stat > "$OUT/server-cpu-$1" 2>/dev/null || true
  kill $SERVER 2>/dev/null || true
  wait $SERVER 2>/dev/null || true
  SERVER=
  tail -1 "$OUT/server.txt" > "$OUT/server-$1.json"
}
# row NAME CONNECTED ACKS CPU_S RSS_BEFORE_KIB RSS_CONNECTED_KIB P50_MS P99_MS
row() {
  python3 - "$N" "$@" <<'PY'
import sys
n, name, conn, acks, cpu, before, connected, p50, p99 = sys.argv[1:]
acks, cpu = int(acks), float(cpu)
per_ack = f"{cpu * 1e6 / acks:.0f}" if acks else "-"
rss = f"{(float(connected) - float(before)) / int(n):.1f}"
print(f"{name:34} {conn:>9} {acks:>8} {per_ack:>12} {rss:>14} {p50:>9} {p99:>9}")
PY
}

printf '%-34s %9s %8s %12s %14s %9s %9s\n' "generator ($N clients, $RATE/s, ${SECS}s)" connected acks "cpu µs/ack" "rss KiB/conn" "p50 ms" "p99 ms"

# --- Stampede --------------------------------------------------------------------------------
if [ -z "${SKIP_STAMPEDE:-}" ]; then
  if [ -z "${B:-}" ]; then swift build -c release --product stampede > /dev/null; B=.build/release/stampede; fi
  start_server
  cat > "$OUT/sio.yaml" <<YAML
name: socketio-bench
workload: socketio
target: http://127.0.0.1:$PORT
clients: $N
connect_rate: 500
duration: ${SECS}s
message: {rate: $RATE}
socketio:
  path: /socket.io/
  namespace: /
  transports: [websocket]
  connect:
    - emit: {event: join, args: ["room-{client%$ROOMS}"], ack: true}
  emit: {event: say, args: [{room: "room-{client%$ROOMS}", text: "{stamp}"}], ack: true}
  receive: {event: said, stamp: "\$[0].text"}
YAML
  # Bounded: connects at 500/s, the message phase, the drain, and a margin.
  LOOPFLAG=${LOOPS:+--loops $LOOPS}
  timeout -k 10 -s INT $(( N / 500 + SECS + 60 )) "$B" run "$OUT/sio.yaml" $LOOPFLAG --quiet --results "$OUT" > "$OUT/st.txt" 2>&1 || true
  S="$( (grep '^results: ' "$OUT/st.txt" || true) | tail -1 | cut -d' ' -f2-)/summary.json"
  if [ -f "$S" ]; then
    python3 - "$S" "$N" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2]); g = d["generator"]
ack = d.get("latency_us", {}).get("ack") or {}
acks = ack.get("count") or d.get("counters", {}).get("acks_received", 0)
cpu = g["process_cpu_s"]
rss = (g.get("rss_per_connection_bytes") or 0) / 1024
per = f"{cpu * 1e6 / acks:.0f}" if acks else "-"
conn = d.get("connections", {}).get("connected", "?")
p50 = f"{ack['p50'] / 1000:.2f}" if ack.get("p50") is not None else "-"
p99 = f"{ack['p99'] / 1000:.2f}" if ack.get("p99") is not None else "-"
print(f"{'stampede (whole process)':34} {conn:>9} {acks:>8} {per:>12} {rss:>14.1f} {p50:>9} {p99:>9}")
PY
  else
    echo "stampede: no summary (is workload: socketio built?): $(tail -3 "$OUT/st.txt" | tr '\n' ' ')"
  fi
  stop_server stampede
  # The same clients holding their connections with no emit: the whole process's CPU without the
  # emits, so (CPU of the run above − this) / acks is Stampede's CPU over the emit window alone,
  # as the Python rows measure themselves.
  start_server
  sed -e "s/^message: .*/message: {rate: 0}/" -e "s|^target: .*|target: http://127.0.0.1:$PORT|" "$OUT/sio.yaml" > "$OUT/sio-idle.yaml"
  timeout -k 10 -s INT $(( N / 500 + SECS + 60 )) "$B" run "$OUT/sio-idle.yaml" $LOOPFLAG --quiet --results "$OUT/idle" > "$OUT/st-idle.txt" 2>&1 || true
  I="$( (grep '^results: ' "$OUT/st-idle.txt" || true) | tail -1 | cut -d' ' -f2-)/summary.json"
  if [ -f "$S" ] && [ -f "$I" ]; then
    python3 - "$S" "$I" "$N" <<'PY'
import json, sys
d, idle, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
acks = (d.get("latency_us", {}).get("ack") or {}).get("count") or 0
cpu = d["generator"]["process_cpu_s"] - idle["generator"]["process_cpu_s"]
per = f"{cpu * 1e6 / acks:.0f}" if acks else "-"
rss = (idle["generator"].get("rss_per_connection_bytes") or 0) / 1024
print(f"{'stampede (emit window: − idle run)':34} {idle['connections']['connected']:>9} {acks:>8} {per:>12} {rss:>14.1f} {'-':>9} {'-':>9}")
PY
  fi
  stop_server stampede-idle
fi

# --- the C floor -------------------------------------------------------------------------------
if [ -z "${SKIP_FLOOR:-}" ]; then
  gcc -O2 -o "$OUT/floor" Benchmarks/floor/socketio_floor_client.c
  start_server
  timeout -k 5 $(( N / 100 + SECS + 30 )) "$OUT/floor" "$PORT" "$N" "$RATE" "$SECS" > "$OUT/floor.json" 2> "$OUT/floor.err" || true
  python3 - "$OUT/floor.json" "$N" <<'PY' || echo "floor: $(tail -2 "$OUT/floor.err" | tr '\n' ' ')"
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); n = int(sys.argv[2])
ok = "" if d["acks"] == d["emits"] else f" ({d['emits'] - d['acks']} unacked)"
print(f"{'C floor (emit window)' + ok:34} {n:>9} {d['acks']:>8} {d['cpu_us_per_ack']:>12.0f} {'-':>14} {'-':>9} {'-':>9}")
PY
  stop_server floor
fi

# --- python-socketio AsyncClients --------------------------------------------------------------
start_server
$SPY Tests/peers/socketio_clients.py --url "http://127.0.0.1:$PORT" --transports websocket --clients "$N" \
  --rooms "$ROOMS" --rate "$RATE" --duration "$SECS" --drain 10 > "$OUT/py.json" 2> "$OUT/py.err" || true
eval "$(python3 - "$OUT/py.json" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(f"C={d['connected']} A={d['acks']} CPU={d['cpu_s']['emit']} RB={d['rss_kib']['before']} RC={d['rss_kib']['connected']} "
      f"P50={d['ack_ms']['p50']} P99={d['ack_ms']['p99']} OK={d['ok']}")
PY
)"
row "python-socketio AsyncClient$([ "$OK" = True ] || echo ' (NOT ok)')" "$C" "$A" "$CPU" "$RB" "$RC" "$P50" "$P99"
stop_server asyncclient

# --- Locust SocketIOUser -------------------------------------------------------------------------
start_server
SPAWN=$(( N / 100 + 1 ))
PACING=$(python3 -c "print($N / $RATE)")
( cd "$OUT" && SIO_URL="http://127.0.0.1:$PORT" SIO_PACING="$PACING" SIO_ROOMS="$ROOMS" SIO_TRANSPORTS=websocket \
    SIO_REPORT="$OUT/locust.json" timeout $(( SPAWN + SECS + 60 )) "$(dirname "$LPY")/locust" \
    -f "$ROOT/Tests/peers/locust_socketio.py" --headless -u "$N" -r 100 -t "$(( SPAWN + 2 + SECS ))s" \
    --only-summary --skip-log --stop-timeout 5 > "$OUT/locust.out" 2> "$OUT/locust.err" ) || true
if [ -f "$OUT/locust.json" ]; then
  eval "$(python3 - "$OUT/locust.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"C={d['connected']} A={d['acks']} F={d['failures']} CPU={d['cpu_s']['emit']} RB={d['rss_kib']['before']} "
      f"RC={d['rss_kib']['connected']} P50={d['ack_ms']['p50']} P99={d['ack_ms']['p99']}")
PY
)"
  row "locust SocketIOUser$([ "$F" = 0 ] || echo " ($F failed)")" "$C" "$A" "$CPU" "$RB" "$RC" "$P50" "$P99"
else
  echo "locust: no report: $(tail -3 "$OUT/locust.err" | tr '\n' ' ')"
fi
stop_server locust

echo "(python rows: CPU of the emit window only, connects excluded; stampede: the whole process, connects included;"
echo " p50/p99: stampede and AsyncClient from the intended send time, Locust from the call)"
for g in stampede floor asyncclient locust; do
  [ -f "$OUT/server-$g.json" ] && echo "server after $g: cpu $(cat "$OUT/server-cpu-$g" 2>/dev/null) s, counts $(cat "$OUT/server-$g.json")"
done
