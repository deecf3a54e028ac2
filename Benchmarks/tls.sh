#!/usr/bin/env bash
# TLS against plain TCP, side by side in one sitting (this machine is shared: compare within a
# run, not across runs). The target is `stampede serve` in its own process (plain, or with a
# throw-away certificate from --tls-self-signed), so the generator's figures are the clients'
# alone. Everything on 127.0.0.1, every run bounded in time.
#
#   1. idle connections: RSS per connection of the generator (and of the server), plain vs TLS
#      (TLS with session tickets kept too);
#   2. chat CPU per delivered message, plain vs TLS (ROUNDS rounds, alternating);
#   3. a reconnect storm of STORM clients, twice reset (so 3 × STORM handshakes), with
#      resume_ratio 0 and 1: handshakes per client-loop CPU second, and recovery times;
#   4. HELD TLS clients connected and held by one Stampede process.
#
# Usage: Benchmarks/tls.sh [ROUNDS] [STORM] [HELD]     (defaults 3, 5000, 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
STORM=${2:-5000}
HELD=${3:-10000}
swift build -c release --product stampede > /dev/null
B=$PWD/.build/release/stampede
OUT=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT

# A reference server in the background; prints its port. $1: name, rest: serve flags.
serve() {
  local name=$1; shift
  "$B" serve --port 0 --max-seconds 900 "$@" > "$OUT/$name.serve" 2>&1 &
  PIDS+=($!)
  echo $! > "$OUT/$name.pid"
  for _ in $(seq 100); do
    grep -q '^listening on ' "$OUT/$name.serve" 2> /dev/null && break
    sleep 0.1
  done
  sed -n 's/^listening on [a-z]*:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$OUT/$name.serve" | head -1
}
PLAIN=$(serve plain)
TLS=$(serve tls --tls-self-signed --tls-cert-out "$OUT/ca.pem")
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$(cat "$OUT/$1.pid")/status"; }

# Runs a scenario (YAML on stdin) and prints the path of its summary.json.
run() {
  cat > "$OUT/$1.yaml"
  "$B" run "$OUT/$1.yaml" --quiet --results "$OUT/results" > "$OUT/$1.txt" 2>&1 || true
  echo "$(grep '^results: ' "$OUT/$1.txt" | tail -1 | cut -d' ' -f2-)/summary.json"
}
target() { if [ "$1" = tls ]; then echo "target: wss://127.0.0.1:$TLS/chat"; else echo "target: ws://127.0.0.1:$PLAIN/chat"; fi; }
tlsblock() {  # $1: plain | tls | tickets, $2: resume ratio
  case $1 in
    tls) printf 'tls: {ca_file: %s}\n' "$OUT/ca.pem" ;;
    tickets) printf 'tls: {ca_file: %s, session_resumption: tickets, resume_ratio: %s}\n' "$OUT/ca.pem" "${2:-1}" ;;
  esac
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "== 1. idle connections: 4,000 clients connected, nothing sent (a fresh server for each)"
printf '%-10s %14s %14s %12s\n' "" "client B/conn" "server B/conn" "connected"
for kind in plain tls tickets; do
  if [ "$kind" = plain ]; then port=$(serve "idle-$kind"); else port=$(serve "idle-$kind" --tls-self-signed --tls-cert-out "$OUT/idle-$kind.pem"); fi
  before=$(rss_kib "idle-$kind")
  S=$({ if [ "$kind" = plain ]; then echo "target: ws://127.0.0.1:$port/chat"; else echo "target: wss://127.0.0.1:$port/chat"; fi
        case $kind in
          tls) printf 'tls: {ca_file: %s}\n' "$OUT/idle-$kind.pem" ;;
          tickets) printf 'tls: {ca_file: %s, session_resumption: tickets}\n' "$OUT/idle-$kind.pem" ;;
        esac
        printf 'clients: 4000\nconnect_rate: 2000\nduration: 3s\nmessage: {rate: 0}\ndrain: 0s\n'; } | run "idle-$kind")
  # The server's RSS is read once the clients are gone: memory it freed mostly stays with the
  # allocator, so this is its high-water mark per connection.
  after=$(rss_kib "idle-$kind")
  kill "$(cat "$OUT/idle-$kind.pid")"
  printf '%-10s %14s %14s %12s\n' "$kind" "$(json "$S" "round(d['generator']['rss_per_connection_bytes'])")" \
    "$(( (after - before) * 1024 / 4000 ))" "$(json "$S" "d['connections']['connected']")"
