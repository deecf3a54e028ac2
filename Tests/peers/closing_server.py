#!/usr/bin/env python3
"""A WebSocket server (`websockets`, asyncio API) that closes every connection as soon as it
is open, with a given close code and reason: a server refusing clients that did not
authenticate, as a client sees it (for close-code accounting tests).

Contract (see Tests/peers/README.md):
  stdout line 1:    ``LISTENING <port>``  (flushed once bound)
  stdout last line: ``{"closed": N}``
  exit 0 on SIGTERM/SIGINT, 3 when --max-seconds ran out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from websockets.asyncio.server import serve


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--code", type=int, default=4401)
    p.add_argument("--reason", default="auth first")
    p.add_argument("--max-seconds", type=float, default=60)
    args = p.parse_args()
    closed = 0

    async def handler(conn):
        nonlocal closed
        closed += 1
        await conn.close(code=args.code, reason=args.reason)

    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(0))
    async with serve(handler, "127.0.0.1", args.port) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"LISTENING {port}", flush=True)
        try:
            status = await asyncio.wait_for(stop, args.max_seconds)
        except asyncio.TimeoutError:
            status = 3
    print(json.dumps({"closed": closed}), flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
