#!/usr/bin/env python3
"""A real Socket.IO 4 server (python-socketio's AsyncServer on aiohttp) for issue 23's tests.

Socket.IO protocol 5 over Engine.IO 4: long polling, WebSocket, and the upgrade between them.
Everything protocol-related is python-socketio's; this script only registers the handlers below,
counts what it sees, and (with --stall-after) makes a connection go silent.

Events, in the namespace --namespace (default "/"; any other namespace, "/" included, gets
CONNECT_ERROR "Unable to connect", python-socketio's own refusal):

  join  ROOM                   enters ROOM; the ack (when asked) is [true]
  say   {"room":R,"text":T,…}  emits `said` with the same object to everyone in room R, the sender
                               included (no "room", or null: to everyone in the namespace);
                               the ack (when asked) is [true]
  echo  ARGS...                the ack is the same ARGS (bytes included: a BINARY_ACK)
  any other event              counted under "other"; no ack

--token T: a CONNECT without auth {"token": T} is refused with
  socketio.exceptions.ConnectionRefusedError("not authorized"), i.e. CONNECT_ERROR {"message":"not authorized"}.

--stall-after N: each Engine.IO connection sends its N-th ping and then goes silent without
  closing: no further ping, no packet of any kind (acks and `said` to it are dropped and
  counted), nothing more read from it (the pong of that ping is never processed), and the
  server's own ping-timeout checks skip it. A correct client gives up pingInterval + pingTimeout
  after that ping (its `server_timeout`); the server never closes the connection first.

--refuse-upgrade: the open packet still lists "websocket" in `upgrades`, but the WebSocket
  request of an upgrade (one with a sid) is answered HTTP 400 "upgrade refused": the client's
  upgrade fails and its session stays on long polling. WebSocket-only sessions are unaffected.

Options --ping-interval (whole seconds: python-engineio advertises int(interval) * 1000 ms, so a
fraction would be advertised wrongly) and --ping-timeout (seconds) go to the open packet.

Contract (like the other peers):
  stdout line 1:    ``LISTENING <port>``  (flushed once bound; loopback only)
  GET /stats        the counts below as JSON, at any time (same port)
  stdout last line: the same counts as one JSON object, on SIGTERM/SIGINT or --max-seconds
  exit 0 on SIGTERM/SIGINT, 3 when --max-seconds ran out, 2 on bad arguments.

Counts: events_received {join, say, echo, other}, said_emitted (one per recipient of a `said`),
acks_sent (ACK and BINARY_ACK packets), binary_args_received (bytes arguments of events),
connects, connects_refused, disconnects {reason: n}, eio_opened {polling, websocket},
upgrades (completed polling → WebSocket upgrades), upgrades_refused, pings_sent, pongs_received, stalled
(connections stalled), dropped_while_stalled (packets not sent to a stalled connection).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections import Counter

import engineio
import socketio
from aiohttp import web
from engineio import async_socket as eio_async_socket
from engineio import packet as eio_packet
from socketio import packet as sio_packet

from loopback import loopback_host

EXIT_OK = 0
EXIT_BAD_ARGS = 2
EXIT_MAX_SECONDS = 3

counts: Counter = Counter()
events_received: Counter = Counter()
disconnects: Counter = Counter()
eio_opened: Counter = Counter()


def err(msg: str) -> None:
    print(f"socketio_server: {msg}", file=sys.stderr, flush=True)


def snapshot() -> dict:
    c = dict(counts)
    return {
        "events_received": {k: events_received.get(k, 0) for k in ("join", "say", "echo", "other")},
        "said_emitted": c.get("said_emitted", 0),
        "acks_sent": c.get("acks_sent", 0),
        "binary_args_received": c.get("binary_args_received", 0),
        "connects": c.get("connects", 0),
        "connects_refused": c.get("connects_refused", 0),
        "disconnects": dict(disconnects),
        "eio_opened": {k: eio_opened.get(k, 0) for k in ("polling", "websocket")},
        "upgrades": c.get("upgrades", 0),
        "upgrades_refused": c.get("upgrades_refused", 0),
        "pings_sent": c.get("pings_sent", 0),
        "pongs_received": c.get("pongs_received", 0),
        "stalled": c.get("stalled", 0),
        "dropped_while_stalled": c.get("dropped_while_stalled", 0),
    }


class StallableSocket(eio_async_socket.AsyncSocket):
    """python-engineio's socket, counting pings/pongs/upgrades, and able to go silent."""

    stall_after = 0  # 0: never
    refuse_upgrade = False

    async def _upgrade_websocket(self, environ):
        # `connected` is already true for a polling session being upgraded, not yet for a
        # WebSocket-only session (python-engineio sets it in the WebSocket handler).
        if self.refuse_upgrade and self.connected:
            # The open packet still offers "websocket": the client's probe gets HTTP 400 and
            # the session stays on polling.
            counts["upgrades_refused"] += 1
            return self.server._bad_request("upgrade refused")
        return await super()._upgrade_websocket(environ)

    def _stall_state(self) -> bool:
        return getattr(self, "_stalled", False)

    async def _hang(self):
        # Until the process ends: the task holding this socket's reader (or a poll) waits here.
        await asyncio.Event().wait()

    async def send(self, pkt):
        if self._stall_state():
            counts["dropped_while_stalled"] += 1
            return
        if pkt.packet_type == eio_packet.PING:
            counts["pings_sent"] += 1
            self._pings = getattr(self, "_pings", 0) + 1
            await super().send(pkt)
            if self.stall_after and self._pings >= self.stall_after:
                self._stalled = True
                counts["stalled"] += 1
            return
        await super().send(pkt)

    # python-engineio reads the upgrade's "2probe" and "5" itself, outside receive(): a completed
    # upgrade is seen as `upgraded` turning true while `upgrading`.
    @property
    def upgraded(self):
        return getattr(self, "_upgraded", False)

    @upgraded.setter
    def upgraded(self, value):
        if value and not getattr(self, "_upgraded", False) and getattr(self, "upgrading", False):
            counts["upgrades"] += 1
        self._upgraded = value

    async def receive(self, pkt):
        if self._stall_state():
            await self._hang()
        if pkt.packet_type == eio_packet.PONG:
            counts["pongs_received"] += 1
        await super().receive(pkt)

    async def poll(self):
        # A stalled socket's pending long-polling GET, or its WebSocket writer, never returns.
        if self._stall_state():
            await self._hang()
        return await super().poll()

    async def check_ping_timeout(self):
        # The server must not close a stalled connection before the client notices the silence.
        if self._stall_state():
            return True
        return await super().check_ping_timeout()


