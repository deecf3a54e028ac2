#!/usr/bin/env bash
# autobahn-run.sh -- run a WebSocket client under test against kosoku's
# Autobahn fuzzingserver on 127.0.0.1 (ephemeral port), then check the report.
#
# usage: autobahn-run.sh -o DIR -a AGENT [-i PATTERN]... [-x PATTERN]... [-t SECONDS] \
#            -- CLIENT_CMD [ARGS...]
#
#   -o DIR      report directory (kosoku writes DIR/index.json, per-case JSON/HTML)
#   -a AGENT    the agent name the client reports (runCase/updateReports ?agent=)
#   -i PATTERN  kosoku include pattern, repeatable (default: 1.* … 7.* and 10.*)
#   -x PATTERN  kosoku exclude pattern, repeatable
#   -t SECONDS  bound for the whole client run (default 600)
#   CLIENT_CMD  run with every "{url}" in its arguments replaced by
#               ws://127.0.0.1:PORT; AUTOBAHN_URL and AUTOBAHN_AGENT are exported too.
#
# stdout: the last line is autobahn_report.py's one-line JSON summary.
# exit: 0 every case passed and the report holds every case; 1 some case failed
#       or is missing; 3 infrastructure failure (kosoku not ready, client
#       timed out, no report); 2 usage.
set -euo pipefail

log() { printf 'autobahn-run: %s\n' "$*" >&2; }
usage() { sed -n '2,20p' "$0" >&2; exit 2; }

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
outdir="" agent="" timeout_s=600
includes=() excludes=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o) outdir=$2; shift 2 ;;
        -a) agent=$2; shift 2 ;;
        -i) includes+=("$2"); shift 2 ;;
        -x) excludes+=("$2"); shift 2 ;;
        -t) timeout_s=$2; shift 2 ;;
        --) shift; break ;;
        -h|--help) usage ;;
        *) log "unknown argument: $1"; usage ;;
    esac
done
[ -n "$outdir" ] && [ -n "$agent" ] && [ $# -gt 0 ] || usage
[ ${#includes[@]} -gt 0 ] || includes=('1.*' '2.*' '3.*' '4.*' '5.*' '6.*' '7.*' '10.*')

kosoku_py=$("$script_dir/ensure-venv.sh" kosoku | tail -n1)
ws_py=$("$script_dir/ensure-venv.sh" websockets | tail -n1)
kosoku_bin="$(dirname -- "$kosoku_py")/kosoku"

args=(-m fuzzingserver)
for p in "${includes[@]}"; do args+=(-i "$p"); done
for p in ${excludes[@]+"${excludes[@]}"}; do args+=(-x "$p"); done
mkdir -p "$outdir"
rm -f -- "$outdir/index.json"
work=$(mktemp -d)
kpid=""
cleanup() {
    if [ -n "$kpid" ] && kill -0 "$kpid" 2>/dev/null; then
        kill -TERM "$kpid" 2>/dev/null || true   # kosoku ignores SIGINT; TERM ends it at once
        wait "$kpid" 2>/dev/null || true
    fi
    rm -rf -- "$work"
}
trap cleanup EXIT

# kosoku itself is bounded: client time + 60 s.
timeout "$((timeout_s + 60))" "$kosoku_bin" "${args[@]}" -o "$outdir" 127.0.0.1:0 \
    >"$work/kosoku.out" 2>"$work/kosoku.err" &
kpid=$!

# Readiness: kosoku prints "fuzzingserver listening on ws://127.0.0.1:PORT" on stderr.
port=""
for _ in $(seq 300); do
    port=$(sed -n 's#^fuzzingserver listening on ws://[^ ]*:\([0-9][0-9]*\)$#\1#p' "$work/kosoku.err" | head -n1)
    [ -n "$port" ] && break
    kill -0 "$kpid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then
    log "kosoku did not become ready:"; cat "$work/kosoku.err" >&2
    exit 3
fi
url="ws://127.0.0.1:$port"
log "kosoku ready at $url (${includes[*]}${excludes[*]:+ minus ${excludes[*]}})"

# How many cases the selection has (asking /getCaseCount twice is harmless).
expected=$("$ws_py" - "$url" <<'EOF'
import asyncio, sys
from websockets.asyncio.client import connect
async def main():
    async with connect(sys.argv[1] + "/getCaseCount", open_timeout=10) as ws:
        print(int(await asyncio.wait_for(ws.recv(), 10)))
asyncio.run(main())
EOF
) || { log "getCaseCount failed"; exit 3; }
log "$expected cases selected"

client=()
for a in "$@"; do client+=("${a//\{url\}/$url}"); done
export AUTOBAHN_URL=$url AUTOBAHN_AGENT=$agent
start=$(date +%s)
set +e
timeout "$timeout_s" "${client[@]}" >&2
crc=$?
set -e
log "client exited $crc after $(( $(date +%s) - start ))s"
if [ "$crc" -eq 124 ]; then log "client timed out after ${timeout_s}s"; exit 3; fi

# kosoku exits by itself after /updateReports (0 all passed, 1 some failed).
for _ in $(seq 300); do kill -0 "$kpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$kpid" 2>/dev/null; then
    log "kosoku still running 30 s after the client ended (no /updateReports?)"
    exit 3
fi
set +e; wait "$kpid"; krc=$?; set -e
kpid=""
log "kosoku exited $krc"
cat "$work/kosoku.out" >&2
[ -f "$outdir/index.json" ] || { log "no $outdir/index.json"; exit 3; }

set +e
python3 "$script_dir/autobahn_report.py" "$outdir" "$agent" --expect-cases "$expected"
rrc=$?
set -e
[ "$rrc" -eq 2 ] && exit 3
exit "$rrc"
