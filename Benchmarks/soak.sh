#!/usr/bin/env bash
# A soak: 10,000 chat clients at a steady rate for HOURS against `stampede serve` in its own
# process, sampled every 5 s and reported per minute:
#   generator and server RSS (MiB), their CPU per message, the worst timer lag of the
#   generator's loops (from its live metrics, `stampede_timer_lag_seconds`), messages sent and
#   deliveries (own echoes + fan-out received) in the minute.
# At the end: RSS growth after the first 5 minutes, and CPU per message and timer lag in the
# first and last tenth of the run, so a leak or a slow-down shows as a trend.
#
# Usage: Benchmarks/soak.sh HOURS            (fractions allowed: 0.1 is six minutes)
#   CLIENTS=10000 RATE=2 (messages per second across all clients; each is broadcast to every
#   client, so the deliveries per second are RATE × CLIENTS), B=path/to/stampede (no build),
#   OUT=folder (default: a fresh one under /tmp).
# Loopback only; bounded: the run's own duration, and `timeout` around it.
set -euo pipefail
cd "$(dirname "$0")/.."
HOURS=${1:?usage: Benchmarks/soak.sh HOURS}
CLIENTS=${CLIENTS:-10000}
RATE=${RATE:-2}
SECS=$(python3 -c "import sys; s = round(float(sys.argv[1]) * 3600); print(s if s >= 60 else sys.exit('HOURS must be at least 1 minute'))" "$HOURS")
if [ -z "${B:-}" ]; then swift build -c release --product stampede 2>&1 | tail -1; B=.build/release/stampede; fi
OUT=${OUT:-$(mktemp -d /tmp/stampede-soak-XXXX)}
mkdir -p "$OUT"
echo "soak: $CLIENTS clients, $RATE messages/s, ${SECS}s; output under $OUT"

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SERVER=; RUN=
trap '[ -n "$RUN" ] && kill -INT $RUN 2>/dev/null; [ -n "$SERVER" ] && kill $SERVER 2>/dev/null; wait 2>/dev/null' EXIT
"$B" serve --port "$PORT" > "$OUT/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break; sleep 0.1; done

cat > "$OUT/soak.yaml" <<YAML
name: soak
workload: chat
target: ws://127.0.0.1:$PORT/chat
clients: $CLIENTS
connect_rate: 1000
connect_timeout: 30s
duration: ${SECS}s
message:
  rate: $RATE
  size: 128
load_model: open
drain: 10s
YAML
timeout -k 30 -s INT $(( SECS + CLIENTS / 1000 + 180 )) "$B" run "$OUT/soak.yaml" --metrics-port 0 --quiet \
    --results "$OUT/results" > "$OUT/run.log" 2> "$OUT/run.err" &
RUN=$!
for _ in $(seq 100); do grep -q '^metrics: ' "$OUT/run.err" 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/^metrics: //p' "$OUT/run.err" | head -1)
GEN=$(pgrep -P "$RUN" | head -1 || true)   # the generator itself, not `timeout`
[ -n "$GEN" ] || { echo "no generator process under timeout ($RUN)" >&2; exit 1; }
[ -n "$URL" ] || { echo "no metrics endpoint: $(cat "$OUT/run.err")" >&2; exit 1; }

python3 - "$GEN" "$SERVER" "$URL" "$OUT/soak.csv" <<'PY'
import os, sys, time, urllib.request
run, server, url, csv_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
hz = os.sysconf("SC_CLK_TCK")