done

echo
echo "== 2. chat CPU per delivered message: 50 clients, 400 messages/s, each broadcast to all (20,000 deliveries/s), $ROUNDS rounds"
printf '%-8s %22s %12s %10s\n' "round" "plain µs/msg" "tls µs/msg" "tls/plain"
for r in $(seq "$ROUNDS"); do
  for kind in plain tls; do
    S=$({ target "$kind"; tlsblock "$kind"
          printf 'clients: 50\nconnect_rate: 500\nduration: 8s\nmessage: {rate: 400, size: 128}\ndrain: 2s\n'; } | run "cpu-$kind-$r")
    eval "$kind=$(json "$S" "d['generator']['cpu_us_per_delivered_message']")"
    eval "${kind}_lost=$(json "$S" "d['messages']['lost']")"
  done
  printf '%-8s %22s %12s %10s\n' "$r" "$plain (lost $plain_lost)" "$tls (lost $tls_lost)" "$(python3 -c "print(f'{$tls/$plain:.2f}')")"
done

echo
echo "== 3. reconnect storm: $STORM clients reset at 3 s and 6 s (3 × $STORM handshakes), 10 messages/s"
printf '%-14s %10s %10s %12s %12s %10s %10s %10s\n' "" "handshakes" "resumed" "loop cpu s" "hs/cpu-s" "p50" "p99" "p100"
for kind in "plain 0" "tickets 0" "tickets 1"; do
  set -- $kind
  S=$({ target "$([ "$1" = plain ] && echo plain || echo tls)"; [ "$1" = plain ] || tlsblock tickets "$2"
        printf 'clients: %s\nconnect_rate: 2500\nduration: 9s\nmessage: {rate: 10}\nreconnect: [0s, 1s, 2s]\ndrain: 3s\n' "$STORM"
        printf 'events:\n  - at: 3s\n    storm: {fraction: 1.0, mode: reset}\n  - at: 6s\n    storm: {fraction: 1.0, mode: reset}\n'; } | run "storm-$1-$2")
  label=$([ "$1" = plain ] && echo "plain" || echo "tls ratio $2")
  json "$S" "' '.join([f\"{'$label':<14}\", f\"{d['counters']['tls_handshakes'] or d['connections']['connected']:>10}\", f\"{d['counters']['tls_resumed']:>10}\",
    f\"{d['generator']['client_loop_cpu_s']:>12.2f}\", f\"{(d['counters']['tls_handshakes'] or d['connections']['connected']) / d['generator']['client_loop_cpu_s']:>12.0f}\"]
    + [f\"{(d['storms'][0]['recovery_ms'][k] or 0):>8.0f}ms\" for k in ('p50','p99','p100')]) + ('' if d['messages']['accounting_closed'] else '  ACCOUNTING OPEN')"
done
echo "(hs/cpu-s: connections made (plain) or TLS handshakes per second of client-loop CPU over the whole run, messages included; recovery of the first storm)"

echo
echo "== 4. $HELD TLS clients held by one Stampede process (idle, 15 s)"
S=$({ target tls; tlsblock tls; printf 'clients: %s\nconnect_rate: 2500\nduration: 15s\nmessage: {rate: 0}\ndrain: 0s\n' "$HELD"; } | run held)
json "$S" "f\"connected {d['connections']['connected']} of $HELD, peak open {d['connections']['peak_open']}, failed {d['connections']['failed']}; \" + f\"generator RSS {d['generator']['rss_connected_bytes']/2**20:.0f} MiB ({d['generator']['rss_per_connection_bytes']/1024:.1f} KiB/conn); \" + f\"tls_handshake p50 {d['latency_us']['tls_handshake']['p50']/1000:.1f} ms p99 {d['latency_us']['tls_handshake']['p99']/1000:.1f} ms; errors {d['errors_total']}\""
echo "server (stampede serve) RSS after holding them: $(( $(rss_kib tls) / 1024 )) MiB"
