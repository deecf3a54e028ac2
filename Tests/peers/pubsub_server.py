#!/usr/bin/env python3
"""A pub/sub WebSocket server with its own JSON protocol (issue 22), on `websockets`.

Not Stampede's chat protocol: the kind of server a new user brings. Per connection:

  server: {"type":"welcome","session":"<random hex>"}
  client: {"op":"auth","token":T,"session":S}        must be the first message (pongs aside)
  server: {"op":"auth_ok"}
  client: {"op":"subscribe","channel":C}
  server: {"op":"subscribed","channel":C}
  client: {"op":"publish","channel":C,"id":N,"data":{...}}
  server: {"op":"ack","id":N}                         to the sender
  server: {"op":"event","channel":C,"data":{...}}     to every subscriber of C, the sender included
  server: {"type":"ping"}    every --ping-interval s; the client answers {"type":"pong"}
  server: {"type":"presence","session":S,"status":"online","online":K}   every --presence-interval s

Closes (code reason):
  4401 auth first    the first message (other than a pong) is not {"op":"auth",...}
  4403 bad token     --token is set and the token differs
  4403 bad session   the session is not the one of the welcome frame
  4400 bad message   not a JSON object with a known "op" (after auth)
  4408 auth timeout  no auth within --auth-timeout s
  4408 no pong       no pong between two pings
  --close-code/--close-reason after --close-after publishes (the last one acked and fanned out first)
  1001 (going away)  at shutdown

Misbehaviour for tests:
  --out-of-order   a connection's acks are held and sent in batches of --batch (or after
                   --batch-wait s), each batch in reverse order; events are not delayed.
  --unsolicited    after every reply (auth_ok, subscribed, ack) one extra frame of unknown
                   shape: alternately {"notice":"unsolicited","n":K} and the text `unsolicited K`.
  --close-after N --close-code 4xxx --close-reason TEXT

Contract (like chat_server.py):
  stdout line 1:    ``LISTENING <port>``  (flushed once bound; 127.0.0.1 only)
  stdout last line: one JSON object of counts (publishes, acks, events, closes by code, ...)
  exit 0 on SIGTERM/SIGINT, 3 when --max-seconds ran out, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import signal
import sys
from collections import Counter

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State
from loopback import loopback_host

EXIT_OK = 0
EXIT_MAX_SECONDS = 3


def err(msg: str) -> None:
    print(f"pubsub_server: {msg}", file=sys.stderr, flush=True)



def dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


class Conn:
    """One connection's state."""

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.session = secrets.token_hex(8)
        self.authed = False
        self.channels: set[str] = set()
        self.publishes = 0
        self.awaiting_pong = False
        self.pending_acks: list[str] = []
        self.flush_task: asyncio.Task | None = None
        self.closing = False
        self.close_task: asyncio.Task | None = None


