# Shared by Benchmarks/capacity*.sh (sourced, not run): reading capacity.json, starting the
# Python `websockets` broadcast server, and the manual sweep with `stampede run` that checks a
# capacity answer. The caller sets B (the stampede binary), OUT (its temporary folder) and
# PIDS (an array of the processes its trap kills).

# json_field FILE EXPR: EXPR evaluated in Python with d = the JSON file.
json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$1" "$2"; }

# seconds_of 5s → 5 (the durations these scripts take: seconds, with or without the s).
seconds_of() { python3 -c "import re,sys; print(f'{float(re.sub(\"s$\", \"\", sys.argv[1])):g}')" "$1"; }

# wait_for_line FILE REGEX [TENTHS]: waits (at most TENTHS tenths of a second, default 200) until
# a line of FILE matches.
wait_for_line() {
  for _ in $(seq "${3:-200}"); do grep -q "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done
  return 1
}

# chat_scenario SOURCE PORT DEST: SOURCE with its target set to ws://127.0.0.1:PORT/chat.
chat_scenario() { sed "s|^target: .*|target: ws://127.0.0.1:$2/chat|" "$1" > "$3"; }

# capacity_steps FILE: every step of a capacity.json (the reasons of those that did not pass),
# then the verdict, the knee and the wall time.
capacity_steps() {
  python3 - "$1" << 'PY'
import json, sys
d = json.load(open(sys.argv[1]))
clients = d["vary"].endswith("clients")
for s in d["steps"]:
    rt = s["latency_us"].get("round_trip") or s["latency_us"].get("ping_round_trip", {})
    name = "ping" if "round_trip" not in s["latency_us"] and rt else "rt"

    load = f'{s["load"]:>9,.0f} clients' if clients else f'{s["load"]:>9,.0f}/s'
    sent = f'open {s["open"]:>6,} of {s["clients"]:>6,}' if clients else f'sent {s["achieved_rate"]:>9,.0f}/s'
    print(f'  step {s["number"]:2} {s["stage"]:11} {load}  {s["outcome"]:7}  {sent}  '
          f'{name} p50 {rt.get("p50", 0)/1000:8.2f} ms  p99 {rt.get("p99", 0)/1000:9.2f} ms  lag {s["generator"]["max_timer_lag_us"]/1000:5.1f} ms'
          + (f'  cool-down {s["cooldown_seconds"]:.1f} s' if s["cooldown_seconds"] else ''))
    if s["outcome"] != "pass":
        print(f'          reasons: {"; ".join(s["reasons"])}')
print(f'  verdict {d["verdict"]}: {d["conclusion"]}')
print(f'  knee {d["knee"]}  wall {d["wall_seconds"]:.0f} s  steps {len(d["steps"])}')
PY
}

# start_python_chat: the Python `websockets` broadcast server (Tests/peers/chat_server.py
# --fanout broadcast, from the venv Tests/peers/ensure-venv.sh makes) on a free port, bounded by
# its own --max-seconds; sets PYPORT.
start_python_chat() {
  local py
  py=$(bash Tests/peers/ensure-venv.sh websockets | tail -1)
  "$py" Tests/peers/chat_server.py --port 0 --fanout broadcast --max-seconds "${1:-3000}" > "$OUT/py.serve" 2>&1 &
  PIDS+=($!)
  wait_for_line "$OUT/py.serve" '^LISTENING ' || { echo "the Python server did not start: $(cat "$OUT/py.serve")" >&2; return 1; }
  PYPORT=$(sed -n 's/^LISTENING \([0-9]*\)/\1/p' "$OUT/py.serve")
}

# sweep SCENARIO CENTRE WARMUP STEP CONDITION REPEATS SHARE…: `stampede run` at fixed rates
# (CENTRE × each SHARE), WARMUP + STEP each, REPEATS times each, judged as capacity judges a step:
# CONDITION (e.g. "p(99) < 50ms") on round_trip over the window after the warm-up (a windowed
# threshold). One line per run.
sweep() {
  local scenario=$1 centre=$2 warmup=$3 step=$4 condition=$5 repeats=$6
  shift 6
  local duration r code s share attempt
  duration="$(python3 -c "print(f'{$(seconds_of "$warmup") + $(seconds_of "$step"):g}')")s"
  for share in "$@"; do
    r=$(python3 -c "print(round($centre * $share))")
    [ "$r" -gt 0 ] || continue
    sed "s/^  rate: .*/  rate: $r/" "$scenario" > "$OUT/sweep.yaml"
    printf 'thresholds:\n  round_trip@steady: {conditions: ["%s"], after: %s}\n' "$condition" "$warmup" >> "$OUT/sweep.yaml"
    for attempt in $(seq "$repeats"); do
      set +e
      "$B" run "$OUT/sweep.yaml" --duration "$duration" --quiet --results "$OUT/results" > "$OUT/sweep.out" 2>&1
      code=$?
      set -e
      s=$(sed -n 's/^results: //p' "$OUT/sweep.out")
      python3 - "$s/summary.json" "$r" "$share" "$code" << 'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = d["thresholds"][0]
verdict = {"0": "pass", "99": "fail", "98": "saturated"}.get(sys.argv[4], "exit " + sys.argv[4])
print(f'  {float(sys.argv[3])*100:5.0f} % = {int(sys.argv[2]):>7,}/s  sent {d["messages"]["throughput_per_s"]["sent"]:>9,.0f}/s  '
      f'p99 after warm-up {t["observed_text"]:>9}  lost {d["messages"]["lost"]}  -> {verdict}')
PY
    done
  done
}
