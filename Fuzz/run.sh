#!/usr/bin/env bash
# Long fuzzing run of one target:
#
#   Fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
#
# TARGET is one of Fuzz/build.sh's targets (websocket, json-hub, msgpack-hub, sse, http-response,
# http-request, websocket-session, http-exchange, hub-session, flow, flow-session,
# socketio-server, socketio-session) or scenario. Builds if needed, then
# fuzzes with one job for SECONDS, starting from the checked-in seeds in
# Tests/Fuzz/corpus/TARGET and growing a working corpus in .build-fuzz/corpus/TARGET (the
# seeds are not modified). The log is .build-fuzz/logs/TARGET/fuzz-0.log; crash inputs land in
# .build-fuzz/artifacts/TARGET/: copy one into the seed corpus and add a regression test when
# you fix it.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    echo "usage: $0 TARGET SECONDS [libFuzzer flags...]" >&2
    exit 2
fi
target="$1"; seconds="$2"; shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${STAMPEDE_FUZZ_BUILD_DIR:-$root/.build-fuzz}"
seeds="$root/Tests/Fuzz/corpus/$target"
dict="$root/Fuzz/dict/$target.dict"

if [[ "$target" == scenario ]]; then "$root/Fuzz/build-scenario.sh"; else "$root/Fuzz/build.sh"; fi
# The Swift runtime's crash backtracer and ASan both handle the fatal signal; keep only ASan's report.
export SWIFT_BACKTRACE=enable=no
[[ -e "$out/fuzz-$target" ]] || { echo "unknown target: $target" >&2; exit 2; }
mkdir -p "$out/corpus/$target" "$out/artifacts/$target" "$out/logs/$target"
args=(-max_total_time="$seconds" -jobs=1 -workers=1 -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
      -artifact_prefix="$out/artifacts/$target/")
[[ -f "$dict" ]] && args+=(-dict="$dict")
# With -jobs libFuzzer runs the fuzzing in a child process whose output goes to fuzz-0.log in
# the current folder; the first corpus directory is the one new inputs are added to.
cd "$out/logs/$target"
status=0
"$out/fuzz-$target" "${args[@]}" "$@" "$out/corpus/$target" "$seeds" || status=$?
grep -E "^(#[0-9]+ +DONE|Done|stat::|==[0-9]+==ERROR|SUMMARY|.*Fatal error)" fuzz-0.log || tail -20 fuzz-0.log
echo "log: $out/logs/$target/fuzz-0.log, exit status $status"
exit $status