class PubSub:
    def __init__(self, args: argparse.Namespace) -> None:
        self.a = args
        self.conns: set[Conn] = set()
        self.subscribers: dict[str, set[Conn]] = {}
        self.c = Counter()              # flat counters
        self.closes_sent = Counter()    # "4401 auth first" -> n
        self.closes_received = Counter()

    # -- plumbing -----------------------------------------------------------------------

    def process_request(self, connection: ServerConnection, request):
        if request.path.split("?", 1)[0] != self.a.path:
            return connection.respond(404, "Not Found\n")
        return None

    def select_subprotocol(self, connection: ServerConnection, offered):
        # The configured subprotocol when offered; none otherwise (never a 400).
        if self.a.subprotocol and self.a.subprotocol in offered:
            return self.a.subprotocol
        return None

    async def send(self, conn: Conn, text: str, kind: str) -> None:
        # Never to a closing connection: websockets' send() would wait for the close to finish,
        # and a publisher's fan-out would stall behind another client's close handshake.
        if conn.closing or conn.ws.state is not State.OPEN:
            self.c["skipped_closing"] += 1
            return
        try:
            await conn.ws.send(text)
            self.c[kind] += 1
        except ConnectionClosed:
            self.c["send_failures"] += 1

    async def close(self, conn: Conn, code: int, reason: str) -> None:
        if conn.closing:
            return
        conn.closing = True
        self.forget(conn)
        self.closes_sent[f"{code} {reason}"] += 1
        # In a task: the handler keeps reading (and dropping) what the client sent before it saw
        # the close frame, so a full receive queue cannot hold back the client's close reply.
        conn.close_task = asyncio.create_task(conn.ws.close(code, reason))

    def forget(self, conn: Conn) -> None:
        self.conns.discard(conn)
        for ch in conn.channels:
            self.subscribers.get(ch, set()).discard(conn)

    async def unsolicited(self, conn: Conn) -> None:
        if not self.a.unsolicited:
            return
        n = self.c["unsolicited"] + 1
        text = dumps({"notice": "unsolicited", "n": n}) if n % 2 else f"unsolicited {n}"
        await self.send(conn, text, "unsolicited")

    # -- background tasks per connection ------------------------------------------------

    async def pinger(self, conn: Conn) -> None:
        while True:
            await asyncio.sleep(self.a.ping_interval)
            if conn.awaiting_pong:
                self.c["pong_missed"] += 1
                await self.close(conn, 4408, "no pong")
                return
            conn.awaiting_pong = True
            await self.send(conn, '{"type":"ping"}', "pings")

    async def presence(self, conn: Conn) -> None:
        while True:
            await asyncio.sleep(self.a.presence_interval)
            if conn.authed:
                await self.send(conn, dumps({"type": "presence", "session": conn.session,
                                             "status": "online", "online": len(self.conns)}),
                                "presence")

    async def auth_deadline(self, conn: Conn) -> None:
        await asyncio.sleep(self.a.auth_timeout)
        if not conn.authed:
            await self.close(conn, 4408, "auth timeout")

    # -- acks -----------------------------------------------------------------------------

    async def ack(self, conn: Conn, ident) -> None:
        text = dumps({"op": "ack", "id": ident})
        if not self.a.out_of_order:
            await self.send(conn, text, "acks")
            await self.unsolicited(conn)
            return
        conn.pending_acks.append(text)
        if len(conn.pending_acks) >= self.a.batch:
            await self.flush_acks(conn)
        elif conn.flush_task is None:
            conn.flush_task = asyncio.create_task(self.flush_later(conn))

    async def flush_later(self, conn: Conn) -> None:
        await asyncio.sleep(self.a.batch_wait)
        conn.flush_task = None
        await self.flush_acks(conn)

    async def flush_acks(self, conn: Conn) -> None:
        if conn.flush_task is not None and conn.flush_task is not asyncio.current_task():
            conn.flush_task.cancel()
            conn.flush_task = None
        batch, conn.pending_acks = conn.pending_acks, []
        if len(batch) > 1:
            self.c["acks_reordered_batches"] += 1
        for text in reversed(batch):
            await self.send(conn, text, "acks")
            await self.unsolicited(conn)

    # -- the protocol ---------------------------------------------------------------------

    async def handler(self, ws: ServerConnection) -> None:
        conn = Conn(ws)
        self.conns.add(conn)
        self.c["connections"] += 1
        self.c["peak_connections"] = max(self.c["peak_connections"], len(self.conns))
        tasks = [asyncio.create_task(self.auth_deadline(conn))]
        if self.a.ping_interval > 0:
            tasks.append(asyncio.create_task(self.pinger(conn)))
        if self.a.presence_interval > 0:
            tasks.append(asyncio.create_task(self.presence(conn)))
        try:
            await self.send(conn, dumps({"type": "welcome", "session": conn.session}), "welcomes")
            async for raw in ws:
                if conn.closing:
                    self.c["dropped_after_close"] += 1
                    continue
                self.c["received"] += 1
                await self.on_message(conn, raw)
        except ConnectionClosed:
            pass
        finally:
            for t in tasks:
                t.cancel()
            if conn.flush_task is not None:
                conn.flush_task.cancel()
            if conn.close_task is not None:
                try:
                    await conn.close_task
                except Exception:
                    pass
            self.forget(conn)
            rcvd = ws.protocol.close_rcvd
            if rcvd is not None and not conn.closing:
                self.closes_received[f"{rcvd.code} {rcvd.reason}".rstrip()] += 1

    async def on_message(self, conn: Conn, raw) -> None:
        try:
            msg = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            msg = None
        if not isinstance(msg, dict):
            msg = {}
        if msg.get("type") == "pong":
            conn.awaiting_pong = False
            self.c["pongs"] += 1
            return
        op = msg.get("op")
        if not conn.authed:
            if op != "auth":
                await self.close(conn, 4401, "auth first")
                return
            if self.a.token is not None and msg.get("token") != self.a.token:
                await self.close(conn, 4403, "bad token")
                return
            if msg.get("session") != conn.session:
                await self.close(conn, 4403, "bad session")
                return
            conn.authed = True
            self.c["auths"] += 1
            await self.send(conn, '{"op":"auth_ok"}', "auth_ok")
            await self.unsolicited(conn)
            return
        if op == "subscribe" and isinstance(msg.get("channel"), str):
            ch = msg["channel"]
            conn.channels.add(ch)
            self.subscribers.setdefault(ch, set()).add(conn)
            self.c["subscribes"] += 1
            await self.send(conn, dumps({"op": "subscribed", "channel": ch}), "subscribed")
            await self.unsolicited(conn)
        elif op == "publish" and isinstance(msg.get("channel"), str) and "id" in msg:
            ch = msg["channel"]
            conn.publishes += 1
            self.c["publishes"] += 1
            await self.ack(conn, msg["id"])
            event = dumps({"op": "event", "channel": ch, "data": msg.get("data")})
            targets = list(self.subscribers.get(ch, ()))
            await asyncio.gather(*(self.send(t, event, "events") for t in targets))
            if self.a.close_after and conn.publishes >= self.a.close_after:
                if conn.pending_acks:
                    await self.flush_acks(conn)
                await self.close(conn, self.a.close_code, self.a.close_reason)
        elif op == "auth":
            self.c["reauths"] += 1
            await self.send(conn, '{"op":"auth_ok"}', "auth_ok")
        else:
            self.c["invalid"] += 1
            await self.close(conn, 4400, "bad message")

    def summary(self, reason: str) -> dict:
        keys = ("connections", "peak_connections", "received", "auths", "subscribes", "publishes",
                "acks", "events", "welcomes", "auth_ok", "subscribed", "pings", "pongs",
                "pong_missed", "presence", "unsolicited", "acks_reordered_batches", "invalid",
                "send_failures", "skipped_closing", "dropped_after_close")
        out = {k: self.c[k] for k in keys}
        out["closes_sent"] = dict(self.closes_sent)
        out["closes_received"] = dict(self.closes_received)
        out["reason"] = reason
        return out


