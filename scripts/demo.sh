#!/usr/bin/env bash
# Installs what Stampede needs, builds it (release), and runs the demo scenario against the
# embedded reference server. The last line printed is the results folder.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! dpkg -s libjemalloc-dev > /dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq libjemalloc-dev > /dev/null
fi

swift build -c release --product stampede
exec .build/release/stampede run "${1:-scenarios/chat-broadcast.yaml}"
