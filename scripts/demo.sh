#!/usr/bin/env bash
# Installs what Stampede needs, builds it (release), and runs the demo scenario against the
# embedded reference server. The last line printed is the results folder.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-packages.sh

swift build -c release --product stampede
exec .build/release/stampede run "${1:-scenarios/chat-broadcast.yaml}"