async def amain(args: argparse.Namespace) -> int:
    ps = PubSub(args)
    stop = asyncio.Event()
    reason = "signal"
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await serve(
        ps.handler, args.host, args.port,
        process_request=ps.process_request,
        select_subprotocol=ps.select_subprotocol,
        compression=None,
        ping_interval=None,          # the application's own pings only
        close_timeout=2,
        max_size=2**20,
        server_header="stampede-peer-pubsub-server",
    )
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    err(f"serving ws://{args.host}:{port}{args.path} subprotocol={args.subprotocol or '-'} "
        f"out_of_order={args.out_of_order} unsolicited={args.unsolicited} "
        f"close_after={args.close_after} max_seconds={args.max_seconds}")
    try:
        await asyncio.wait_for(stop.wait(), timeout=args.max_seconds)
    except asyncio.TimeoutError:
        reason = "max-seconds"
        err(f"--max-seconds {args.max_seconds} elapsed, shutting down")
    server.close()
    try:
        await asyncio.wait_for(server.wait_closed(), timeout=5)
    except asyncio.TimeoutError:
        err("timed out waiting for connections to close")
    print(json.dumps(ps.summary(reason)), flush=True)
    return EXIT_OK if reason == "signal" else EXIT_MAX_SECONDS


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="0 = ephemeral (read the LISTENING line)")
    p.add_argument("--path", default="/ws", help="WebSocket path (default /ws); others get 404")
    p.add_argument("--subprotocol", default="pubsub.v1",
                   help="accepted when the client offers it (default pubsub.v1; '' = none)")
    p.add_argument("--token", default=None, help="the auth token required (default: any)")
    p.add_argument("--auth-timeout", type=float, default=10, help="s to wait for auth (default 10)")
    p.add_argument("--ping-interval", type=float, default=2,
                   help='application {"type":"ping"} every N s, 0 = off (default 2)')
    p.add_argument("--presence-interval", type=float, default=1.5,
                   help='{"type":"presence"} every N s to each authenticated client, 0 = off (default 1.5)')
    p.add_argument("--out-of-order", action="store_true", help="hold acks and send them in reversed batches")
    p.add_argument("--batch", type=int, default=4, help="--out-of-order batch size (default 4)")
    p.add_argument("--batch-wait", type=float, default=0.05,
                   help="--out-of-order: send a partial batch after this many s (default 0.05)")
    p.add_argument("--unsolicited", action="store_true", help="an unknown frame after every reply")
    p.add_argument("--close-after", type=int, default=0, help="close a connection after N publishes (0 = never)")
    p.add_argument("--close-code", type=int, default=4000, help="code for --close-after (default 4000)")
    p.add_argument("--close-reason", default="closing", help="reason for --close-after")
    p.add_argument("--max-seconds", type=float, default=300, help="exit by itself after this long (default 300)")
    args = p.parse_args()
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
    if not (3000 <= args.close_code <= 4999 or args.close_code in (1000, 1001, 1008, 1011)):
        p.error("--close-code must be 1000, 1001, 1008, 1011 or 3000-4999")
    if len(args.close_reason.encode()) > 123:
        p.error("--close-reason longer than 123 bytes")
    if args.batch < 1:
        p.error("--batch must be >= 1")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
