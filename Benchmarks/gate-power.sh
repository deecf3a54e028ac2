#!/usr/bin/env bash
# The regression gate's measured power: how often `stampede compare` calls a known regression
# "slower" (detection) and how often it calls an identical build "slower" (false alarm), for
# shifts of 0 %, 10 %, 20 % and 50 % of the p50 round trip, with 1, 3 and 5 interleaved runs a
# side and in history mode.
#
# How: five reference servers run side by side on 127.0.0.1 (`stampede serve --echo`): A and A'
# identical, and three with a `--delay` of 10 %, 20 % and 50 % of A's p50 round trip (measured
# first, in microseconds; delays up to 200 µs are spent busy in the server, so they add what
# they say). ROUNDS rounds each run Benchmarks/scenarios/gate-echo.yaml (DURATION long) once
# against every server, in an order rotated each round, so every variant is interleaved with the
# baseline in time and none always runs first. Then the runs are cut into trials:
# - 1 run a side: each round's A run against its A' or delayed run, `stampede compare A B`;
# - n runs a side (n = 3, 5, 10): baseline = the A runs of n rounds, current = the A' runs (0 %)
#   or the delayed runs of the same rounds, judged by
#   `stampede compare --baseline … --current … --fail-on slower`, and again with `--paired`
#   (each round's two runs a pair). When the rounds make at least 20
#   disjoint groups of n, the trials are those groups; else TRIALS trials each take n distinct
#   rounds drawn at random (seeded) from the pool, and the table says "drawn";
# - history: each round after the first HISTORY, its current run judged by
#   `stampede compare --history` against the A runs of the HISTORY rounds before it.
# Prints a markdown table (called slower / trials, and the median measured p50 shift) and the
# counts of every verdict.
# Usage: Benchmarks/gate-power.sh [ROUNDS=40] [HISTORY=20] [extra compare flags]
# Environment: DURATION (default 12s), TRIALS (default 40).
# GATE_KEEP=DIR keeps every run folder and compare JSON there; re-judge them with other flags:
# Benchmarks/gate-power.sh --judge DIR [extra compare flags].
set -euo pipefail
cd "$(dirname "$0")/.."
B=.build/release/stampede
judge_only=
if [ "${1:-}" = --judge ]; then judge_only=$2; shift 2; ROUNDS=; HISTORY=${HISTORY:-20}
else ROUNDS=${1:-40}; HISTORY=${2:-20}; shift 2 || shift $# || true; fi
DURATION=${DURATION:-12s}
TRIALS=${TRIALS:-40}
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
  "$B" run Benchmarks/scenarios/gate-echo.yaml --duration "$DURATION" --quiet --results "$OUT/runs/$1" \
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
  echo "gate power: $ROUNDS rounds of ${variants[*]}, runs of $DURATION, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  for r in $(seq "$ROUNDS"); do
    for k in $(seq 0 4); do run_once "${variants[$(( (k + r) % 5 ))]}" "$r"; done
    (( r % 10 == 0 )) && echo "round $r/$ROUNDS done, $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
fi

mapfile -t A < <(ls -d "$OUT"/runs/A/*/)
ROUNDS=${#A[@]}
rm -rf "$OUT/judged" && mkdir -p "$OUT/judged"
judge() {  # cell name, trial, compare args… → records the verdict
  local cell=$1 trial=$2; shift 2
  "$B" compare "$@" --format json --metrics round_trip "${EXTRA[@]}" < /dev/null > "$OUT/judged/$cell-$trial.json" 2> /dev/null || true
}
for v in A2 B10 B20 B50; do
  mapfile -t C < <(ls -d "$OUT"/runs/$v/*/)
  for n in 3 5 10; do
    # One line per trial: the rounds it takes (disjoint groups, or drawn at random).
    python3 - "$ROUNDS" "$n" "$TRIALS" > "$OUT/trials-$n.txt" <<'PY'
import random, sys
rounds, n, trials = map(int, sys.argv[1:])
if rounds < n:
    groups = []
elif rounds // n >= 20:
    groups = [list(range(t * n, (t + 1) * n)) for t in range(rounds // n)]
else:
    rng = random.Random(20261127 + n)
    groups = [sorted(rng.sample(range(rounds), n)) for _ in range(trials)]
for g in groups: print(" ".join(map(str, g)))
PY
    t=0
    while read -r -a rs; do
      base=(); cur=()
      for r in "${rs[@]}"; do base+=("${A[r]}"); cur+=("${C[r]}"); done
      judge "$v-runs$n" "$t" --baseline "${base[@]}" --current "${cur[@]}"
      judge "$v-pairs$n" "$t" --baseline "${base[@]}" --current "${cur[@]}" --paired
      t=$((t + 1))
    done < "$OUT/trials-$n.txt"
  done
  for (( t = 0; t < ROUNDS; t++ )); do judge "$v-pair" "$t" "${A[t]}" "${C[t]}"; done
  for (( t = HISTORY; t < ROUNDS; t++ )); do
    rm -rf "$OUT/history" && mkdir -p "$OUT/history"
    for f in "${A[@]:t-HISTORY:HISTORY}"; do ln -s "$f" "$OUT/history/$(basename "$f")"; done
    judge "$v-history" "$t" --history "$OUT/history" "${C[t]}" --history-runs "$HISTORY"
  done
done
rm -rf "$OUT/history"
python3 - "$OUT" "$HISTORY" "$ROUNDS" <<'PY'
import glob, json, os, sys, statistics
out, history, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = {"A2": "0 % (A/A)", "B10": "10 %", "B20": "20 %", "B50": "50 %"}
drawn = lambda n: "" if rounds // n >= 20 else f" (trials drawn from {rounds} rounds)"
modes = [("pair", "1 run a side"), ("runs3", "3 interleaved runs a side" + drawn(3)), ("runs5", "5 interleaved runs a side" + drawn(5)),
         ("runs10", "10 interleaved runs a side" + drawn(10)),
         ("pairs3", "3 pairs, --paired" + drawn(3)), ("pairs5", "5 pairs, --paired" + drawn(5)),
         ("pairs10", "10 pairs, --paired" + drawn(10)),
         ("history", f"history of {history} runs, 1 current run")]
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
