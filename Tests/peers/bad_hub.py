#!/usr/bin/env python3
"""A deliberately broken SignalR hub for robustness tests (websockets 17, WebSockets only).

Clients connect with skipNegotiation to ws://127.0.0.1:PORT/hub?mode=MODE. The server answers
the handshake with {} and then sends one malformed hub message chosen by MODE, and keeps the
connection open until the client closes it (or --max-seconds). Stampede must count each case
as a protocol error and end that connection, never crash or hang.

Modes (JSON unless noted):
  invalid-json          '{"type":1,' + 0x1E
  result-and-error      Completion with both result and error
  non-numeric-type      {"type":"x"}
  empty-target          Invocation with an empty target
  mp-truncated-varint   MessagePack: 0x80 then nothing more, then close after 1 s
  mp-overlong-length    MessagePack: VarInt 80 80 80 80 08 (over 2 GB)
  mp-non-map-headers    MessagePack: [1, "x", nil, "m", []] (headers not a map)
  mp-empty-body         MessagePack: zero-length body
  silent                nothing after the handshake, not even pings (the client's server timeout)
stdout: "LISTENING <port>"; exit 0 on SIGTERM.
"""
import argparse
import asyncio
import signal
import sys
from urllib.parse import parse_qs, urlparse

from websockets.asyncio.server import serve

PAYLOADS = {
    "invalid-json": (False, b'{"type":1,\x1e'),
    "result-and-error": (False, b'{"type":3,"invocationId":"1","result":1,"error":"x"}\x1e'),
    "non-numeric-type": (False, b'{"type":"x"}\x1e'),
    "empty-target": (False, b'{"type":1,"target":"","arguments":[]}\x1e'),
    "mp-truncated-varint": (True, b"\x80"),
    "mp-overlong-length": (True, b"\x80\x80\x80\x80\x08"),
    "mp-non-map-headers": (True, b"\x08\x95\x01\xa1x\xc0\xa1m\x90"),
    "mp-empty-body": (True, b"\x00"),
    "silent": (False, b""),
}


async def handler(ws):
    query = parse_qs(urlparse(ws.request.path).query)
    mode = query.get("mode", ["invalid-json"])[0]
    binary, payload = PAYLOADS[mode]
    await ws.recv()  # the handshake request
    await ws.send("{}\x1e")
    if payload:
        await ws.send(payload if binary else payload.decode("utf-8", "replace"))
    if mode == "mp-truncated-varint":
        # The rest of the length never comes: drop the connection without a close frame.
        await asyncio.sleep(0.3)
        ws.transport.abort()
        return
    try:
        async for _ in ws:
            pass
    except Exception:
        pass


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=120)
    args = p.parse_args()
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    async with serve(handler, "127.0.0.1", args.port) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"LISTENING {port}", flush=True)
        try:
            await asyncio.wait_for(stop, args.max_seconds)
        except asyncio.TimeoutError:
            pass


asyncio.run(main())
