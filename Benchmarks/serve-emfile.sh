#!/usr/bin/env bash
# `stampede serve` at its descriptor limit (issue 25, item 3): the server runs with
# `ulimit -n FDS` (default 256) and CLIENTS (default 400) loopback clients connect and stay, so
# `accept` fails with EMFILE while the rest wait in the backlog. Measures the server's CPU over
# WINDOW seconds (default 5) from /proc/PID/stat (utime + stime), then closes every client and
# checks that a new one gets its WebSocket upgrade. Before the pause on EMFILE the server spun
# at 70–100 % of a core; now it retries every 100 ms. Everything on 127.0.0.1, bounded in time.
# Usage: Benchmarks/serve-emfile.sh [FDS] [CLIENTS] [WINDOW]
set -euo pipefail
cd "$(dirname "$0")/.."
FDS=${1:-256}; CLIENTS=${2:-400}; WINDOW=${3:-5}
[ -n "${STAMPEDE:-}" ] || swift build -c release --product stampede > /dev/null
B=${STAMPEDE:-$PWD/.build/release/stampede}
OUT=$(mktemp -d)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT
sh -c "ulimit -n $FDS && exec \"$B\" serve --port 0 --max-seconds $((WINDOW + 60))" > "$OUT/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -qs '^listening on' "$OUT/serve.log" && break; sleep 0.1; done
PORT=$(grep '^listening on' "$OUT/serve.log" | sed -E 's/.*:([0-9]+)\/.*/\1/')
python3 - "$PORT" "$SERVER" "$CLIENTS" "$WINDOW" <<'PY'
import os, socket, sys, time
port, pid, clients, window = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
tick = os.sysconf("SC_CLK_TCK")
def cpu_ticks():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime, stime
held = []
for _ in range(clients):
    s = socket.socket(); s.settimeout(2)
    s.connect(("127.0.0.1", port)); held.append(s)
time.sleep(1)  # the server accepts what fits, then meets EMFILE
t0, c0 = time.monotonic(), cpu_ticks()
time.sleep(window)
t1, c1 = time.monotonic(), cpu_ticks()
print(f"{clients} clients held, server CPU over {t1 - t0:.1f} s: {(c1 - c0) / tick / (t1 - t0) * 100:.1f} % of a core")
for s in held: s.close()
time.sleep(0.5)
ok = False
for _ in range(50):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(b"GET /chat HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        ok = s.recv(64).startswith(b"HTTP/1.1 101"); s.close()
        if ok: break
    except OSError:
        pass
    time.sleep(0.1)
print("after the clients left, a new client was " + ("served (101)" if ok else "NOT served"))
PY
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
grep '^served:' "$OUT/serve.log"
