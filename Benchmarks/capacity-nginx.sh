#!/usr/bin/env bash
# `stampede capacity --vary clients` against nginx (Debian's) proxying chat WebSockets to
# `stampede serve --processes 4`: how many connections does the proxy hold? Everything on
# 127.0.0.1, every process bounded in time (--max-seconds, timeout) and stopped by the trap.
#
# nginx runs one worker with `worker_connections WORKER_CONNECTIONS` (default 16384) and
# `worker_rlimit_nofile 20000`, so the limit met is its connection table, not the open-files
# limit. Each proxied WebSocket takes two of its connections (the client's and the upstream's)
# and the listener one: about (16384 − 1) / 2 = 8,191 clients. The scenario
# (Benchmarks/scenarios/capacity-connections.yaml) sends no chat messages: each client pings once
# a second and the SLO is the ping's round trip, so that the connections are the limit (a chat
# broadcast reaches every client, so its round trip grows with the clients). Prints every step, the verdict, the answer, the
# time taken, the failure reasons of the lowest failing step with the errors and upgrade statuses
# its summary.json counted, and the "worker_connections are not enough" lines of nginx's error.log.
#
# Usage: Benchmarks/capacity-nginx.sh [FROM] [TO] [STEP] [WARMUP]   (defaults 1000 16000 10s 5s)
#        SLO="ping_round_trip p(99) < 1s" WORKER_CONNECTIONS=16384 Benchmarks/capacity-nginx.sh …
set -euo pipefail
cd "$(dirname "$0")/.."
FROM=${1:-1000}
TO=${2:-16000}
STEP=${3:-10s}
WARMUP=${4:-5s}
SLO=${SLO:-ping_round_trip p(99) < 1s}
WORKER_CONNECTIONS=${WORKER_CONNECTIONS:-16384}
MAX_SECONDS=${MAX_SECONDS:-3000}   # nginx and the server stop by themselves after this
source Benchmarks/capacity-common.sh
bash scripts/ensure-packages.sh nginx
swift build -c release --product stampede > /dev/null
B=$PWD/.build/release/stampede
OUT=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT

"$B" serve --processes 4 --port 0 --max-seconds "$MAX_SECONDS" > "$OUT/serve.txt" 2>&1 &
PIDS+=($!)
wait_for_line "$OUT/serve.txt" '^listening on ' 300 || { echo "serve did not start: $(cat "$OUT/serve.txt")" >&2; exit 1; }
SERVE_PORT=$(sed -n 's|^listening on ws://127.0.0.1:\([0-9]*\)/chat|\1|p' "$OUT/serve.txt")

# nginx's own folder: config, pid, error log and temp paths. `$` of nginx variables escaped.
N=$OUT/nginx
mkdir -p "$N"
nginx_conf() {  # $1: nginx's port
  cat << CONF
worker_processes 1;
worker_rlimit_nofile 20000;
pid $N/nginx.pid;
error_log $N/error.log warn;
events { worker_connections $WORKER_CONNECTIONS; }
http {
    access_log off;
    client_body_temp_path $N/client_body;
    proxy_temp_path $N/proxy;
    fastcgi_temp_path $N/fastcgi;
    uwsgi_temp_path $N/uwsgi;
    scgi_temp_path $N/scgi;
    map \$http_upgrade \$connection_upgrade { default upgrade; '' close; }
    server {
        listen 127.0.0.1:$1 backlog=4096;
        location / {
            proxy_pass http://127.0.0.1:$SERVE_PORT;
            proxy_http_version 1.1;
            proxy_set_header Host \$http_host;
            proxy_set_header Upgrade \$http_upgrade;
            proxy_set_header Connection \$connection_upgrade;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
        }
    }
}
CONF
}
# A free port is found by binding and releasing it, so another process may take it first: a few tries.
NGINX_PORT=
for _ in 1 2 3; do
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  nginx_conf "$port" > "$N/nginx.conf"
  timeout "$MAX_SECONDS" /usr/sbin/nginx -p "$N/" -e "$N/error.log" -c "$N/nginx.conf" -g 'daemon off;' 2>> "$N/stderr" &
  NGINX_PID=$!
  for _ in $(seq 100); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2> /dev/null && { NGINX_PORT=$port; break; }
    kill -0 "$NGINX_PID" 2> /dev/null || break
    sleep 0.1
  done
  [ -n "$NGINX_PORT" ] && break
  kill "$NGINX_PID" 2> /dev/null || true
