#!/usr/bin/env bash
# CPU per echoed message: the declared flow (`workload: websocket`, issue 22) vs the chat workload
# vs the C floor, against the same picows echo server (Tests/peers/picows_echo_server.py), in one
# sitting. The floor is shared/tools/floor_echo_client.c: one thread, epoll, one masked frame in
# flight per connection, nothing parsed but frame lengths, so its CPU per message is about the
# kernel's TCP work alone: the least any WebSocket client spends here.
#
# All three use CLIENTS connections for SECONDS seconds in a closed loop with no think time (send,
# wait for the echo, send again) on one thread: Stampede gets `--loops 1`, since the floor is one
# thread and a second loop would only add cross-loop wake-ups on 2 cores. Rounds alternate floor /
# chat / flow because the machine is shared and its speed drifts from minute to minute; the ratios
# are medians over the rounds.
#
# Stampede's figures from summary.json: client-loop CPU per delivered message (the event loop
# only) and whole-process CPU (user + sys, connect and drain included) per delivered message. The
# floor's figure is whole-process over its message phase, so the truth lies between the two.
#
# Everything on 127.0.0.1; every run bounded in time (the server exits by itself too).
# Usage: Benchmarks/flow-vs-floor.sh [CLIENTS] [SECONDS]
#   ROUNDS=3 (default), B=path/to/stampede to skip the release build,
#   FLOOR_SRC=path/to/floor_echo_client.c (default: ../shared/tools/ beside the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-50}
D=${2:-10}
ROUNDS=${ROUNDS:-3}
FLOOR_SRC=${FLOOR_SRC:-../shared/tools/floor_echo_client.c}
[ -f "$FLOOR_SRC" ] || { echo "no floor client source at $FLOOR_SRC (set FLOOR_SRC)" >&2; exit 2; }
if [ -z "${B:-}" ]; then swift build -c release --product stampede > /dev/null; B=.build/release/stampede; fi
PY=$(Tests/peers/ensure-venv.sh picows | tail -n1)

