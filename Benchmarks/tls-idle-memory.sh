#!/usr/bin/env bash
# Server memory per idle connection, plain vs TLS: `stampede serve` (chat) on 127.0.0.1, then
# N (default 2000) Python `websockets` clients connect (ws://, then wss:// with a
# --tls-self-signed certificate), upgrade, and stay idle. Prints the serve process's VmRSS
# before and after, per connection, and (when gdb is installed) the bytes malloc has handed out
# (mallinfo2, read by attaching gdb), which allocator slack does not blur.
#   Benchmarks/tls-idle-memory.sh [N]      (B=path/to/stampede to skip the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
if [ -z "${B:-}" ]; then swift build -c release --product stampede > /dev/null; B=.build/release/stampede; fi
PY=$(Tests/peers/ensure-venv.sh websockets | tail -n1)
OUT=$(mktemp -d)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT
[ "$(ulimit -n)" -ge $((N + 200)) ] || ulimit -n $((N + 200))

printf '%-6s %6s %12s %12s %14s %16s\n' mode clients "rss before" "rss after" "rss/conn KiB" "malloc/conn KiB"
for mode in plain tls; do
  flags=(); [ $mode = tls ] && flags=(--tls-self-signed --tls-cert-out "$OUT/cert.pem")
  $B serve --port 0 --max-seconds 300 "${flags[@]}" > "$OUT/serve.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do grep -qs '^listening on' "$OUT/serve.log" && break; sleep 0.1; done
  url=$(sed -nE 's/^listening on ([^ ]+).*/\1/p' "$OUT/serve.log")
  "$PY" - "$SERVER" "$url" "$N" "$OUT/cert.pem" <<'PY'
import asyncio, shutil, ssl, subprocess, sys
import websockets

pid, url, n, ca = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
assert url.split("/")[2].startswith(("127.0.0.1:", "[::1]:")), url  # loopback only

def rss_kib():
    return next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))

def malloc_bytes():
    if not shutil.which("gdb"):
        return None
    out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex",
                          "print (size_t)((struct mallinfo2 (*)(void))mallinfo2)().uordblks"],
                         capture_output=True, text=True, timeout=60).stdout
    return next((int(l.split("=")[1]) for l in out.splitlines() if l.startswith("$1")), None)

async def main():
    kw = dict(open_timeout=30, ping_interval=None, proxy=None, max_queue=1)
    if url.startswith("wss:"):
        kw["ssl"] = ssl.create_default_context(cafile=ca)
    # Some connections first, so structures the server makes once exist before the baseline.
    warm = [await websockets.connect(url, **kw) for _ in range(20)]
    await asyncio.sleep(1)
    rss0, heap0 = rss_kib(), malloc_bytes()
    gate, conns = asyncio.Semaphore(100), []
    async def one():
        async with gate:
            conns.append(await websockets.connect(url, **kw))
    await asyncio.gather(*(one() for _ in range(n)))
    await asyncio.sleep(2)
    rss1, heap1 = rss_kib(), malloc_bytes()
    per_heap = f"{(heap1 - heap0) / n / 1024:.2f}" if heap0 is not None and heap1 is not None else "-"
    print(f"{url.split(':')[0]:<6} {n:>7} {rss0:>9} KiB {rss1:>9} KiB {(rss1 - rss0) / n:>14.2f} {per_heap:>16}")
    for c in conns + warm:
        c.transport.abort()

asyncio.run(main())
PY
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
done
