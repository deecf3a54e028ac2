#!/usr/bin/env bash
# Runs every test: installs the Python test peers (websockets, kosoku, aiosignalr, pysignalr,
# signalrcore, hdrhistogram, kubernetes, strawberry, amqtt, picows, socketio, schema) into git-ignored venvs
# under .peers/, builds, and runs the Swift test suite (unit, end-to-end, interop, Autobahn).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-packages.sh --tests
for venv in websockets kosoku aiosignalr pysignalr signalrcore hdrhistogram kubernetes strawberry amqtt picows socketio schema; do
  bash Tests/peers/ensure-venv.sh "$venv" > /dev/null
done

swift build --build-tests
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
swift test --skip-build 2>&1 | tee "$log" || status=$?

# One plain closing line for tools that read it: "N passed, N failed".
total=$(sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} .*/\1/p' "$log" | tail -1)
failed=$(grep -c '^✘ Test [^r]' "$log" || true)
if [ -n "$total" ]; then echo "tests: $((total - failed)) passed, $failed failed"; fi
exit $status
