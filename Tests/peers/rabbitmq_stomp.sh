#!/usr/bin/env bash
# rabbitmq_stomp.sh start|stop|status DIR
#
# A private RabbitMQ node (Debian's rabbitmq-server, installed by `scripts/ensure-packages.sh
# --tests`) with STOMP 1.2 over WebSocket (plugin rabbitmq_web_stomp), everything on 127.0.0.1
# and everything of it in DIR: its own node name, ports, data, logs, plugins file, config,
# Erlang cookie (HOME=DIR) and its own epmd on a port of its own. The package's system service
# is not used (and is never started: see ensure-packages.sh).
#
#   start DIR   prints `WEB_STOMP <port>` once the WebSocket endpoint accepts connections
#               (ws://127.0.0.1:<port>/ws, subprotocols v12.stomp, v11.stomp, v10.stomp;
#               login guest/guest from loopback, virtual host /), then `STARTED <seconds>`.
#               DIR/env holds the ports and pids. Gives up after RABBITMQ_START_TIMEOUT seconds
#               (default 60) and stops what it started (exit 1).
#   stop DIR    stops the node by its pid (SIGTERM: Erlang's orderly init:stop), waits up to
#               20 s (then SIGKILL), then stops its epmd by pid; prints `STOPPED <seconds>`.
#   status DIR  exit 0 when the node's pid is alive.
#
# Listeners (all 127.0.0.1): AMQP on NODE_PORT, Erlang distribution on DIST_PORT, epmd on
# EPMD_PORT, WebSocket STOMP on WEB_STOMP_PORT. Plain STOMP over TCP is turned off.
# RABBITMQ_WEB_STOMP_PORT fixes the WebSocket port (default: a free one), e.g. 15674 for
# scenarios/websocket-stomp.yaml.
# `max_seconds` bound: RABBITMQ_MAX_SECONDS (default 600): a watchdog stops the node by then
# even if nobody calls stop.
set -euo pipefail

log() { printf 'rabbitmq_stomp: %s\n' "$*" >&2; }

[ $# -eq 2 ] || { log "usage: $0 start|stop|status DIR"; exit 2; }
cmd=$1
dir=$(mkdir -p -- "$2" && cd -- "$2" && pwd -P)

self=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/$(basename -- "${BASH_SOURCE[0]}")
RMQ_BIN=/usr/lib/rabbitmq/bin/rabbitmq-server   # not /usr/sbin's wrapper: that one su's to the rabbitmq user
EPMD=$(command -v epmd || echo /usr/bin/epmd)

free_ports() { # N -> N distinct free loopback ports, one a line
    python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
for s in socks:
    print(s.getsockname()[1]); s.close()
EOF
}

port_open() { # PORT -> exit 0 when something accepts on 127.0.0.1:PORT
    python3 -c 'import socket,sys; s=socket.socket(); s.settimeout(0.5); sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))))' "$1" 2>/dev/null
}

since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# Alive and not a zombie (an orphan's zombie may wait a while for its reaper).
alive() {
    [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
    local state
    state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$state" != Z ]
}

stop_pid() { # PID SECONDS
    local pid=$1 limit=$2 i
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < limit * 10; i++)); do alive "$pid" || return 0; sleep 0.1; done
    log "pid $pid still alive after ${limit}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

do_stop() {
    [ -f "$dir/env" ] || { log "no $dir/env: nothing to stop"; return 0; }
    # shellcheck disable=SC1091
    . "$dir/env"
    local t0=$(date +%s.%N)
    [ -f "$dir/rabbit.pid" ] && NODE_PID=$(cat "$dir/rabbit.pid")
    stop_pid "${NODE_PID:-}" 20
    log "node stopped in $(since "$t0") s"
    stop_pid "${SCRIPT_PID:-}" 5
    log "wrapper stopped in $(since "$t0") s"
    stop_pid "${EPMD_PID:-}" 5
    log "epmd stopped in $(since "$t0") s"
    # The watchdog's group (bash and its sleep), unless this stop is the watchdog's own.
    if [ -n "${WATCHDOG_PID:-}" ] && [ "$(ps -o pgid= -p $$ | tr -d ' ')" != "$WATCHDOG_PID" ]; then
        kill -TERM -- "-$WATCHDOG_PID" 2>/dev/null || true
    fi
    rm -f "$dir/rabbit.pid"
    echo "STOPPED $(since "$t0")"
}

case "$cmd" in
stop) do_stop; exit 0 ;;
status) [ -f "$dir/rabbit.pid" ] && alive "$(cat "$dir/rabbit.pid")"; exit ;;
start) ;;
*) log "unknown command $cmd"; exit 2 ;;
esac

