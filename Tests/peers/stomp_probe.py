#!/usr/bin/env python3
"""A small STOMP 1.2 over WebSocket client for RabbitMQ's web-stomp (rabbitmq_stomp.sh).

  stomp_probe.py --url ws://127.0.0.1:PORT/ws [--clients 3] [--messages 5] [--rooms 1]
                 [--heart-beat 0,0] [--show] [--timeout 10]

Each client: CONNECT (accept-version:1.2, host:/, guest/guest) -> CONNECTED; SUBSCRIBE
id:0 to /topic/room-{client%rooms} with receipt:sub -> RECEIPT; then --messages SENDs to its
room, each with receipt:{i} and a body carrying a stamp "c<client>-<i>"; waits for every RECEIPT
(receipt-id:{i}) and every own MESSAGE. --show prints the first client's frames as sent and
received (NULs as ^@). One JSON line of totals; exit 0 when every client got everything.
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


def frame(command: str, headers: dict, body: str = "") -> str:
    return command + "\n" + "".join(f"{k}:{v}\n" for k, v in headers.items()) + "\n" + body + "\x00"


def parse(raw: str) -> tuple[str, dict, str]:
    head, _, body = raw.partition("\n\n")
    lines = head.split("\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers.setdefault(k, v)     # STOMP 1.2: the first of repeated headers wins
    return lines[0], headers, body.rstrip("\x00")


def show(direction: str, data) -> None:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    print(f"{direction} {json.dumps(text.replace(chr(0), '^@'))}", file=sys.stderr)


async def one(args, client: int, totals: Counter) -> bool:
    verbose = args.show and client == 0
    room = f"/topic/room-{client % args.rooms}"
    async with connect(args.url, subprotocols=["v12.stomp"], open_timeout=10,
                       ping_interval=None, close_timeout=2) as ws:
        totals["subprotocol_" + str(ws.subprotocol)] += 1

        async def send(text: str) -> None:
            if verbose:
                show(">>", text)
            await ws.send(text)

        async def recv() -> tuple[str, dict, str]:
            while True:
                raw = await ws.recv()
                if verbose:
                    show("<<", raw)
                if isinstance(raw, bytes):
                    totals["binary_frames"] += 1
                    raw = raw.decode()
                if raw.strip("\r\n") == "":
                    totals["heartbeats"] += 1
                    continue
                return parse(raw)

        await send(frame("CONNECT", {"accept-version": "1.2", "host": "/", "login": "guest",
                                     "passcode": "guest", "heart-beat": args.heart_beat}))
        cmd, h, body = await recv()
        if cmd != "CONNECTED":
            totals["connect_" + cmd] += 1
            print(f"client {client}: {cmd} {h} {body}", file=sys.stderr)
            return False
        totals["connected"] += 1
        totals["version_" + h.get("version", "?")] += 1
        await send(frame("SUBSCRIBE", {"id": "0", "destination": room, "ack": "auto", "receipt": "sub"}))
        cmd, h, _ = await recv()
        if cmd != "RECEIPT" or h.get("receipt-id") != "sub":
            totals["subscribe_failed"] += 1
            return False
        receipts: set[str] = set()
        own: set[str] = set()
        for i in range(1, args.messages + 1):
            await send(frame("SEND", {"destination": room, "receipt": str(i), "content-type": "text/plain"},
                             f"c{client}-{i}"))
            totals["sent"] += 1
        try:
            while len(receipts) < args.messages or len(own) < args.messages:
                cmd, h, body = await recv()
                if cmd == "RECEIPT":
                    receipts.add(h["receipt-id"]); totals["receipts"] += 1
                elif cmd == "MESSAGE":
                    if body.startswith(f"c{client}-"):
                        own.add(body); totals["own_messages"] += 1
                    else:
                        totals["other_messages"] += 1
                else:
                    totals["other_" + cmd] += 1
                    print(f"client {client}: {cmd} {h} {body}", file=sys.stderr)
            await send(frame("DISCONNECT", {"receipt": "bye"}))
            cmd, h, _ = await recv()
            totals["disconnect_" + cmd] += 1
        except ConnectionClosed as e:
            totals["closed_" + str(e.rcvd.code if e.rcvd else None)] += 1
    return len(receipts) == args.messages and len(own) == args.messages


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
    p.add_argument("--heart-beat", default="0,0")
    p.add_argument("--show", action="store_true")
    p.add_argument("--timeout", type=float, default=10)
    args = p.parse_args()
    if not (1 <= args.clients <= 200 and 0 <= args.messages <= 10000 and args.timeout <= 120):
        p.error("keep it small: clients 1..200, messages <= 10000, timeout <= 120")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
