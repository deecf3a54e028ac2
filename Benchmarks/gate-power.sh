#!/usr/bin/env bash
# The regression gate's measured power: how often `stampede compare` calls a known regression
# "slower" (detection) and how often it calls an identical build "slower" (false alarm), for
# shifts of 0 %, 10 %, 20 % and 50 % of the p50 round trip, with 1, 3 and 5 interleaved runs a
# side and in history mode.
#
# How: five reference servers run side by side on 127.0.0.1 (`stampede serve --echo`): A and A'
# identical, and three with a `--delay` of 10 %, 20 % and 50 % of A's p50 round trip (measured
# first, in microseconds). ROUNDS rounds each run Benchmarks/scenarios/gate-echo.yaml once
# against every server, in an order rotated each round, so every variant is interleaved with
# the baseline in time and none always runs first. Then the runs are cut into trials:
# - n runs a side (n = 1, 3, 5): consecutive groups of n rounds; baseline = their A runs,
#   current = their A' runs (0 %) or delayed runs; judged by
#   `stampede compare --baseline … --current … --fail-on slower` (n = 1 also by the two-folder
#   form, the one-run gate with its own default tolerance);
# - history: each round after the first HISTORY, its current run judged by
#   `stampede compare --history` against the A runs of the HISTORY rounds before it.
# Prints one line per cell (trials, called slower, measured shift) and a markdown table.
# Usage: Benchmarks/gate-power.sh [ROUNDS=100] [HISTORY=20] [extra compare flags]
# GATE_KEEP=DIR keeps every run folder and compare JSON there (to re-judge with other flags:
# Benchmarks/gate-power.sh --judge DIR [extra compare flags]).
set -euo pipefail
cd "$(dirname "$0")/.."
B=.build/release/stampede
judge_only=
if [ "${1:-}" = --judge ]; then judge_only=$2; shift 2; ROUNDS=; HISTORY=${HISTORY:-20}
else ROUNDS=${1:-100}; HISTORY=${2:-20}; shift 2 || shift $# || true; fi
EXTRA=("$@")
swift build -c release --product stampede > /dev/null
OUT=${judge_only:-${GATE_KEEP:-$(mktemp -d)}}
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done; [ -n "${GATE_KEEP:-}$judge_only" ] || rm -rf "$OUT"; }
trap cleanup EXIT

start_server() {  # name, serve flags… → sets PORT_<name>
  local name=$1; shift
  "$B" serve --echo --port 0 --max-seconds 7200 "$@" > "$OUT/serve-$name.log" 2>&1 &
  PIDS+=($!)
  local port=
  for _ in $(seq 100); do
    port=$(sed -n 's|^listening on ws://127.0.0.1:\([0-9]*\)/chat.*|\1|p' "$OUT/serve-$name.log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "serve $name did not start: $(cat "$OUT/serve-$name.log")" >&2; exit 1; }
  printf -v "PORT_$name" '%s' "$port"
}

run_once() {  # variant, round → folder under $OUT/runs/variant/
  local port_var="PORT_$1"
  "$B" run Benchmarks/scenarios/gate-echo.yaml --quiet --results "$OUT/runs/$1" \
    --target "ws://127.0.0.1:${!port_var}/chat" > "$OUT/run.txt" 2>&1 || true
  grep -q '^results: ' "$OUT/run.txt" || { echo "run $1 round $2 wrote no results: $(tail -3 "$OUT/run.txt")" >&2; exit 1; }
}

p50_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]+'/summary.json'))['latency_us']['round_trip']['p50'])" "$1"; }

