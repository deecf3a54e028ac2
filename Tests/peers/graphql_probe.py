#!/usr/bin/env python3
"""A small graphql-transport-ws client for graphql_server.py (websockets venv).

  graphql_probe.py --url ws://127.0.0.1:PORT/graphql [--clients 3] [--messages 5] [--rooms 1]
                   [--show] [--timeout 10]

Each client: connection_init -> connection_ack; subscribe id "sub" to messages(room-{client%rooms})
(no reply until the first event); then --messages mutations, each a `subscribe` with id "{i}"
(variables room, stamp "c<client>-<i>", id "{i}"), expecting `next` {"data":{"publish":"{i}"}}
and `complete` with id "{i}", and a `next` with id "sub" carrying each own stamp. Server pings are
answered with pongs. --show prints client 0's frames. One JSON line; exit 0 when all came back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

SUBSCRIPTION = "subscription($r:String!){ messages(room:$r){ room stamp id } }"
MUTATION = "mutation($r:String!,$s:String!,$i:String!){ publish(room:$r,stamp:$s,id:$i) }"


async def one(args, client: int, totals: Counter) -> bool:
    verbose = args.show and client == 0
    room = f"room-{client % args.rooms}"
    async with connect(args.url, subprotocols=["graphql-transport-ws"], open_timeout=10,
                       ping_interval=None, close_timeout=2) as ws:
        totals["subprotocol_" + str(ws.subprotocol)] += 1

        async def send(obj) -> None:
            text = json.dumps(obj, separators=(",", ":"))
            if verbose:
                print(">> " + text, file=sys.stderr)
            await ws.send(text)

        async def recv() -> dict:
            while True:
                raw = await ws.recv()
                if verbose:
                    print("<< " + raw, file=sys.stderr)
                m = json.loads(raw)
                if m.get("type") == "ping":
                    totals["server_pings"] += 1
                    await send({"type": "pong"})
                    continue
                return m

        await send({"type": "connection_init", "payload": {}})
        m = await recv()
        if m.get("type") != "connection_ack":
            totals["no_ack"] += 1
            return False
        totals["acked"] += 1
        await send({"id": "sub", "type": "subscribe",
                    "payload": {"query": SUBSCRIPTION, "variables": {"r": room}}})
        # The subscription is live once the server has run the resolver up to its first await:
        # a ping round trip is not a guarantee; a short pause is enough here.
        await asyncio.sleep(args.settle)
        results: set[str] = set()
        completes: set[str] = set()
        own: set[str] = set()
        for i in range(1, args.messages + 1):
            await send({"id": str(i), "type": "subscribe",
                        "payload": {"query": MUTATION,
                                    "variables": {"r": room, "s": f"c{client}-{i}", "i": str(i)}}})
            totals["mutations"] += 1
        try:
            while len(results) < args.messages or len(completes) < args.messages or len(own) < args.messages:
                m = await recv()
                t, ident = m.get("type"), m.get("id")
                if t == "next" and ident == "sub":
                    stamp = m["payload"]["data"]["messages"]["stamp"]
                    if stamp.startswith(f"c{client}-"):
                        own.add(stamp); totals["own_events"] += 1
                    else:
                        totals["other_events"] += 1
                elif t == "next":
                    if m["payload"].get("data", {}).get("publish") != ident:
                        totals["mismatched_results"] += 1
                    results.add(ident); totals["results"] += 1
                elif t == "complete":
                    completes.add(ident); totals["completes"] += 1
                else:
                    totals["other_" + str(t)] += 1
                    print(f"client {client}: {m}", file=sys.stderr)
            await send({"id": "sub", "type": "complete"})
        except ConnectionClosed as e:
            totals["closed_" + str(e.rcvd.code if e.rcvd else None)] += 1
    return len(results) == len(completes) == len(own) == args.messages


async def amain(args) -> int:
    totals: Counter = Counter()
    t0 = time.monotonic()
    try:
        oks = await asyncio.wait_for(asyncio.gather(
            *(one(args, c, totals) for c in range(args.clients)), return_exceptions=True),
            timeout=args.timeout)
    except asyncio.TimeoutError:
        oks = [False]; totals["timed_out"] = 1
    errors = [repr(o) for o in oks if isinstance(o, BaseException)]
    ok = all(o is True for o in oks)
    print(json.dumps({"ok": ok, "seconds": round(time.monotonic() - t0, 3), **totals,
                      "errors": errors[:3]}), flush=True)
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--messages", type=int, default=5)
    p.add_argument("--rooms", type=int, default=1)
    p.add_argument("--settle", type=float, default=0.2, help="s between subscribing and publishing")
    p.add_argument("--show", action="store_true")
    p.add_argument("--timeout", type=float, default=10)
    args = p.parse_args()
    if not (1 <= args.clients <= 200 and 0 <= args.messages <= 10000 and args.timeout <= 120):
        p.error("keep it small: clients 1..200, messages <= 10000, timeout <= 120")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