done
[ -n "$NGINX_PORT" ] || { echo "nginx did not start: $(cat "$N/stderr" "$N/error.log" 2> /dev/null)" >&2; exit 1; }
PIDS+=("$NGINX_PID")   # timeout passes the trap's SIGTERM on: nginx's fast shutdown
chat_scenario Benchmarks/scenarios/capacity-connections.yaml "$NGINX_PORT" "$OUT/connections.yaml"

echo "== nginx $(/usr/sbin/nginx -v 2>&1 | sed 's|.*/||') (1 worker, worker_connections $WORKER_CONNECTIONS) on 127.0.0.1:$NGINX_PORT -> serve --processes 4 on $SERVE_PORT"
echo "   capacity --vary clients --slo \"$SLO\" --from $FROM --to $TO, steps of $WARMUP warm-up + $STEP"
START=$(date +%s)
set +e
"$B" capacity "$OUT/connections.yaml" --vary clients --slo "$SLO" --from "$FROM" --to "$TO" \
  --step-duration "$STEP" --warmup "$WARMUP" --results "$OUT/results" > "$OUT/capacity.out" 2> "$OUT/capacity.err"
CODE=$?
set -e
TOOK=$(( $(date +%s) - START ))
FOLDER=$(sed -n 's/^results: //p' "$OUT/capacity.out")
[ -n "$FOLDER" ] || { echo "capacity wrote no results (exit $CODE): $(tail -5 "$OUT/capacity.err")" >&2; exit 1; }
capacity_steps "$FOLDER/capacity.json"
echo "  exit $CODE, answer $(json_field "$FOLDER/capacity.json" "d['max_sustainable']") clients (held at least $(json_field "$FOLDER/capacity.json" "d['held_at_least']")), took $TOOK s"

echo "== the lowest failing step: why it failed, and what its summary.json counted"
python3 - "$FOLDER" << 'PY'
import json, os, sys
folder = sys.argv[1]
d = json.load(open(os.path.join(folder, "capacity.json")))
failed = [s for s in d["steps"] if s["outcome"] == "fail"]
if not failed:
    print("  no step failed"); sys.exit()
s = min(failed, key=lambda s: (s["load"], s["number"]))
print(f'  step {s["number"]}: {s["load"]:,.0f} clients, {s["open"]:,} open in the window')
for r in s["reasons"]:
    print(f'    reason: {r}')
path = s["results_folder"]
path = path if os.path.isabs(path) else os.path.join(folder, path)
if os.path.exists(os.path.join(path, "summary.json")):
    m = json.load(open(os.path.join(path, "summary.json")))
    c = m["connections"]
    print(f'    connections: {", ".join(f"{k} {v}" for k, v in c.items() if isinstance(v, (int, float)) and not isinstance(v, bool))}')
    print(f'    errors: {({k: v for k, v in m["errors"].items() if v}) or "none"}')
    print(f'    upgrade statuses: {m["upgrade_statuses"] or "none"}')
    if m.get("connect_errors"):
        print(f'    connect errors: {m["connect_errors"]}')
else:
    print(f'    (no summary.json in {path})')
PY
echo "== nginx error.log"
LOG=$N/error.log
echo "  \"worker_connections are not enough\": $(grep -c 'worker_connections are not enough' "$LOG" || true) lines"
grep 'worker_connections are not enough' "$LOG" | sed -E 's/^[0-9\/: ]+//; s/[0-9]+#[0-9]+: (\*[0-9]+ )?//; s/, client: .*//' | sort | uniq -c | sort -rn | head -5 | sed 's/^/   /' || true
echo "  other lines: $(grep -vc 'worker_connections are not enough' "$LOG" || true)"
grep -v 'worker_connections are not enough' "$LOG" | sed -E 's/^[0-9\/: ]+//; s/[0-9]+#[0-9]+: (\*[0-9]+ )?//; s/, client: .*//' | sort | uniq -c | sort -rn | head -5 | sed 's/^/   /' || true
