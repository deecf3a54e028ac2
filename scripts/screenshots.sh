#!/usr/bin/env bash
# Regenerates the report screenshots the README and docs show: docs/report-run.png (a small run
# with a reconnect storm), docs/report-compare.png (the same small run against itself with the
# reference server's 5 ms delay fault) and docs/report-capacity.png (a capacity folder: by
# default the hand-made example in Tests/StampedeReportTests/Fixtures/capacity-example).
#
# Usage: scripts/screenshots.sh [CAPACITY_FOLDER]
#
# Every run targets the embedded reference server (loopback only) and is bounded: 100 clients,
# 4 to 6 s each. Headless Chromium (Debian `chromium`, from ensure-packages.sh --tests) renders
# each report.html through Tests/peers/cdp_page.py: 1100 px wide, cut at 2200 px high.
set -euo pipefail
cd "$(dirname "$0")/.."

capacity=${1:-Tests/StampedeReportTests/Fixtures/capacity-example}
[ -f "$capacity/capacity.json" ] || { echo "screenshots.sh: $capacity has no capacity.json" >&2; exit 2; }

bash scripts/ensure-packages.sh --tests
python=$(bash Tests/peers/ensure-venv.sh websockets)
swift build --product stampede
B=.build/debug/stampede

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario() {  # name, extra events
  cat > "$work/$1.yaml" <<YAML
name: $1
target: embedded
workload: chat
clients: 100
connect_rate: 500
duration: ${3:-6s}
message:
  rate: 100
  size: 128
reconnect: default
seed: 42
drain: 2s
thresholds:
  round_trip: ["p(99) < 50ms"]
  messages.lost: ["count == 0"]
$2
YAML
}
scenario demo-run "events:
  - at: 3s
    storm: {fraction: 0.5, mode: reset}"
scenario baseline "" 4s
scenario with-delay "events:
  - at: 0s
    server: {fault: delay, ms: 5}" 4s

# Exit codes 99 (a threshold failed) are fine here: the report shows them.
folder() { "$B" run "$work/$1.yaml" --results "$work/results" --quiet | tail -1 | sed 's/^results: //'; }
run=$(folder demo-run || true)
base=$(folder baseline || true)
delayed=$(folder with-delay || true)
for f in "$run" "$base" "$delayed"; do [ -f "$f/report.html" ] || { echo "screenshots.sh: no report.html in '$f'" >&2; exit 1; }; done

"$B" report "$base" "$delayed" -o "$work/compare.html" > /dev/null
cp -r "$capacity" "$work/capacity"
"$B" report "$work/capacity" -o "$work/capacity.html" > /dev/null

shoot() {  # html, png
  "$python" Tests/peers/cdp_page.py "file://$1" --screenshot "$2" --width 1100 --max-height 2200 > /dev/null
  echo "$2: $(stat -c %s "$2") bytes"
}
shoot "$run/report.html" docs/report-run.png
shoot "$work/compare.html" docs/report-compare.png
shoot "$work/capacity.html" docs/report-capacity.png
