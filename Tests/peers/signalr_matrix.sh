#!/usr/bin/env bash
# signalr_matrix.sh — run every (library × transport × protocol × scenario) combination of the
# SignalR client drivers against a fresh aiosignalr hub (signalr_hub_server.py) on 127.0.0.1.
#
# Usage: Tests/peers/signalr_matrix.sh [-c CLIENTS] [-m MESSAGES] [-t SECONDS] [-l LIBS]
#                                      [-s SCENARIOS] [-T TRANSPORTS] [-P PROTOCOLS]
#                                      [-o DIR] [-- SERVER_ARGS...]
#   -c  clients per run (default 3)          -m  messages per client (default 4)
#   -t  --timeout given to each driver run (default 30; the run is also killed at t+15 s)
#   -l  comma list of libraries: pysignalr,signalrcore (default both)
#   -s  comma list of scenarios (default broadcast,echo,stream,clientresult,upload,groups)
#   -T  comma list of transports (default websockets,sse,longpolling)
#   -P  comma list of protocols (default json,messagepack)
#   -o  directory for the logs: server.out/err, one LIB-TRANSPORT-PROTOCOL-SCENARIO.json/.err
#       per run (default: a new mktemp dir, printed on stderr)
#   SERVER_ARGS go to signalr_hub_server.py (e.g. -- --lp-idle-grace 15 --fix-msgpack-headers)
#
# stdout: one line per combination
#   PASS|FAIL|UNSUPPORTED  LIB TRANSPORT PROTOCOL SCENARIO  SECONDs  [detail]
# then the hub's final stats JSON line prefixed with "server: ", then
#   N passed, N failed, N unsupported
# A driver exit 0 = passed, 3 = unsupported (reason printed), anything else = failed.
# Exit: 0 nothing failed; 1 something failed; 2 usage; 3 the hub did not start.
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
clients=3; messages=4; per_timeout=30
libs=pysignalr,signalrcore
scenarios=broadcast,echo,stream,clientresult,upload,groups
transports=websockets,sse,longpolling
protocols=json,messagepack
outdir=""

usage() { sed -n '2,25p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        -c) clients=$2; shift 2 ;;
        -m) messages=$2; shift 2 ;;
        -t) per_timeout=$2; shift 2 ;;
        -l) libs=$2; shift 2 ;;
        -s) scenarios=$2; shift 2 ;;
        -T) transports=$2; shift 2 ;;
        -P) protocols=$2; shift 2 ;;
        -o) outdir=$2; shift 2 ;;
        --) shift; break ;;
        -h|--help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
done
server_args=("$@")
for v in "$clients" "$messages" "$per_timeout"; do
    case "$v" in ''|*[!0-9]*) echo "-c/-m/-t need positive integers" >&2; exit 2 ;; esac
done
[ -n "$outdir" ] || outdir=$(mktemp -d /tmp/signalr-matrix.XXXXXX)
mkdir -p "$outdir"
echo "signalr_matrix: logs in $outdir" >&2

IFS=, read -r -a lib_list <<< "$libs"
IFS=, read -r -a sc_list <<< "$scenarios"
IFS=, read -r -a tr_list <<< "$transports"
IFS=, read -r -a pr_list <<< "$protocols"
for lib in "${lib_list[@]}"; do
    case "$lib" in pysignalr|signalrcore) ;; *) echo "unknown library: $lib" >&2; exit 2 ;; esac
done

declare -A driver=( [pysignalr]="$script_dir/signalr_clients.py"
                    [signalrcore]="$script_dir/signalr_clients_signalrcore.py" )
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f", b - a}'; }
declare -A py
t0=$EPOCHREALTIME
server_py=$("$script_dir/ensure-venv.sh" aiosignalr | tail -n1)
for lib in "${lib_list[@]}"; do
    py[$lib]=$("$script_dir/ensure-venv.sh" "$lib" | tail -n1)
done
t_venv_s=$(elapsed "$t0")

combos=$(( ${#lib_list[@]} * ${#tr_list[@]} * ${#pr_list[@]} * ${#sc_list[@]} ))
max_seconds=$(( combos * (per_timeout + 15) + 60 ))

"$server_py" "$script_dir/signalr_hub_server.py" --host 127.0.0.1 --port 0 --path /hub \
    --max-seconds "$max_seconds" "${server_args[@]}" >"$outdir/server.out" 2>"$outdir/server.err" &
server_pid=$!
cleanup() {
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

port=""
for _ in $(seq 200); do
    port=$(awk '$1=="LISTENING"{print $2; exit}' "$outdir/server.out" 2>/dev/null || true)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "signalr_matrix: hub did not start:" >&2
    cat "$outdir/server.err" >&2 || true
    exit 3
fi
url="http://127.0.0.1:$port/hub"
echo "signalr_matrix: hub on $url, $combos combinations, venvs ready in $t_venv_s s" >&2

passed=0; failed=0; unsupported=0
for lib in "${lib_list[@]}"; do
  for tr in "${tr_list[@]}"; do
    for pr in "${pr_list[@]}"; do
      for sc in "${sc_list[@]}"; do
        name="$lib-$tr-$pr-$sc"
        s=$EPOCHREALTIME
        set +e
        timeout -k 5 $(( per_timeout + 15 )) "${py[$lib]}" "${driver[$lib]}" --url "$url" \
            --transport "$tr" --protocol "$pr" --clients "$clients" --messages "$messages" \
            --timeout "$per_timeout" --scenario "$sc" >"$outdir/$name.json" 2>"$outdir/$name.err"
        rc=$?
        set -e
        secs=$(elapsed "$s")
        line=$(tail -n1 "$outdir/$name.json" 2>/dev/null || true)
        detail=""
        case $rc in
            0) verdict=PASS; passed=$((passed + 1)) ;;
            3) verdict=UNSUPPORTED; unsupported=$((unsupported + 1))
               detail=$(printf '%s' "$line" | python3 -c 'import sys,json
try: print(json.loads(sys.stdin.read()).get("unsupported",""))
except Exception: print("")' 2>/dev/null || true) ;;
            *) verdict=FAIL; failed=$((failed + 1))
               detail="rc=$rc $(printf '%s' "$line" | python3 -c 'import sys,json
try:
    d=json.loads(sys.stdin.read()); print("received %s/%s missing %s dup %s errors %s %s" % (d.get("received"), d.get("expected"), d.get("missing"), d.get("duplicates"), d.get("errors"), (d.get("error_samples") or [""])[0]))
except Exception: print("(no report line)")' 2>/dev/null || true)" ;;
        esac
        printf '%-11s %-11s %-11s %-11s %-12s %6ss  %s\n' "$verdict" "$lib" "$tr" "$pr" "$sc" "$secs" "$detail"
      done
    done
  done
done

kill -TERM "$server_pid" 2>/dev/null || true
for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
set +e; wait "$server_pid" 2>/dev/null; server_rc=$?; set -e
echo "server: $(tail -n1 "$outdir/server.out") (exit $server_rc)"
echo "signalr_matrix: total $(elapsed "$t0") s" >&2
echo "$passed passed, $failed failed, $unsupported unsupported"
[ "$failed" -eq 0 ]
