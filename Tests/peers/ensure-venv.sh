#!/usr/bin/env bash
# ensure-venv.sh NAME
#
# Creates (or reuses) the Python virtualenv <repo>/.peers/NAME from
# <repo>/Tests/peers/requirements-NAME.txt.
#
# - Idempotent: a stamp file inside the venv holds the sha256 of the
#   requirements file plus the interpreter version; the venv is rebuilt from
#   scratch only when that changes (or when a previous build did not finish).
# - Concurrency-safe: everything happens under `flock` on <repo>/.peers/NAME.lock,
#   so parallel test processes wait for one build instead of racing.
# - Works from any cwd: the repo root is resolved from this script's location.
# - stdout: the last (and only) line is the venv's python path. Logs -> stderr.
#
# Environment:
#   PEERS_PYTHON        interpreter used to create the venv (default: python3)
#   PEERS_LOCK_TIMEOUT  seconds to wait for the lock (default: 900)
#
# Exit codes: 0 ok; 2 usage error; 3 lock timeout; 4 venv/pip failure.
set -euo pipefail

log() { printf 'ensure-venv: %s\n' "$*" >&2; }

if [ $# -ne 1 ]; then
    log "usage: $0 NAME   (reads Tests/peers/requirements-NAME.txt)"
    exit 2
fi
name=$1
case "$name" in
    ''|*[!A-Za-z0-9_.-]*|.*) log "invalid venv name: '$name'"; exit 2 ;;
esac

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
repo_root=$(cd -- "$script_dir/../.." && pwd -P)
req="$script_dir/requirements-$name.txt"
peers_dir="$repo_root/.peers"
venv="$peers_dir/$name"
stamp="$venv/.requirements.sha256"
lock="$peers_dir/$name.lock"
py_bin=${PEERS_PYTHON:-python3}
lock_timeout=${PEERS_LOCK_TIMEOUT:-900}

if [ ! -f "$req" ]; then
    log "no requirements file: $req"
    exit 2
fi
if ! command -v "$py_bin" >/dev/null 2>&1; then
    log "interpreter not found: $py_bin"
    exit 4
fi

mkdir -p "$peers_dir"

# The wanted stamp: requirements content + interpreter identity. A change of
# either rebuilds the venv (a venv does not survive a Python upgrade).
py_id=$("$py_bin" -c 'import sys; print(sys.version.replace("\n", " "), sys.executable)')
want=$( { sha256sum < "$req"; printf '%s\n' "$py_id"; } | sha256sum | cut -d' ' -f1)

# Fast path without the lock is deliberately NOT taken: a concurrent rebuild
# may be half-way through. Taking the lock is cheap.
exec 9>"$lock"
if ! flock -w "$lock_timeout" 9; then
    log "timed out after ${lock_timeout}s waiting for $lock"
    exit 3
fi

have=""
[ -f "$stamp" ] && have=$(cat "$stamp" 2>/dev/null || true)

if [ "$have" = "$want" ] && [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'pass' 2>/dev/null; then
    log "venv '$name' up to date ($venv)"
else
    if [ -e "$venv" ]; then
        log "requirements changed or venv incomplete: rebuilding $venv"
        rm -rf -- "$venv"
    else
        log "creating venv $venv"
    fi
    start=$(date +%s)
    if ! "$py_bin" -m venv "$venv" >&2; then
        log "python -m venv failed"
        rm -rf -- "$venv"
        exit 4
    fi
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input \
            -q -r "$req" >&2; then
        log "pip install -r $req failed"
        rm -rf -- "$venv"
        exit 4
    fi
    # The stamp is written last: an interrupted build leaves no stamp and is
    # redone on the next call.
    printf '%s\n' "$want" > "$stamp.tmp"
    mv -f -- "$stamp.tmp" "$stamp"
    log "venv '$name' ready in $(( $(date +%s) - start ))s"
fi

exec 9>&-
printf '%s\n' "$venv/bin/python"