OUT=$(mktemp -d)
SERVER=""
cleanup() { if [ -n "$SERVER" ]; then kill "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; fi; rm -rf "$OUT"; }
trap cleanup EXIT

# Built fresh each time into the temp folder: the source lives outside the repository.
gcc -O2 -o "$OUT/floor" "$FLOOR_SRC"

# One server for every run, so all three see the same process (and its warmed-up state).
"$PY" Tests/peers/picows_echo_server.py --port 0 --max-seconds $(( ROUNDS * 3 * (D + 30) + 60 )) > "$OUT/server.txt" 2>&1 &
SERVER=$!
for _ in $(seq 150); do grep -q '^LISTENING' "$OUT/server.txt" && break; sleep 0.1; done
PORT=$(awk '/^LISTENING/ {print $2}' "$OUT/server.txt")
[ -n "$PORT" ] || { echo "echo server did not start:" >&2; cat "$OUT/server.txt" >&2; exit 1; }

# The chat workload: the echo server returns each client's own message, which is its round trip.
# size 131 is the floor's payload length.
cat > "$OUT/chat.yaml" <<YAML
name: flow-vs-floor-chat
workload: chat
target: ws://127.0.0.1:$PORT/chat
clients: $C
connect_rate: 10000
duration: ${D}s
drain: 2s
load_model: closed
think_time: 0s
message: {size: 131}
YAML

# The same conversation as a declared flow (scenarios/websocket-chat-flow.yaml's send and rule).
cat > "$OUT/flow.yaml" <<YAML
name: flow-vs-floor-flow
workload: websocket
target: ws://127.0.0.1:$PORT/echo
clients: $C
connect_rate: 10000
duration: ${D}s
drain: 2s
load_model: closed
think_time: 0s
websocket:
  send:
    - text: '{"message":"{stamp}","user":"{user}","userID":"{uuid}"}'
  replies:
    - name: echo
      match: {contains: '"message"'}
      stamp: \$.message
YAML

# Prints "msgs/s loop-µs/msg process-µs/msg delivered" from a run's summary.json.
stampede_figures() {
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m, g = d["messages"], d["generator"]
n = m["delivered"]
rate = m["throughput_per_s"]["delivered"]
loop = g.get("cpu_us_per_delivered_message")
print(f"{rate:.0f} {loop if loop is not None else float('nan'):.2f} {g['process_cpu_s'] * 1e6 / max(1, n):.2f} {n}")
PY
}

run_stampede() {  # $1: chat|flow, $2: round
  local dir="$OUT/$1-$2"
  mkdir -p "$dir"
  timeout $(( D + 60 )) "$B" run "$OUT/$1.yaml" --loops 1 --quiet --results "$dir" > "$dir/out.txt" 2>&1 || true
  local s
  s="$(grep '^results: ' "$dir/out.txt" | tail -1 | cut -d' ' -f2-)/summary.json"
  if [ ! -f "$s" ]; then echo "stampede $1 run failed:" >&2; cat "$dir/out.txt" >&2; exit 1; fi
  cp "$s" "$OUT/$1-$2.json"
  stampede_figures "$s"
}

printf '%-6s %-6s %12s %18s %18s %12s\n' round tool "msgs/s" "loop µs/msg" "process µs/msg" delivered
: > "$OUT/rows.txt"
for round in $(seq "$ROUNDS"); do
  J=$(timeout $(( D + 30 )) "$OUT/floor" "$PORT" "$C" "$D" /echo)
  read -r F_RATE F_CPU F_N < <(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['msgs_per_s'], d['cpu_us_per_msg'], d['messages'])" "$J")
  printf '%-6s %-6s %12s %18s %18s %12s\n' "$round" floor "$F_RATE" "-" "$F_CPU" "$F_N"
  echo "$round floor $F_RATE nan $F_CPU $F_N" >> "$OUT/rows.txt"
  for tool in chat flow; do
    read -r RATE LOOP PROC N < <(run_stampede "$tool" "$round")
    printf '%-6s %-6s %12s %18s %18s %12s\n' "$round" "$tool" "$RATE" "$LOOP" "$PROC" "$N"
    echo "$round $tool $RATE $LOOP $PROC $N" >> "$OUT/rows.txt"
  done
done

python3 - "$OUT/rows.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, tool, rate, loop, proc, n in rows:
    by.setdefault(r, {})[tool] = (float(rate), float(loop), float(proc))
def med(xs): return statistics.median(xs)
print()
print("per round, ratio to the floor's CPU per message (loop / process):")
ratios = {"chat": ([], []), "flow": ([], []), "flow÷chat": ([], [])}
for r, t in by.items():
    f = t["floor"][2]
    line = [f"round {r}:"]
    for tool in ("chat", "flow"):
        lo, pr = t[tool][1] / f, t[tool][2] / f
        ratios[tool][0].append(lo); ratios[tool][1].append(pr)
        line.append(f"{tool}/floor {lo:.2f} / {pr:.2f}")
    fl, pl = t["flow"][1] / t["chat"][1], t["flow"][2] / t["chat"][2]
    ratios["flow÷chat"][0].append(fl); ratios["flow÷chat"][1].append(pl)
    line.append(f"flow/chat {fl:.2f} / {pl:.2f}")
    print("  ".join(line))
print()
print("medians over rounds:")
for tool in ("floor", "chat", "flow"):
    vals = [t[tool] for t in by.values()]
    print(f"  {tool:5} msgs/s {med(v[0] for v in vals):>10.0f}   loop µs/msg {med(v[1] for v in vals):6.2f}   process µs/msg {med(v[2] for v in vals):6.2f}")
for k, (lo, pr) in ratios.items():
    name = k if "÷" in k else f"{k}/floor"
    print(f"  {name:11} loop {med(lo):.2f}×   process {med(pr):.2f}×")
PY
