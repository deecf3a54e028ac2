#!/usr/bin/env bash
# Does the per-second round-trip p50 of the demo (scenarios/chat-broadcast.yaml) trend over the
# run? Runs it for DURATION seconds (default 60) against the embedded target, then reads the
# message phase's rows of timeseries.csv and prints the Spearman rank correlation of p50 with
# time, the least-squares slope (µs per second), the first and last tenth's median p50, and the
# longest run of rises without a fall (a monotone climb). No trend: |rho| small, slope near 0,
# short monotone runs. Everything on 127.0.0.1, bounded by DURATION.
# Usage: Benchmarks/phase-trend.sh [DURATION] [RESULTS_FOLDER]   (with a folder: analyse only)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-60}
if [[ -n "${2:-}" ]]; then
  FOLDER=$2
else
  swift build -c release --product stampede > /dev/null
  OUT=$(mktemp -d)
  trap 'rm -rf "$OUT"' EXIT
  .build/release/stampede run scenarios/chat-broadcast.yaml --duration "$DURATION" --quiet --results "$OUT" > "$OUT/run.txt"
  FOLDER="$(grep '^results: ' "$OUT/run.txt" | tail -1 | cut -d' ' -f2-)"
fi
python3 - "$FOLDER" <<'PY'
import csv, json, os, statistics, sys
folder = sys.argv[1]
summary = json.load(open(os.path.join(folder, "summary.json")))
ramp, msgs = summary["phases_s"]["ramp_up"], summary["phases_s"]["messages"]
rows = [r for r in csv.DictReader(open(os.path.join(folder, "timeseries.csv")))]
# Whole seconds inside the message phase that carried round trips.
pts = [(float(r["elapsed_s"]), int(r["p50_us"])) for r in rows
       if ramp + 1.0 <= float(r["elapsed_s"]) <= ramp + msgs and int(r["p50_us"]) > 0]
t = [p[0] for p in pts]; y = [p[1] for p in pts]
def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i]); r = [0.0] * len(v); i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]: j += 1
        for k in range(i, j + 1): r[order[k]] = (i + j) / 2
        i = j + 1
    return r
def pearson(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    cov = sum((x - ma) * (z - mb) for x, z in zip(a, b))
    va, vb = sum((x - ma) ** 2 for x in a), sum((z - mb) ** 2 for z in b)
    return cov / (va * vb) ** 0.5 if va and vb else 0.0
rho = pearson(ranks(t), ranks(y))
mt, my = statistics.fmean(t), statistics.fmean(y)
slope = sum((a - mt) * (b - my) for a, b in zip(t, y)) / sum((a - mt) ** 2 for a in t)
longest = run = 0
for a, b in zip(y, y[1:]):
    run = run + 1 if b > a else 0
    longest = max(longest, run)
tenth = max(1, len(y) // 10)
print(f"seconds analysed     {len(y)}  (message phase {msgs:.1f} s)")
print(f"p50 first/last 10 %  {statistics.median(y[:tenth]):.0f} µs → {statistics.median(y[-tenth:]):.0f} µs")
print(f"p50 min/median/max   {min(y)} / {statistics.median(y):.0f} / {max(y)} µs")
print(f"spearman rho         {rho:+.3f}")
print(f"slope                {slope:+.2f} µs per second")
print(f"longest rising run   {longest} seconds")
# One client sends once per clients/rate seconds: a connection-order schedule climbs for one
# such period and starts again, which a whole-run rho understates.
period = summary["scenario"]["clients"] / summary["scenario"]["message_rate"] if summary["scenario"]["message_rate"] else 0
first = [i for i, x in enumerate(t) if x < t[0] + period - 1]
if period and len(first) < len(t) and len(first) > 5:
    print(f"spearman rho, first {period:.0f} s  {pearson(ranks([t[i] for i in first]), ranks([y[i] for i in first])):+.3f}")
print(f"results              {folder}")
PY
