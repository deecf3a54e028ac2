#!/usr/bin/env bash
# Resident memory per idle connection, chat, SignalR hub and Socket.IO over WebSockets: one `stampede run`
# opens N idle connections (default 10,000) to a `stampede serve` child process (the target
# must run in another process: one process may open 20,000 files), holds them for the
# scenario's 5 s, and closes them. Prints, for each workload:
#   - the client's RSS per connection: summary.json's generator section, (RSS once every client
#     connected − RSS before the first connect) / connections;
#   - the server's RSS per connection: its VmRSS before and at its peak while the clients held
#     their connections, / connections.
# Loopback only, bounded in time. Run it when `uptime` shows a low load.
#   Benchmarks/memory-per-connection.sh [N]      (B=path/to/stampede to skip the release build)
#   WORKLOADS="hub" Benchmarks/memory-per-connection.sh 15000   # one of them only (chat, hub, socketio)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
WORKLOADS=${WORKLOADS:-"chat hub"}
[ "$N" -ge 1 ] && [ "$N" -le 19000 ] || { echo "N must be from 1 to 19000 (one process's descriptors), got $N" >&2; exit 2; }
if [ -z "${B:-}" ]; then swift build -c release --product stampede > /dev/null; B=.build/release/stampede; fi
OUT=$(mktemp -d)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$1" "$2"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

printf '%-6s %13s %16s %16s %20s %16s\n' workload connected "client B/conn" "server B/conn" "client RSS KiB" "server RSS KiB"
for w in $WORKLOADS; do
  case $w in
    chat) flags=(); scenario=Benchmarks/scenarios/hold-idle.yaml ;;
    hub) flags=(--hub); scenario=Benchmarks/scenarios/hub-hold-idle.yaml ;;
    socketio) flags=(--socketio); scenario=Benchmarks/scenarios/socketio-hold-idle.yaml ;;
    *) echo "unknown workload '$w' (chat, hub or socketio)" >&2; exit 2 ;;
  esac
  $B serve --port 0 --max-seconds 600 "${flags[@]}" > "$OUT/serve.txt" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do grep -qs '^listening on' "$OUT/serve.txt" && break; sleep 0.1; done
  url=$(sed -nE 's/^listening on ([^ ]+).*/\1/p' "$OUT/serve.txt")
  case $url in http://127.0.0.1:*|ws://127.0.0.1:*) ;; *) echo "not a loopback target: '$url'" >&2; exit 1 ;; esac
  s0=$(rss_kib "$SERVER"); s1=$s0
  $B run "$scenario" --target "$url" --clients "$N" --quiet --results "$OUT" > "$OUT/run.txt" 2>&1 &
  RUN=$!
  # The server's peak while the clients hold their connections (sampled every 0.2 s).
  while kill -0 "$RUN" 2>/dev/null; do
    r=$(rss_kib "$SERVER" || echo 0); [ "$r" -gt "$s1" ] && s1=$r
    sleep 0.2
  done
  wait "$RUN" || true
  S="$(grep '^results: ' "$OUT/run.txt" | tail -1 | cut -d' ' -f2-)/summary.json"
  [ -f "$S" ] || { cat "$OUT/run.txt" >&2; exit 1; }
  c=$(field "$S" "d['connections']['connected']")
  printf '%-6s %13s %16s %16s %20s %16s\n' "$w" "$c/$N" \
    "$(field "$S" "round(d['generator']['rss_per_connection_bytes'] or 0)")" \
    "$(( (s1 - s0) * 1024 / (c > 0 ? c : 1) ))" \
    "$(field "$S" "str(d['generator']['rss_before_connect_bytes']//1024) + '→' + str(d['generator']['rss_connected_bytes']//1024)")" \
    "$s0→$s1"
  kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; SERVER=""
done