class CountingServer(socketio.AsyncServer):
    async def _handle_eio_connect(self, eio_sid, environ):
        websocket = environ.get("HTTP_UPGRADE", "").lower() == "websocket"
        eio_opened["websocket" if websocket else "polling"] += 1
        await super()._handle_eio_connect(eio_sid, environ)

    async def _send_packet(self, eio_sid, pkt):
        if pkt.packet_type in (sio_packet.ACK, sio_packet.BINARY_ACK):
            counts["acks_sent"] += 1
        await super()._send_packet(eio_sid, pkt)


def count_binary(args) -> int:
    if isinstance(args, (bytes, bytearray)):
        return 1
    if isinstance(args, (list, tuple)):
        return sum(count_binary(a) for a in args)
    if isinstance(args, dict):
        return sum(count_binary(v) for v in args.values())
    return 0


def build(args: argparse.Namespace) -> tuple[web.Application, socketio.AsyncServer]:
    StallableSocket.stall_after = args.stall_after
    StallableSocket.refuse_upgrade = args.refuse_upgrade
    # python-engineio creates its sockets through this module attribute.
    eio_async_socket.AsyncSocket = StallableSocket
    sio = CountingServer(
        async_mode="aiohttp",
        transports=args.transports,
        ping_interval=args.ping_interval,
        ping_timeout=args.ping_timeout,
        max_http_buffer_size=args.max_payload,
        cors_allowed_origins="*",
        namespaces=[args.namespace],  # else python-socketio also accepts "/" by default
        logger=args.log,
        engineio_logger=args.log,
    )
    ns = args.namespace

    @sio.event(namespace=ns)
    async def connect(sid, environ, auth):
        if args.token is not None and not (isinstance(auth, dict) and auth.get("token") == args.token):
            counts["connects_refused"] += 1
            raise socketio.exceptions.ConnectionRefusedError("not authorized")
        counts["connects"] += 1

    @sio.event(namespace=ns)
    async def disconnect(sid, reason):
        disconnects[str(reason)] += 1

    @sio.on("join", namespace=ns)
    async def join(sid, room=None, *rest):
        events_received["join"] += 1
        if isinstance(room, str):
            await sio.enter_room(sid, room, namespace=ns)
        return True

    @sio.on("say", namespace=ns)
    async def say(sid, data=None, *rest):
        events_received["say"] += 1
        counts["binary_args_received"] += count_binary([data, *rest])
        room = data.get("room") if isinstance(data, dict) else None
        if room is not None and not isinstance(room, str):
            room = None
        # Counted before the emit: python-socketio's manager takes the same participants
        # synchronously, before its first await.
        counts["said_emitted"] += sum(1 for _ in sio.manager.get_participants(ns, room))
        await sio.emit("said", data, room=room, namespace=ns)
        return True

    @sio.on("echo", namespace=ns)
    async def echo(sid, *data):
        events_received["echo"] += 1
        counts["binary_args_received"] += count_binary(data)
        return data

    @sio.on("*", namespace=ns)
    async def other(event, sid, *data):
        events_received["other"] += 1

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(snapshot())

    app = web.Application()
    sio.attach(app, socketio_path=args.path.strip("/"))
    app.router.add_get("/stats", stats)
    return app, sio


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="python-socketio AsyncServer test peer (loopback only)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--path", default="/socket.io/")
    p.add_argument("--namespace", default="/")
    p.add_argument("--transports", default="polling,websocket",
                   help="comma-separated: polling, websocket (the ones the server accepts)")
    p.add_argument("--token", default=None)
    p.add_argument("--ping-interval", type=int, default=25, help="whole seconds (default 25)")
    p.add_argument("--ping-timeout", type=float, default=20, help="seconds (default 20)")
    p.add_argument("--max-payload", type=int, default=1_000_000, help="maxPayload in bytes (default 1e6)")
    p.add_argument("--stall-after", type=int, default=0, help="stall each connection after its N-th ping (0: never)")
    p.add_argument("--refuse-upgrade", action="store_true",
                   help="offer websocket in the open packet but answer the upgrade request with 400")
    p.add_argument("--max-seconds", type=float, default=300)
    p.add_argument("--log", action="store_true", help="python-socketio/engineio logs to stderr")
    a = p.parse_args(argv)
    try:
        a.host = loopback_host(a.host)
    except ValueError as e:
        p.error(str(e))
    a.transports = [t.strip() for t in a.transports.split(",") if t.strip()]
    if not a.transports or any(t not in ("polling", "websocket") for t in a.transports):
        p.error("--transports: polling and/or websocket")
    if not a.namespace.startswith("/"):
        p.error("--namespace must start with /")
    if a.ping_interval < 1 or a.ping_timeout <= 0 or a.stall_after < 0 or a.max_payload < 1:
        p.error("--ping-interval >= 1, --ping-timeout > 0, --stall-after >= 0, --max-payload >= 1")
    return a


async def main(args: argparse.Namespace) -> int:
    app, sio = build(args)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)

    stop = asyncio.Event()
    reason = {"code": EXIT_MAX_SECONDS, "why": "max-seconds"}

    def on_signal() -> None:
        reason.update(code=EXIT_OK, why="signal")
        stop.set()

    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, on_signal)
    try:
        await asyncio.wait_for(stop.wait(), args.max_seconds)
    except asyncio.TimeoutError:
        pass
    report = snapshot()
    report["reason"] = reason["why"]
    print(json.dumps(report, separators=(",", ":")), flush=True)
    if counts["stalled"]:
        # Stalled connections hang on purpose: their tasks would only be cancelled noisily.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(reason["code"])
    try:
        await asyncio.wait_for(runner.cleanup(), 3)
    except (asyncio.TimeoutError, Exception):
        pass
    return reason["code"]


if __name__ == "__main__":
    parsed = parse(sys.argv[1:])
    code = asyncio.run(main(parsed))
    sys.stdout.flush()
    sys.exit(code)
