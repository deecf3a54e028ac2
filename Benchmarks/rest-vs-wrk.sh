#!/usr/bin/env bash
# ETag polling side by side with wrk (Debian's wrk 4.1), in one run, against the same server:
# `stampede serve --rest` in its own process, with resources that never change, so every
# conditional GET (If-None-Match) is answered 304 on a keep-alive connection. Each tool gets
# CONNECTIONS connections for SECONDS seconds, one thread/loop, as fast as the server answers
# (wrk's model; Stampede's closed model with no think time). Reports requests per second and
# the generator's CPU per request (user + system), and Stampede's figures as a ratio of wrk's.
# Two rounds, alternating, since the machine is shared. Everything on 127.0.0.1.
# Usage: Benchmarks/rest-vs-wrk.sh [CONNECTIONS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-50}
D=${2:-10}
if ! command -v wrk > /dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq wrk > /dev/null
fi
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
OUT=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT

$B serve --rest --port 0 --change-rate 0 --token bench-token --max-seconds 900 > "$OUT/serve.txt" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q "listening on" "$OUT/serve.txt" && break; sleep 0.1; done
PORT=$(sed -n 's|listening on http://127.0.0.1:\([0-9]*\)/api.*|\1|p' "$OUT/serve.txt")
URL="http://127.0.0.1:$PORT/api/items"

cat > "$OUT/poll.yaml" <<YAML
name: rest-vs-wrk
workload: rest
target: http://127.0.0.1:$PORT/api
clients: $C
connect_rate: 10000
duration: $D
drain: 2s
load_model: closed
think_time: 0s
rest:
  token: bench-token
  resources: [/items]
YAML

# Runs a command and prints the CPU seconds (user + system) it and its children used.
cpu_of() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT, check=False)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.3f}")
PY
}

printf '%-10s %12s %16s %12s %14s\n' "round" "tool" "requests/s" "CPU µs/req" "304 share"
for round in 1 2; do
  W_CPU=$(cpu_of "$OUT/wrk.txt" wrk -t1 -c"$C" -d"${D}s" -H 'Authorization: Bearer bench-token' -H 'If-None-Match: "v0"' "$URL")
  W_REQ=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
  W_RPS=$(awk '/Requests\/sec/ {print $2}' "$OUT/wrk.txt")
  W_NON2XX=$(awk '/Non-2xx or 3xx/ {print $NF}' "$OUT/wrk.txt")
  $B run "$OUT/poll.yaml" --loops 1 --quiet --results "$OUT" > "$OUT/st.txt" 2>&1 || true
  S="$(grep '^results: ' "$OUT/st.txt" | tail -1 | cut -d' ' -f2-)/summary.json"
  read -r S_RPS S_CPU S_304 < <(python3 -c "
import json; d = json.load(open('$S')); r = d['rest']; n = sum(r['by_status'].values())
print(r['responses_per_s'], round(d['generator']['process_cpu_s'] * 1e6 / max(1, n), 2), round(r['by_status'].get('304', 0) / max(1, n), 4))")
  W_CPU_REQ=$(python3 -c "print(round($W_CPU * 1e6 / max(1, $W_REQ), 2))")
  printf '%-10s %12s %16s %12s %14s\n' "$round" "wrk" "$W_RPS" "$W_CPU_REQ" "${W_NON2XX:-all}"
  printf '%-10s %12s %16s %12s %14s\n' "$round" "stampede" "$S_RPS" "$S_CPU" "$S_304"
  python3 -c "print(f'{\"\":10} {\"ratio\":>12} {$S_RPS / $W_RPS:16.2f} {$S_CPU / $W_CPU_REQ:12.2f}   (stampede ÷ wrk)')"
done
echo "wrk's 304 share: every answer was 304 unless wrk printed Non-2xx/3xx counts (a 304 counts as 3xx)."
