#!/usr/bin/env python3
"""(Re)start a peer server in the background: what a scenario's `command` event runs to
restart "the user's own server" in the storm tests.

    restart_server.py --pidfile F --port P [--log L] -- <server command ...>

If F names a live process it is stopped (SIGTERM, then SIGKILL after 5 s) and waited for.
The server command is then started in its own session (it outlives this script), its pid
written to F, and this script waits until 127.0.0.1:P accepts connections.

stdout: ``stopped <pid>`` (when there was one) and ``started <pid> on port <P>``.
Exit 0 when the server is up, 1 when it did not come up within --ready-timeout
(it is killed then), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not a server: look at its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)


def accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv:
        print("usage: restart_server.py --pidfile F --port P [--log L] -- <server command ...>", file=sys.stderr)
        return 2
    split = argv.index("--")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pidfile", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--log", default=os.devnull, help="the server's stdout and stderr (appended)")
    p.add_argument("--ready-timeout", type=float, default=20.0)
    args = p.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        print("restart_server.py: no server command after --", file=sys.stderr)
        return 2

    try:
        with open(args.pidfile) as f:
            old = int(f.read().strip() or "0")
    except (OSError, ValueError):
        old = 0
    if old > 0 and alive(old):
        stop(old)
        print(f"stopped {old}", flush=True)

    with open(args.log, "ab") as log:
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    with open(args.pidfile + ".tmp", "w") as f:
        f.write(f"{server.pid}\n")
    os.replace(args.pidfile + ".tmp", args.pidfile)

    deadline = time.monotonic() + args.ready_timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            print(f"server exited with {server.returncode} before accepting", file=sys.stderr)
            return 1
        if accepting(args.port):
            print(f"started {server.pid} on port {args.port}", flush=True)
            return 0
        time.sleep(0.05)
    stop(server.pid)
    print(f"server did not accept on port {args.port} within {args.ready_timeout} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
