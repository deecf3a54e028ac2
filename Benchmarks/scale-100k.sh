#!/usr/bin/env bash
# 100,000 chat connections on this box in one `stampede run`: the clients on worker processes,
# the server on several processes sharing one port. Two targets in turn:
#   embedded  — scenarios/chat-100k.yaml as it is (the run starts its own server processes);
#   serve     — the same against `stampede serve --processes 5` started here.
# Each: the ramp, a broadcast load, a 100 % reset storm at 20 s, drain; then the figures from
# summary.json, and RSS/CPU of the client and server processes sampled every second from /proc.
#
# Usage: Benchmarks/scale-100k.sh [CLIENTS] [embedded|serve|both]    (default 100000 both)
# Loopback only; every run bounded (the scenario's own timeouts, and `timeout` around it).
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-100000}
WHICH=${2:-both}
swift build -c release --product stampede 2>&1 | tail -1
BIN=$PWD/.build/release/stampede
OUT=$(mktemp -d /tmp/stampede-scale-XXXX)
echo "results under $OUT"

# Every second: the summed RSS (KiB) of client-side processes (stampede run/worker) and of
# server processes (stampede serve), their peaks, and CPU seconds at the end.
sample() {
    local log=$1
    while true; do
        ps -eo rss=,args= | awk '
            /stampede (run|worker)/ && !/awk/ { c += $1 }
            /stampede serve/ && !/awk/ { s += $1 }
            END { printf "%d %d\n", c, s }' >> "$log"
        sleep 1
    done
}

cpu_of() {  # total CPU seconds (user+sys, children waited for included) of processes matching $1, now
    local total=0
    for pid in $(pgrep -f "$1" || true); do
        read -r -a f < "/proc/$pid/stat" || continue
        total=$((total + f[13] + f[14]))
    done
    echo "$total"
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
c, m, g = s["connections"], s["messages"], s["generator"]
print(f"== {label}: {clients} clients")
print(f"  connected {c['connected']} of {clients} (peak open {c['peak_open']}), ramp {s['phases_s']['ramp_up']:.1f} s")
print(f"  messages sent {m['sent']} delivered {m['delivered']} lost {m['lost']} {m['lost_by_reason']}")
print(f"  fan-out expected {m['fanout_expected']} received {m['fanout_received']} missing {m['fanout_missing']}; accounting closed: {m['accounting_closed']}")
errs = {k: v for k, v in s['errors'].items() if v}
print(f"  errors by class: {errs or 'none'}")
print(f"  client processes: peak RSS {peak_c/2**20:.0f} MiB = {peak_c/max(1,c['peak_open']):.0f} B per connection; CPU {g['process_cpu_s']:.1f} s; peak {g['peak_cpu_percent']:.0f}% of a core")
print(f"  server processes: peak RSS {peak_s/2**20:.0f} MiB = {peak_s/max(1,c['peak_open']):.0f} B per connection")
for st in s["storms"]:
    r = st.get("recovery_ms") or st.get("recovery") or {}
    print(f"  storm {st['number']}: affected {st['affected']} recovered {st['recovered']} gave up {st['gave_up']}; time to reconnect: {json.dumps(st.get('time_to_connected_ms') or st.get('recovery_ms') or st)}"[:600])
print(f"  workers: {[(w['index'], w['clients'], w['lost']) for w in s['workers'] or []]}")
print(f"  partial: {s['partial']} {s['partial_reason'] or ''}")
PY
}

run_one() {
    local label=$1; shift
    local samples=$OUT/$label.samples
    sample "$samples" & local sampler=$!
    local status=0
    timeout 900 "$BIN" run scenarios/chat-100k.yaml --clients "$CLIENTS" --plain --results "$OUT/$label" "$@" \
        > "$OUT/$label.out" 2> "$OUT/$label.err" || status=$?
    kill $sampler 2>/dev/null || true
    echo "  (exit $status; stderr tail:)"; tail -4 "$OUT/$label.err" | sed 's/^/    /'
    local folder
    folder=$(sed -n 's/^results: //p' "$OUT/$label.out" | tail -1)
    [ -n "$folder" ] && report "$folder" "$samples" "$label"
}

if [ "$WHICH" = embedded ] || [ "$WHICH" = both ]; then
    run_one embedded
fi
if [ "$WHICH" = serve ] || [ "$WHICH" = both ]; then
    "$BIN" serve --port 0 --processes 5 --max-seconds 900 > "$OUT/serve.out" 2> "$OUT/serve.err" & SERVE=$!
    trap 'kill $SERVE 2>/dev/null || true' EXIT
    for _ in $(seq 100); do grep -q "listening on" "$OUT/serve.out" && break; sleep 0.1; done
    PORT=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$OUT/serve.out" | head -1)
    echo "stampede serve --processes 5 on port $PORT"
    run_one serve --target "ws://127.0.0.1:$PORT/chat"
    kill $SERVE; wait $SERVE 2>/dev/null || true
fi