if [ -z "$judge_only" ]; then
  start_server A
  for _ in 1 2 3; do run_once A 0; done
  base=$(for f in "$OUT"/runs/A/*/; do p50_of "$f"; done | sort -n | sed -n 2p)
  rm -rf "$OUT/runs/A"
  D10=$(( (base + 5) / 10 )); D20=$(( (base + 2) / 5 )); D50=$(( (base + 1) / 2 ))
  echo "p50 round trip of A: ${base} us; delays: 10 % ${D10}us, 20 % ${D20}us, 50 % ${D50}us" | tee "$OUT/delays.txt"
  start_server A2
  start_server B10 --delay "${D10}us"
  start_server B20 --delay "${D20}us"
  start_server B50 --delay "${D50}us"
  variants=(A A2 B10 B20 B50)
  echo "gate power: $ROUNDS rounds of ${variants[*]}, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  for r in $(seq "$ROUNDS"); do
    for k in $(seq 0 4); do run_once "${variants[$(( (k + r) % 5 ))]}" "$r"; done
    (( r % 10 == 0 )) && echo "round $r/$ROUNDS done, $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
fi

mapfile -t A < <(ls -d "$OUT"/runs/A/*/)
ROUNDS=${#A[@]}
mkdir -p "$OUT/judged"
judge() {  # cell name, trial, compare args… → records the verdict
  local cell=$1 trial=$2; shift 2
  "$B" compare "$@" --format json --metrics round_trip "${EXTRA[@]}" > "$OUT/judged/$cell-$trial.json" 2> /dev/null || true
}
for v in A2 B10 B20 B50; do
  mapfile -t C < <(ls -d "$OUT"/runs/$v/*/)
  for n in 1 3 5; do
    for (( t = 0; (t + 1) * n <= ROUNDS; t++ )); do
      judge "$v-runs$n" "$t" --baseline "${A[@]:t*n:n}" --current "${C[@]:t*n:n}"
    done
  done
  for (( t = 0; t < ROUNDS; t++ )); do judge "$v-pair" "$t" "${A[t]}" "${C[t]}"; done
  for (( t = HISTORY; t < ROUNDS; t++ )); do
    rm -rf "$OUT/history" && mkdir -p "$OUT/history"
    for f in "${A[@]:t-HISTORY:HISTORY}"; do ln -s "$f" "$OUT/history/$(basename "$f")"; done
    judge "$v-history" "$t" --history "$OUT/history" "${C[t]}" --history-runs "$HISTORY"
  done
done
rm -rf "$OUT/history"
python3 - "$OUT" "$HISTORY" <<'PY'
import glob, json, os, sys, statistics
out, history = sys.argv[1], sys.argv[2]
names = {"A2": "0 % (A/A)", "B10": "10 %", "B20": "20 %", "B50": "50 %"}
modes = [("pair", "1 run a side, two-folder form"), ("runs1", "1 run a side, --baseline/--current"),
         ("runs3", "3 interleaved runs a side"), ("runs5", "5 interleaved runs a side"), ("history", f"history of {history} runs, 1 current run")]
def shift(d):
    m = {x["metric"]: x for x in d.get("metrics", [])}.get("round_trip")
    if not m: return None
    if "percentiles" in m and isinstance(m["percentiles"], list):
        p = [x for x in m["percentiles"] if x["name"] == "p50"]
        return p[0]["change_pct"] if p else None
    return m["change_pct"].get("p50")
rows = {}
for v in names:
    for mode, _ in modes:
        files = sorted(glob.glob(f"{out}/judged/{v}-{mode}-*.json"))
        verdicts, shifts = [], []
        for f in files:
            try: d = json.load(open(f))
            except Exception: verdicts.append("error"); continue
            verdicts.append(d["verdict"]); s = shift(d)
            if s is not None: shifts.append(s)
        rows[(v, mode)] = (len(verdicts), verdicts.count("slower"), statistics.median(shifts) if shifts else float("nan"),
                           {k: verdicts.count(k) for k in set(verdicts) if k != "slower"})
print("| mode | " + " | ".join(f"shift {names[v]}" for v in names) + " |")
print("|---|" + "---:|" * len(names))
for mode, label in modes:
    cells = []
    for v in names:
        n, slow, med, _ = rows[(v, mode)]
        cells.append(f"{slow}/{n} ({100 * slow / n:.0f} %), p50 {med:+.1f} %" if n else "-")
    print(f"| {label} | " + " | ".join(cells) + " |")
print()
for (v, mode), (n, slow, med, others) in rows.items():
    print(f"{v:4} {mode:8} trials {n:3}  slower {slow:3}  median p50 shift {med:+6.1f} %  others {others}")
PY
