#!/usr/bin/env python3
"""A small MQTT 3.1.1 over WebSocket client from raw packets (websockets venv), for amqtt_broker.py.

  mqtt_probe.py --url ws://127.0.0.1:PORT/mqtt [--clients 3] [--messages 5]
                [--client-id empty|u16|u32] [--sub-qos 0] [--show] [--timeout 10]

The packets are the fixed-width ones a binary template can render (docs in Tests/peers/README.md):

  CONNECT    10 0c 0004 4d515454 04 02 003c 0000               (client id empty: the broker assigns one)
             10 0e 0004 4d515454 04 02 003c 0002 {client:u16}  (--client-id u16)
  CONNACK    20 02 00 00
  SUBSCRIBE  82 0d 0001 0008 7374616d70656465 QQ               (topic "stampede", requested QoS QQ)
  SUBACK     90 03 0001 QQ
  PUBLISH    32 28 0008 7374616d70656465 {sequence:u16} {stamp}   (QoS 1, 28-byte stamp payload)
  PUBACK     40 02 {packet id}
  delivered  30 26 0008 7374616d70656465 {stamp}                (QoS 0 when subscribed with QoS 0)

Each client connects, subscribes, publishes --messages QoS-1 messages (packet ids 1..N) and waits
for every PUBACK and every own delivery. Counts WebSocket frames that held other than exactly
one MQTT packet (a flow matches frame by frame). --show prints client 0's packets in hex.
One JSON line; exit 0 when every client got everything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
import time
from collections import Counter

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

TOPIC = b"stampede"


def connect_packet(mode: str, client: int) -> bytes:
    cid = {"empty": b"", "u16": struct.pack(">H", client), "u32": struct.pack(">I", client)}[mode]
    var = b"\x00\x04MQTT\x04\x02\x00\x3c" + struct.pack(">H", len(cid)) + cid
    return bytes([0x10, len(var)]) + var


def subscribe_packet(qos: int) -> bytes:
    body = b"\x00\x01" + struct.pack(">H", len(TOPIC)) + TOPIC + bytes([qos])
    return bytes([0x82, len(body)]) + body


def stamp(client: int, seq: int) -> bytes:
    # The design's binary stamp: ~SB~ + sender u32 + sequence u32 + intended u64 + actual u64.
    now = time.monotonic_ns()
    return b"~SB~" + struct.pack(">IIQQ", client, seq, now, now)


def publish_packet(seq: int, payload: bytes) -> bytes:
    body = struct.pack(">H", len(TOPIC)) + TOPIC + struct.pack(">H", seq) + payload
    return bytes([0x32, len(body)]) + body


def split_packets(data: bytes) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        j, mult, rem = i + 1, 1, 0
        while True:
            b = data[j]; j += 1
            rem += (b & 0x7F) * mult; mult *= 128
            if not b & 0x80:
                break
        out.append(data[i:j + rem]); i = j + rem
    return out


async def one(args, client: int, totals: Counter) -> bool:
    verbose = args.show and client == 0
    async with connect(args.url, subprotocols=["mqtt"], open_timeout=10, ping_interval=None,
                       close_timeout=2) as ws:
        totals["subprotocol_" + str(ws.subprotocol)] += 1

        async def send(pkt: bytes) -> None:
            if verbose:
                print(">> " + pkt.hex(" "), file=sys.stderr)
            await ws.send(pkt)

        pending: list[bytes] = []

        async def recv() -> bytes:
            while not pending:
                raw = await ws.recv()
                if isinstance(raw, str):
                    totals["text_frames"] += 1
                    raw = raw.encode()
                pkts = split_packets(raw)
                if len(pkts) != 1:
                    totals["frames_with_%d_packets" % len(pkts)] += 1
                pending.extend(pkts)
            pkt = pending.pop(0)
            if verbose:
                print("<< " + pkt.hex(" "), file=sys.stderr)
            return pkt

        await send(connect_packet(args.client_id, client))
        p = await recv()
        if p != b"\x20\x02\x00\x00":
            totals["bad_connack"] += 1
            print(f"client {client}: CONNACK {p.hex(' ')}", file=sys.stderr)
            return False
        totals["connacks"] += 1
        await send(subscribe_packet(args.sub_qos))
        p = await recv()
        if p != bytes([0x90, 0x03, 0x00, 0x01, args.sub_qos]):
            totals["bad_suback"] += 1
            print(f"client {client}: SUBACK {p.hex(' ')}", file=sys.stderr)
            return False
        totals["subacks"] += 1
        acks: set[int] = set()
        own: set[int] = set()
        for i in range(1, args.messages + 1):
            await send(publish_packet(i, stamp(client, i)))
            totals["published"] += 1
        try:
            while len(acks) < args.messages or len(own) < args.messages:
                p = await recv()
                kind = p[0] >> 4
                if p[0] == 0x40:
                    acks.add(struct.unpack(">H", p[2:4])[0]); totals["pubacks"] += 1
                elif kind == 3:
                    qos = (p[0] >> 1) & 3
                    tlen = struct.unpack(">H", p[2:4])[0]
                    off = 4 + tlen + (2 if qos else 0)
                    if qos == 1:   # a QoS 1 delivery must be acknowledged
                        await send(b"\x40\x02" + p[4 + tlen:6 + tlen]); totals["pubacks_sent"] += 1
                    payload = p[off:]
                    sender, seq = struct.unpack(">II", payload[4:12])
                    totals[f"delivered_qos{qos}"] += 1
                    if sender == client:
                        own.add(seq)
                else:
                    totals["other_%02x" % p[0]] += 1
            await send(b"\xe0\x00")
        except ConnectionClosed as e:
            totals["closed_" + str(e.rcvd.code if e.rcvd else None)] += 1
    return len(acks) == len(own) == args.messages


async def amain(args) -> int:
    totals: Counter = Counter()
    t0 = time.monotonic()
    try:
        oks = await asyncio.wait_for(asyncio.gather(
            *(one(args, c, totals) for c in range(args.first_client, args.first_client + args.clients)),
            return_exceptions=True), timeout=args.timeout)
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
    p.add_argument("--first-client", type=int, default=0, help="index of the first client (for client ids)")
    p.add_argument("--messages", type=int, default=5)
    p.add_argument("--client-id", choices=("empty", "u16", "u32"), default="empty")
    p.add_argument("--sub-qos", type=int, choices=(0, 1), default=0)
    p.add_argument("--show", action="store_true")
    p.add_argument("--timeout", type=float, default=10)
    args = p.parse_args()
    if not (1 <= args.clients <= 200 and 0 <= args.messages <= 10000 and args.timeout <= 120):
        p.error("keep it small: clients 1..200, messages <= 10000, timeout <= 120")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