[ -x "$RMQ_BIN" ] || { log "$RMQ_BIN missing: run scripts/ensure-packages.sh --tests"; exit 4; }
if [ -f "$dir/rabbit.pid" ] && alive "$(cat "$dir/rabbit.pid")"; then
    log "a node from $dir is running already (pid $(cat "$dir/rabbit.pid")): stop it first"; exit 1
fi

mapfile -t ports < <(free_ports 4)
NODE_PORT=${ports[0]} DIST_PORT=${ports[1]} EPMD_PORT=${ports[2]} WEB_STOMP_PORT=${RABBITMQ_WEB_STOMP_PORT:-${ports[3]}}
if port_open "$WEB_STOMP_PORT"; then log "port $WEB_STOMP_PORT is taken"; exit 1; fi
mkdir -p "$dir/mnesia" "$dir/log"
: > "$dir/rabbitmq-env.conf"
echo '[rabbitmq_web_stomp].' > "$dir/enabled_plugins"
cat > "$dir/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$NODE_PORT
stomp.listeners.tcp = none
web_stomp.tcp.ip = 127.0.0.1
web_stomp.tcp.port = $WEB_STOMP_PORT
loopback_users.guest = true
log.console = false
log.file.level = info
EOF

t0=$(date +%s.%N)
# Our own epmd, on our own port, on loopback; started first so the node registers with it
# instead of starting a daemonised one we could not stop by pid.
ERL_EPMD_ADDRESS=127.0.0.1 "$EPMD" -port "$EPMD_PORT" > "$dir/log/epmd.log" 2>&1 &
EPMD_PID=$!

export HOME=$dir
export ERL_EPMD_PORT=$EPMD_PORT ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_NODENAME="stampede$NODE_PORT@localhost"
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$NODE_PORT RABBITMQ_DIST_PORT=$DIST_PORT
export RABBITMQ_CONF_ENV_FILE=$dir/rabbitmq-env.conf
export RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf
export RABBITMQ_ADVANCED_CONFIG_FILE=$dir/advanced.config
export RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins
export RABBITMQ_MNESIA_BASE=$dir/mnesia RABBITMQ_LOG_BASE=$dir/log
export RABBITMQ_PID_FILE=$dir/rabbit.pid
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
# The wrapper script `exec`s erl, so $! is the node's pid (beam.smp) once it has started.
setsid "$RMQ_BIN" > "$dir/log/stdout.log" 2>&1 < /dev/null &
SCRIPT_PID=$!

max_seconds=${RABBITMQ_MAX_SECONDS:-600}
# In a session (and process group) of its own, so that stop ends its sleep too.
setsid bash -c 'sleep "$1"; exec "$2" stop "$3"' watchdog "$max_seconds" "$self" "$dir" > /dev/null 2>&1 < /dev/null &
WATCHDOG_PID=$!
disown -a

cat > "$dir/env" <<EOF
NODE_PORT=$NODE_PORT
DIST_PORT=$DIST_PORT
EPMD_PORT=$EPMD_PORT
WEB_STOMP_PORT=$WEB_STOMP_PORT
EPMD_PID=$EPMD_PID
SCRIPT_PID=$SCRIPT_PID
WATCHDOG_PID=$WATCHDOG_PID
NODENAME=$RABBITMQ_NODENAME
EOF

timeout=${RABBITMQ_START_TIMEOUT:-60}
deadline=$(( $(date +%s) + timeout ))
until port_open "$WEB_STOMP_PORT"; do
    if ! alive "$SCRIPT_PID" || [ "$(date +%s)" -ge "$deadline" ]; then
        log "the node did not open port $WEB_STOMP_PORT (see $dir/log)"
        tail -n 20 "$dir/log/stdout.log" >&2 || true
        do_stop > /dev/null
        exit 1
    fi
    sleep 0.2
done
echo "WEB_STOMP $WEB_STOMP_PORT"
echo "STARTED $(since "$t0")"
