#!/usr/bin/env bash
# Runs every test: installs the Python test peers (websockets, kosoku) into git-ignored venvs
# under .peers/, builds, and runs the Swift test suite (unit, end-to-end, interop, Autobahn).
set -euo pipefail
cd "$(dirname "$0")/.."

for venv in websockets kosoku; do
  bash Tests/peers/ensure-venv.sh "$venv" > /dev/null
done

swift build --build-tests
swift test --skip-build
