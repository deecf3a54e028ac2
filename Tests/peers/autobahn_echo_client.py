#!/usr/bin/env python3
"""Autobahn fuzzingserver client under test, built on `websockets` (asyncio API).

Follows the Autobahn client protocol against a fuzzingserver (kosoku or
autobahntestsuite):
  1. ws://HOST:PORT/getCaseCount          -> one text message: N
  2. for i in 1..N: ws://HOST:PORT/runCase?case=i&agent=AGENT
     echo every message back (same type) until the server closes
  3. ws://HOST:PORT/updateReports?agent=AGENT  (the server writes its reports)
It never calls /getCaseInfo (kosoku runs the case on that path).

It is a stand-in for Stampede's Swift client, to check the peer setup and
autobahn_report.py end to end.

stdout: one JSON line {"agent":..., "cases":N, "errors":E, "seconds":T}
exit: 0 when the protocol ran to the end (whatever the verdicts: read them
from the report), 1 on a protocol/timeout failure, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import sys
import time
from urllib.parse import quote, urlsplit

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake


def err(msg: str) -> None:
    print(f"autobahn_echo_client: {msg}", file=sys.stderr, flush=True)


def check_loopback_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != "ws":
        raise ValueError(f"URL must be ws://HOST:PORT, got {url!r}")
    host = parts.hostname or ""
    if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"refusing non-loopback host {host!r}")
    return url.rstrip("/")


def client_kwargs(args: argparse.Namespace) -> dict:
    return dict(
        compression="deflate" if args.compression == "deflate" else None,
        max_size=None,          # 9.x sends messages up to 16 MiB
        max_queue=None,
        ping_interval=None,     # no keepalive pings of our own inside cases
        open_timeout=10,
        close_timeout=5,
        user_agent_header=f"stampede-peer-autobahn-echo ({args.agent})",
    )


async def run_case(base: str, i: int, args: argparse.Namespace) -> str | None:
    url = f"{base}/runCase?case={i}&agent={quote(args.agent)}"
    try:
        async with connect(url, **client_kwargs(args)) as ws:
            async for msg in ws:
                await ws.send(msg)
    except ConnectionClosed:
        pass  # the case may close with an error code on purpose
    except (InvalidHandshake, OSError) as e:
        return f"case {i}: {e!r}"
    return None


async def amain(args: argparse.Namespace) -> int:
    base = args.url
    t0 = time.perf_counter()
    errors: list[str] = []
    try:
        async with asyncio.timeout(args.timeout):
            async with connect(f"{base}/getCaseCount", **client_kwargs(args)) as ws:
                count = int(await ws.recv())
            err(f"{count} cases")
            for i in range(1, count + 1):
                try:
                    async with asyncio.timeout(args.case_timeout):
                        e = await run_case(base, i, args)
                except TimeoutError:
                    e = f"case {i}: no close after {args.case_timeout}s"
                if e:
                    errors.append(e)
                    err(e)
                if args.verbose:
                    err(f"case {i}/{count} done")
            async with connect(
                f"{base}/updateReports?agent={quote(args.agent)}", **client_kwargs(args)
            ) as ws:
                try:
                    await ws.recv()
                except ConnectionClosed:
                    pass
    except TimeoutError:
        err(f"timed out after {args.timeout}s")
        print(json.dumps({"agent": args.agent, "cases": None, "errors": len(errors) + 1,
                          "seconds": round(time.perf_counter() - t0, 3)}), flush=True)
        return 1
    except (OSError, InvalidHandshake, ValueError, ConnectionClosed) as e:
        err(f"protocol failure: {e!r}")
        print(json.dumps({"agent": args.agent, "cases": None, "errors": len(errors) + 1,
                          "seconds": round(time.perf_counter() - t0, 3)}), flush=True)
        return 1
    print(json.dumps({"agent": args.agent, "cases": count, "errors": len(errors),
                      "seconds": round(time.perf_counter() - t0, 3)}), flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="ws://127.0.0.1:9001", help="fuzzingserver base URL (loopback)")
    p.add_argument("--agent", default="websockets-echo", help="agent name used in the report")
    p.add_argument("--timeout", type=float, default=900, help="bound for the whole run (s)")
    p.add_argument("--case-timeout", type=float, default=60, help="bound for one case (s)")
    p.add_argument("--compression", choices=("none", "deflate"), default="none",
                   help="offer permessage-deflate (needed for a meaningful 12.x/13.x run)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    try:
        args.url = check_loopback_url(args.url)
    except ValueError as e:
        p.error(str(e))
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
