#!/usr/bin/env bash
# Micro-benchmarks of the hot-path codecs (package-benchmark, in the separate package in this
# folder, so the root package never depends on it or on swift-nio): masking side by side with a
# byte loop and NIOWebSocket, frames, hub records, SSE events, HTTP responses, histogram records.
# Then checks the static thresholds in Benchmarks/Thresholds: no malloc per operation in steady
# state on every codec path (exit code 2 on a regression).
# Usage: Benchmarks/run-codec-benchmarks.sh [extra `swift package benchmark` options, e.g. --filter "Mask.*"]
set -euo pipefail
cd "$(dirname "$0")"
# package-benchmark's malloc counters need jemalloc's headers on Linux.
if [ "$(uname)" = Linux ] && ! { dpkg -s libjemalloc-dev > /dev/null 2>&1 || [ -e /usr/include/jemalloc/jemalloc.h ]; }; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq libjemalloc-dev > /dev/null
fi
swift package benchmark --no-progress "$@"
swift package benchmark thresholds check --no-progress "$@"
