#!/usr/bin/env bash
# 100,000 chat connections on this box in one `stampede run`: the clients on worker processes,
# the server on several processes sharing one port. Two targets in turn:
#   embedded  — scenarios/chat-100k.yaml as it is (the run starts its own server processes);
#   serve     — the same against `stampede serve --processes $SERVE_PROCESSES` started here
#               (default 6: five cannot hold 100,000 under a 20,000-file limit per process, since
#               each also needs its listener, epoll, eventfd, timerfd and link descriptors).
# Each: the ramp, a broadcast load, a 100 % reset storm at 20 s, drain; then the figures from
# summary.json, and RSS/CPU of the client and server processes sampled every second from /proc.
#
#   hub       — Benchmarks/scenarios/hub-20k.yaml: 20,000 SignalR hub clients over WebSockets
#               (CLIENTS does not apply), RSS per connection.
#
# Usage: Benchmarks/scale-100k.sh [CLIENTS] [embedded|serve|both|hub]    (default 100000 both)
# Loopback only; every run bounded (the scenario's own timeouts, and `timeout` around it).
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-100000}
WHICH=${2:-both}
SERVE_PROCESSES=${SERVE_PROCESSES:-6}
swift build -c release --product stampede 2>&1 | tail -1
BIN=$PWD/.build/release/stampede
OUT=$(mktemp -d /tmp/stampede-scale-XXXX)
echo "results under $OUT"

# Every second: the summed RSS (KiB) of client-side processes (stampede run/worker) and of
# server processes (stampede serve), their peaks, and CPU seconds at the end.
sample() {
    local log=$1
    while true; do
        # RSS in KiB, and CPU seconds so far of the processes alive now (ps's cputime).
        ps -eo rss=,cputimes=,args= | awk '
            /stampede (run|worker)/ && !/awk/ { c += $1; cc += $2 }
            /stampede serve/ && !/awk/ { s += $1; sc += $2 }
            END { printf "%d %d %d %d\n", c, s, cc, sc }' >> "$log"
        sleep 1
    done
}

report() {
    local folder=$1 samples=$2 label=$3
    python3 - "$folder" "$samples" "$label" "$CLIENTS" <<'PY'
import json, sys
folder, samples, label, clients = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
s = json.load(open(folder + "/summary.json"))
rows = [tuple(map(int, l.split())) for l in open(samples) if l.strip()]
peak_c = max((r[0] for r in rows), default=0) * 1024
peak_s = max((r[1] for r in rows), default=0) * 1024
cpu_s = max((r[3] for r in rows if len(r) > 3), default=0)
c, m, g = s["connections"], s["messages"], s["generator"]
clients = s["scenario"]["clients"]
print(f"== {label}: {clients} clients")
print(f"  peak open {c['peak_open']} of {clients} ({c['connected']} connections made, storm reconnects included), ramp {s['phases_s']['ramp_up']:.1f} s")
print(f"  messages sent {m['sent']} delivered {m['delivered']} lost {m['lost']} {m['lost_by_reason']}")
print(f"  fan-out expected {m['fanout_expected']} received {m['fanout_received']} missing {m['fanout_missing']}; accounting closed: {m['accounting_closed']}")
errs = {k: v for k, v in s['errors'].items() if v}
print(f"  errors by class: {errs or 'none'}")
print(f"  client processes (coordinator + workers): peak RSS {peak_c/2**20:.0f} MiB = {peak_c/max(1,c['peak_open']):.0f} B per connection all in; "
      f"connected − before connecting: {g['rss_per_connection_bytes']:.0f} B per connection; CPU {g['process_cpu_s']:.1f} s; peak {g['peak_cpu_percent']:.0f}% of a core")
print(f"  server processes: peak RSS {peak_s/2**20:.0f} MiB = {peak_s/max(1,c['peak_open']):.0f} B per connection all in; CPU ≥ {cpu_s} s (sampled once a second)")
for st in s["storms"]:
    r = st.get("recovery_ms") or st.get("recovery") or {}
    print(f"  storm {st['number']}: affected {st['affected']} recovered {st['recovered']} gave up {st['gave_up']}; time to reconnect: {json.dumps(st.get('time_to_connected_ms') or st.get('recovery_ms') or st)}"[:600])
print(f"  workers: {[(w['index'], w['clients'], w['lost']) for w in s['workers'] or []]}")
print(f"  partial: {s['partial']} {s['partial_reason'] or ''}")
PY
}

run_one() {
    local label=$1 scenario=$2; shift 2
    local samples=$OUT/$label.samples
    sample "$samples" & local sampler=$!
    local status=0
    timeout 900 "$BIN" run "$scenario" --plain --results "$OUT/$label" "$@" \
        > "$OUT/$label.out" 2> "$OUT/$label.err" || status=$?
    kill $sampler 2>/dev/null || true
    echo "  (exit $status; stderr tail:)"; tail -4 "$OUT/$label.err" | sed 's/^/    /'
    local folder
    folder=$(sed -n 's/^results: //p' "$OUT/$label.out" | tail -1)
    [ -n "$folder" ] && report "$folder" "$samples" "$label"
}

if [ "$WHICH" = embedded ] || [ "$WHICH" = both ]; then
    run_one embedded scenarios/chat-100k.yaml --clients "$CLIENTS"
fi
if [ "$WHICH" = serve ] || [ "$WHICH" = both ]; then
    "$BIN" serve --port 0 --processes "$SERVE_PROCESSES" --max-seconds 900 > "$OUT/serve.out" 2> "$OUT/serve.err" & SERVE=$!
    trap 'kill $SERVE 2>/dev/null || true' EXIT
    for _ in $(seq 100); do grep -q "listening on" "$OUT/serve.out" && break; sleep 0.1; done
    PORT=$(sed -n 's|.*listening on ws://[^:]*:\([0-9]*\).*|\1|p' "$OUT/serve.out" | head -1)
    echo "stampede serve --processes $SERVE_PROCESSES on port $PORT"
    run_one serve scenarios/chat-100k.yaml --clients "$CLIENTS" --target "ws://127.0.0.1:$PORT/chat"
    kill $SERVE; wait $SERVE 2>/dev/null || true
fi
if [ "$WHICH" = hub ]; then
    run_one hub Benchmarks/scenarios/hub-20k.yaml
fi
