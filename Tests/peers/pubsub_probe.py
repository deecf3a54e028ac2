#!/usr/bin/env python3
"""A small client for pubsub_server.py: runs the issue-22 flow and counts what came back.

  pubsub_probe.py --url ws://127.0.0.1:PORT/ws [--clients 4] [--messages 10] [--token T]
                  [--channels 2] [--first TEXT] [--timeout 10]

Each client: welcome -> auth -> auth_ok -> subscribe room-{client%channels} -> subscribed ->
--messages publishes (ids 1..N) with a {"stamp": "c<client>-<id>"} payload, answering pings,
counting presence, unknown frames, acks (by id, noting out-of-order ones) and events (own and
others'), until every ack and own event is in, the server closes, or --timeout.
--first TEXT sends TEXT as the first message instead of the auth (to see 4401 auth first).
Prints one JSON line of totals; exit 0 when every client got all its acks and own events, else 1.
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


async def one(args, client: int, totals: Counter, closes: Counter, samples: list) -> bool:
    channel = f"room-{client % args.channels}"
    acked: set[int] = set()
    own_events: set[str] = set()
    next_expected_ack = 1
    async with connect(args.url, subprotocols=["pubsub.v1"], open_timeout=5,
                       ping_interval=None, close_timeout=2) as ws:
        totals["subprotocol_" + str(ws.subprotocol)] += 1
        async def expect(pred, what):
            while True:
                raw = await ws.recv()
                m = classify(raw)
                if m is not None and m.get("type") == "ping":
                    await ws.send('{"type":"pong"}'); totals["pongs_sent"] += 1; continue
                if m is not None and m.get("type") == "presence":
                    totals["presence"] += 1; continue
                if m is not None and pred(m):
                    return m
                totals["unrecognised"] += 1
                if len(samples) < 3:
                    samples.append(raw if isinstance(raw, str) else raw.hex())
        try:
            welcome = await expect(lambda m: m.get("type") == "welcome", "welcome")
            if args.first is not None:
                await ws.send(args.first)
            else:
                await ws.send(json.dumps({"op": "auth", "token": args.token, "session": welcome["session"]}))
                await expect(lambda m: m.get("op") == "auth_ok", "auth_ok")
                await ws.send(json.dumps({"op": "subscribe", "channel": channel}))
                await expect(lambda m: m.get("op") == "subscribed", "subscribed")
                totals["connected"] += 1
                for i in range(1, args.messages + 1):
                    await ws.send(json.dumps({"op": "publish", "channel": channel, "id": i,
                                              "data": {"stamp": f"c{client}-{i}"}}))
                    totals["published"] += 1
            while len(acked) < args.messages or len(own_events) < args.messages or args.first is not None:
                m = await expect(lambda m: m.get("op") in ("ack", "event"), "reply")
                if m["op"] == "ack":
                    i = m["id"]
                    if i in acked:
                        totals["duplicate_acks"] += 1
                    acked.add(i)
                    totals["acks"] += 1
                    if i != next_expected_ack:
                        totals["acks_out_of_order"] += 1
                    next_expected_ack = i + 1
                else:
                    stamp = m["data"]["stamp"]
                    if stamp.startswith(f"c{client}-"):
                        own_events.add(stamp); totals["own_events"] += 1
                    else:
                        totals["other_events"] += 1
        except ConnectionClosed:
            pass
        rcvd = ws.protocol.close_rcvd
        if rcvd is not None:
            closes[f"{rcvd.code} {rcvd.reason}".rstrip()] += 1
    return len(acked) == args.messages and len(own_events) == args.messages


def classify(raw):
    if isinstance(raw, bytes):
        return None
    try:
        m = json.loads(raw)
    except ValueError:
        return None
    return m if isinstance(m, dict) else None


async def amain(args) -> int:
    totals: Counter = Counter()
    closes: Counter = Counter()
    samples: list = []
    t0 = time.monotonic()
    try:
        oks = await asyncio.wait_for(asyncio.gather(
            *(one(args, c, totals, closes, samples) for c in range(args.clients)),
            return_exceptions=True), timeout=args.timeout)
    except asyncio.TimeoutError:
        oks = [False]; totals["timed_out"] = 1
    errors = [repr(o) for o in oks if isinstance(o, BaseException)]
    ok = all(o is True for o in oks)
    print(json.dumps({"ok": ok, "seconds": round(time.monotonic() - t0, 3), **totals,
                      "closes": dict(closes), "samples": samples, "errors": errors[:3]}), flush=True)
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--messages", type=int, default=10)
    p.add_argument("--channels", type=int, default=2)
    p.add_argument("--token", default="secret")
    p.add_argument("--first", default=None)
    p.add_argument("--timeout", type=float, default=10)
    args = p.parse_args()
    if not (1 <= args.clients <= 200 and 0 <= args.messages <= 10000 and args.timeout <= 120):
        p.error("keep it small: clients 1..200, messages <= 10000, timeout <= 120")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
