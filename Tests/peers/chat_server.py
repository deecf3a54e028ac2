#!/usr/bin/env python3
"""Reference chat server (workloads.md §2) built on `websockets` (asyncio API).

A WebSocket endpoint (default ``/chat``) keeps the set of connected clients.
Every text message received must be JSON ``{"message": str, "user": str,
"userID": "<uuid>"}``; the server answers by sending, to every connected
client (the sender included), JSON ``{"date": <server time, ISO 8601>,
"id": <new uuid4>, "message", "user", "userID"}``. Invalid messages are
reported on stderr and dropped; the connection stays open.

Contract (see Tests/peers/README.md):
  stdout line 1:    ``LISTENING <port>``            (flushed once bound)
  stdout last line: ``{"received": N, "broadcast_frames": M, "invalid": K, ...}``
  exit 0 on SIGTERM/SIGINT, 3 when --max-seconds ran out, 2 on bad arguments.

TLS (``--tls-cert F --tls-key F``, PEM): the same endpoint over ``wss://``,
with Python's ``ssl`` module (OpenSSL) terminating TLS 1.2/1.3.

Fan-out (``--fanout``):
  send       (default) ``asyncio.gather(conn.send(...) for each client)``: every
             frame is handed to every OPEN connection and awaited, with
             backpressure (a slow reader slows the sender's receive loop, it
             never loses frames). Sends that fail because the peer is already
             closing are counted in ``send_failures``.
  broadcast  ``websockets.asyncio.server.broadcast``: synchronous, no
             backpressure; it silently skips connections that are not OPEN
             (closing), which are counted here in ``send_failures`` too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import ssl
import sys
import uuid
from datetime import datetime, timezone

from websockets.asyncio.server import ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State
from loopback import loopback_host

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_MAX_SECONDS = 3


def err(msg: str) -> None:
    print(f"chat_server: {msg}", file=sys.stderr, flush=True)



def iso8601_now() -> str:
    # Seconds precision with a "Z" suffix: what Foundation's
    # JSONDecoder.DateDecodingStrategy.iso8601 accepts (it rejects fractions).
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_chat_message(raw: str | bytes) -> dict:
    """Validate an incoming chat message; raise ValueError if invalid."""
    if isinstance(raw, bytes):
        raise ValueError("binary frame (expected a text frame)")
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ValueError("JSON is not an object")
    for key in ("message", "user", "userID"):
        if not isinstance(obj.get(key), str):
            raise ValueError(f"missing or non-string field {key!r}")
    try:
        uuid.UUID(obj["userID"])
    except ValueError:
        raise ValueError(f"userID is not a UUID: {obj['userID']!r}") from None
    return obj


class ChatServer:
    def __init__(self, path: str, fanout: str) -> None:
        self.path = path
        self.fanout = fanout
        self.clients: set[ServerConnection] = set()
        self.received = 0
        self.invalid = 0
        self.broadcast_frames = 0
        self.send_failures = 0
        self.connections_total = 0
        self.peak_clients = 0

    def process_request(self, connection: ServerConnection, request):
        # request.path includes any query string.
        if request.path.split("?", 1)[0] != self.path:
            return connection.respond(404, "Not Found\n")
        return None

    async def handler(self, ws: ServerConnection) -> None:
        self.clients.add(ws)
        self.connections_total += 1
        self.peak_clients = max(self.peak_clients, len(self.clients))
        try:
            async for raw in ws:
                self.received += 1
                try:
                    msg = parse_chat_message(raw)
                except ValueError as e:
                    self.invalid += 1
                    err(f"dropping invalid message from {ws.remote_address}: {e}")
                    continue
                out = json.dumps(
                    {
                        "date": iso8601_now(),
                        "id": str(uuid.uuid4()),
                        "message": msg["message"],
                        "user": msg["user"],
                        "userID": msg["userID"],
                    },
                    separators=(",", ":"),
                ).encode()
                await self.fan_out(out)
        except ConnectionClosed:
            pass
        finally:
            self.clients.discard(ws)

    async def fan_out(self, payload: bytes) -> None:
        targets = list(self.clients)
        if self.fanout == "broadcast":
            open_targets = [c for c in targets if c.protocol.state is State.OPEN]
            self.send_failures += len(targets) - len(open_targets)
            try:
                broadcast(open_targets, payload, text=True, raise_exceptions=True)
                self.broadcast_frames += len(open_targets)
            except ExceptionGroup as eg:  # noqa: F821 (3.11+)
                failed = len(eg.exceptions)
                self.send_failures += failed
                self.broadcast_frames += len(open_targets) - failed
            return
        results = await asyncio.gather(
            *(c.send(payload, text=True) for c in targets), return_exceptions=True
        )
        for r in results:
            if isinstance(r, BaseException):
                self.send_failures += 1
                if not isinstance(r, ConnectionClosed):
                    err(f"send failed: {r!r}")
            else:
                self.broadcast_frames += 1

    def summary(self, reason: str) -> dict:
        return {
            "received": self.received,
            "broadcast_frames": self.broadcast_frames,
            "invalid": self.invalid,
            "send_failures": self.send_failures,
            "connections": self.connections_total,
            "peak_clients": self.peak_clients,
            "reason": reason,
        }


async def amain(args: argparse.Namespace) -> int:
    chat = ChatServer(args.path, args.fanout)
    stop = asyncio.Event()
    reason = "signal"
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    tls = None
    if args.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.minimum_version = ssl.TLSVersion.TLSv1_2
        tls.load_cert_chain(args.tls_cert, args.tls_key)
    server = await serve(
        chat.handler,
        args.host,
        args.port,
        ssl=tls,
        process_request=chat.process_request,
        compression="deflate" if args.compression == "deflate" else None,
        ping_interval=args.ping_interval or None,
        ping_timeout=args.ping_interval or None,
        close_timeout=2,
        max_size=args.max_size,
        server_header="stampede-peer-chat-server",
    )
    sockets = server.sockets
    port = sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    err(f"serving {'wss' if tls else 'ws'}://{args.host}:{port}{args.path} fanout={args.fanout} "
        f"max_seconds={args.max_seconds}")

    try:
        await asyncio.wait_for(stop.wait(), timeout=args.max_seconds)
    except asyncio.TimeoutError:
        reason = "max-seconds"
        err(f"--max-seconds {args.max_seconds} elapsed, shutting down")

    server.close()  # closes open connections with 1001 (going away)
    try:
        await asyncio.wait_for(server.wait_closed(), timeout=5)
    except asyncio.TimeoutError:
        err("timed out waiting for connections to close")
    print(json.dumps(chat.summary(reason)), flush=True)
    return EXIT_OK if reason == "signal" else EXIT_MAX_SECONDS


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="0 = ephemeral (read it from the LISTENING line)")
    p.add_argument("--path", default="/chat", help="WebSocket endpoint path; others get HTTP 404")
    p.add_argument("--max-seconds", type=float, default=300, help="exit by itself after this long (default 300)")
    p.add_argument("--fanout", choices=("send", "broadcast"), default="send",
                   help="send: await conn.send per client (never drops, backpressure; default); "
                        "broadcast: websockets broadcast() (no backpressure)")
    p.add_argument("--compression", choices=("none", "deflate"), default="none",
                   help="permessage-deflate: none (default, like Vapor) or deflate")
    p.add_argument("--ping-interval", type=float, default=20,
                   help="server keepalive pings every N s, 0 = off (default 20, websockets' default)")
    p.add_argument("--max-size", type=int, default=2**20, help="max incoming message size (default 1 MiB)")
    p.add_argument("--tls-cert", help="PEM certificate (chain): serve wss:// (needs --tls-key)")
    p.add_argument("--tls-key", help="PEM private key of --tls-cert")
    args = p.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    for f in (args.tls_cert, args.tls_key):
        if f:
            try:
                open(f, "rb").close()
            except OSError as e:
                p.error(f"cannot read {f}: {e.strerror}")
    try:
        args.host = loopback_host(args.host)
    except ValueError as e:
        p.error(str(e))
    if not args.path.startswith("/"):
        p.error("--path must start with '/'")
    if not (0 <= args.port <= 65535):
        p.error("--port out of range")
    if args.max_seconds <= 0:
        p.error("--max-seconds must be > 0")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
