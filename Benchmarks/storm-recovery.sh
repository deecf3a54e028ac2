#!/usr/bin/env bash
# Reconnect storms side by side: N clients (default 10,000) of the chat and hub storm scenarios
# are all reset at once against the embedded target, once with SignalR's default reconnect
# delays (0, 2, 10, 30 s) and once with full jitter (exponential from 1 s, capped at 30 s).
# Reports the time until 50/99/100 % were connected again, the generator's peak CPU and memory
# during the storm, and whether the accounting closed. Everything on 127.0.0.1, bounded in time.
# Above 9,968 clients the embedded target runs as `stampede serve` in a child process (both
# ends of every connection do not fit in one process's 20,000 descriptors).
# Usage: Benchmarks/storm-recovery.sh [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
swift build -c release --product stampede > /dev/null
B=.build/release/stampede
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
JITTER='{exponential: {initial: 1s, max: 30s, attempts: 10, jitter: full}}'

printf '%-28s %10s %10s %10s %11s %10s %9s\n' "storm ($N clients)" "p50" "p99" "p100" "peak cpu" "peak rss" "accounted"
run() {  # name, scenario file, sed script
  sed -e "s/^clients: .*/clients: $N/" -e "s/^connect_rate: .*/connect_rate: 5000/" -e "$3" "$2" > "$OUT/$1.yaml"
  $B run "$OUT/$1.yaml" --quiet --results "$OUT" > "$OUT/$1.txt" 2>&1 || true
  S="$(grep '^results: ' "$OUT/$1.txt" | tail -1 | cut -d' ' -f2-)/summary.json"
  python3 - "$S" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); e = d["storms"][0]; r = e["recovery_ms"]
ms = lambda v: "never" if v is None else f"{v:.0f} ms"
print(f"{sys.argv[2]:<28} {ms(r['p50']):>10} {ms(r['p99']):>10} {ms(r['p100']):>10} "
      f"{e['generator_peak_cpu_percent']:>10.0f}% {e['generator_peak_rss_bytes'] / 2**20:>7.0f} MiB "
      f"{'yes' if d['messages']['accounting_closed'] else 'NO':>9}")
PY
}
run chat-default scenarios/reconnect-storm.yaml 's/^reconnect: .*/reconnect: default/'
run chat-full-jitter scenarios/reconnect-storm.yaml "s/^reconnect: .*/reconnect: $JITTER/"
run hub-default scenarios/hub-reconnect-storm.yaml 's/^  reconnect: .*/  reconnect: default/'
run hub-full-jitter scenarios/hub-reconnect-storm.yaml "s/^  reconnect: .*/  reconnect: $JITTER/"
echo "peak cpu: the Stampede process over one-second intervals, percent of one core; it includes the embedded target only below the child-process threshold"
