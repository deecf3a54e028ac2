#!/usr/bin/env bash
# Abusive clients against `stampede serve`: for the chat server, the hub over WebSockets, the
# hub over Server-Sent Events and the REST target with pipelining, one client floods the server
# for SECONDS (default 60) and never reads what it is sent (reconnecting whenever it is
# dropped), while a normal client opens a new connection every second and times its upgrade
# (or its negotiate + SSE head, or its first REST answer). Tests/peers/abusive_client.py does
# both and samples the server's VmRSS every second. Everything on 127.0.0.1, bounded in time.
#
# The stated bound (README, `serve`): fixed + connections × (2 × --max-output-bytes + 2 MiB).
# Here fixed is the server's RSS before the abuse plus 32 MiB of allocator slack, and the
# connections at most 4 (the abuser's one or two, the probe, one being dropped).
# Usage: Benchmarks/abusive-clients.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
OUT=$(mktemp -d)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT
MAX_OUTPUT=$((4 << 20))

printf '%-9s %10s %10s %12s %12s %9s %10s\n' "server" "peak rss" "bound" "upgrade max" "upgrade p50" "dropped" "abuser reconnects"
run() {  # kind, serve flags...
  local kind=$1; shift
  $B serve --port 0 --admin-port 0 --max-seconds $((SECONDS_EACH + 30)) "$@" > "$OUT/$kind.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do grep -qs '^admin on' "$OUT/$kind.log" && break; sleep 0.1; done
  local port admin start_rss
  port=$(grep '^listening on' "$OUT/$kind.log" | sed -E 's/.*:([0-9]+)\/.*/\1/')
  admin=$(grep '^admin on' "$OUT/$kind.log" | sed -E 's/.*:([0-9]+)$/\1/')
  start_rss=$(awk '/VmRSS/ {print $2 * 1024}' "/proc/$SERVER/status")
  python3 Tests/peers/abusive_client.py --kind "$kind" --port "$port" --pid "$SERVER" --seconds "$SECONDS_EACH" > "$OUT/$kind.json"
  curl -s "http://127.0.0.1:$admin/status" > "$OUT/$kind.status"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
  python3 - "$OUT/$kind.json" "$OUT/$kind.status" "$start_rss" "$MAX_OUTPUT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
mib = 2 ** 20
bound = int(sys.argv[3]) + 32 * mib + 4 * (2 * int(sys.argv[4]) + 2 * mib)
ms = lambda v: "-" if v is None else f"{v:.1f} ms"
print(f"{r['kind']:<9} {r['peak_rss_bytes'] / mib:>6.0f} MiB {bound / mib:>6.0f} MiB {ms(r['upgrade_ms_max']):>12} "
      f"{ms(r['upgrade_ms_p50']):>12} {s['slowConsumersDropped']:>9} {r['abuser_reconnects']:>10}"
      + (f"  ({r['probe_failures']} probes failed)" if r['probe_failures'] else ""))
PY
}
run chat
run hub-ws --hub
run hub-sse --hub
run rest --rest --body-size 4096
echo "bound: RSS before + 32 MiB + 4 connections x (2 x $((MAX_OUTPUT >> 20)) MiB + 2 MiB); upgrade: a new connection's 101 (chat, hub-ws), negotiate + SSE head (hub-sse), first answer (rest)"