def proc(pid):
    """(CPU seconds, RSS MiB) of a process, or None once it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f: st = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        return (int(st[11]) + int(st[12])) / hz, rss / 1024
    except (OSError, StopIteration):
        return None

def scrape():
    try:
        text = urllib.request.urlopen(url, timeout=2).read().decode()
    except OSError:
        return None
    v = {}
    for line in text.splitlines():
        if line.startswith("#"): continue
        parts = line.rsplit(" ", 1)
        if len(parts) == 2 and "reason=" not in parts[0] and "class=" not in parts[0]:
            v[parts[0].split("{", 1)[0]] = float(parts[1])
    return v

out = open(csv_path, "w")
out.write("minute,phase_open,gen_rss_mib,server_rss_mib,sent,deliveries,gen_cpu_us_per_delivery,server_cpu_us_per_delivery,max_timer_lag_ms\n")
print(f"{'min':>4} {'open':>6} {'gen MiB':>8} {'srv MiB':>8} {'sent':>6} {'deliv':>9} {'gen µs/d':>9} {'srv µs/d':>9} {'lag ms':>7}", flush=True)
minute, last, lag = 0, None, 0.0
start = time.monotonic()
while True:
    g, s, m = proc(run), proc(server), scrape()
    if g is None or m is None:
        break
    lag = max(lag, m.get("stampede_timer_lag_seconds", 0) * 1000)
    now = time.monotonic()
    if now - start >= (minute + 1) * 60:
        minute += 1
        sent = m.get("stampede_messages_sent_total", 0)
        deliv = m.get("stampede_messages_delivered_total", 0) + m.get("stampede_fanout_received_total", 0)
        cur = (g[0], s[0] if s else 0, sent, deliv)
        if last:
            dg, ds, dsent, dd = (cur[i] - last[i] for i in range(4))
            gus = f"{dg * 1e6 / dd:.2f}" if dd else ""
            sus = f"{ds * 1e6 / dd:.2f}" if dd else ""
            openc = int(m.get("stampede_connections_open", 0))
            row = [minute, openc, f"{g[1]:.1f}", f"{s[1]:.1f}" if s else "", int(dsent), int(dd), gus, sus, f"{lag:.1f}"]
            out.write(",".join(map(str, row)) + "\n"); out.flush()
            print(f"{minute:>4} {openc:>6} {row[2]:>8} {row[3]:>8} {row[4]:>6} {row[5]:>9} {gus:>9} {sus:>9} {row[8]:>7}", flush=True)
        last, lag = cur, 0.0
    time.sleep(5)
PY
wait $RUN || true
RUN=
echo "run: $(tail -1 "$OUT/run.log")"

python3 - "$OUT/soak.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["gen_cpu_us_per_delivery"]]
# Minutes in the message phase only: every client connected and messages flowing.
steady = [r for r in rows if int(r["deliveries"]) > 0]
if len(steady) < 7:
    sys.exit("soak: too few steady minutes to judge (need 7)")
def f(r, k): return float(r[k]) if r[k] else 0.0
base = next(r for r in steady if int(r["minute"]) >= 5) if any(int(r["minute"]) >= 5 for r in steady) else steady[0]
last = steady[-1]
tenth = max(1, len(steady) // 10)
first, final = steady[:tenth], steady[-tenth:]
avg = lambda rs, k: sum(f(r, k) for r in rs) / len(rs)
for who, k in (("generator", "gen_rss_mib"), ("server", "server_rss_mib")):
    b, e = f(base, k), f(last, k)
    print(f"{who} RSS: {b:.1f} MiB at minute {base['minute']}, {e:.1f} MiB at minute {last['minute']}: {100 * (e - b) / b:+.1f} %")
for who, k in (("generator", "gen_cpu_us_per_delivery"), ("server", "server_cpu_us_per_delivery")):
    print(f"{who} CPU per delivery: {avg(first, k):.2f} µs (first {tenth} min), {avg(final, k):.2f} µs (last {tenth} min)")
print(f"timer lag: worst per minute {avg(first, 'max_timer_lag_ms'):.1f} ms (first {tenth} min, mean), "
      f"{avg(final, 'max_timer_lag_ms'):.1f} ms (last {tenth} min, mean), worst of all {max(f(r, 'max_timer_lag_ms') for r in steady):.1f} ms")
PY
