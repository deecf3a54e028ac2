#!/usr/bin/env python3
"""A GraphQL server with subscriptions (strawberry-graphql's ASGI app on uvicorn), issue 22.

Endpoint ``/graphql``: HTTP POST/GET queries, and WebSocket with the subprotocols
``graphql-transport-ws`` (the graphql-ws library's protocol) and ``graphql-ws`` (Apollo's legacy
one). Schema:

    type Query        { hello: String! }
    type Mutation     { publish(room: String!, stamp: String!, id: String!): String! }   # returns id
    type Subscription { messages(room: String!): Message! }
    type Message      { room: String!, stamp: String!, id: String! }

``publish`` hands {room, stamp, id} to every ``messages(room)`` subscription open at that moment
(on any connection), then returns ``id``. Over graphql-transport-ws a mutation may be sent as a
``subscribe`` message too: the server answers one ``next`` ({"data":{"publish":ID}}) then
``complete``, both with the operation's id.

Server pings (graphql-transport-ws): strawberry itself only answers a client's ``ping`` with a
``pong``; this server adds ``{"type":"ping"}`` every --ping-interval s after connection_ack (a
subclass of strawberry's handler) and counts the ``pong``s. With --ping-interval 0, none.

Contract (like chat_server.py): stdout line 1 ``LISTENING <port>`` (127.0.0.1 only); on
SIGTERM/SIGINT one JSON line of counts, exit 0; after --max-seconds the same, exit 3.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import sys
from collections import Counter
from collections.abc import AsyncGenerator

import strawberry
import uvicorn
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)

from loopback import loopback_host

COUNTS: Counter = Counter()
ROOMS: dict[str, set[asyncio.Queue]] = {}
PING_INTERVAL = 0.0


def err(msg: str) -> None:
    print(f"graphql_server: {msg}", file=sys.stderr, flush=True)


@strawberry.type
class Message:
    room: str
    stamp: str
    id: str


@strawberry.type
class Query:
    @strawberry.field
    def hello(self) -> str:
        return "hello"


@strawberry.type
class Mutation:
    @strawberry.mutation
    async def publish(self, room: str, stamp: str, id: str) -> str:  # noqa: A002 (the schema's name)
        COUNTS["publishes"] += 1
        msg = Message(room=room, stamp=stamp, id=id)
        for q in list(ROOMS.get(room, ())):
            q.put_nowait(msg)
            COUNTS["deliveries_queued"] += 1
        return id


@strawberry.type
class Subscription:
    @strawberry.subscription
    async def messages(self, room: str) -> AsyncGenerator[Message, None]:
        q: asyncio.Queue = asyncio.Queue()
        ROOMS.setdefault(room, set()).add(q)
        COUNTS["subscriptions"] += 1
        try:
            while True:
                msg = await q.get()
                COUNTS["events"] += 1
                yield msg
        finally:
            ROOMS.get(room, set()).discard(q)


class PingingHandler(BaseGraphQLTransportWSHandler):
    """strawberry's graphql-transport-ws handler, plus server pings after connection_ack."""

    ping_task: asyncio.Task | None = None

    async def handle_connection_init(self, message) -> None:
        await super().handle_connection_init(message)
        if self.connection_acknowledged:
            COUNTS["connection_acks"] += 1
            if PING_INTERVAL > 0 and self.ping_task is None:
                self.ping_task = asyncio.create_task(self.pinger())

    async def pinger(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                await asyncio.sleep(PING_INTERVAL)
                await self.send_message({"type": "ping"})
                COUNTS["pings"] += 1

    async def handle_pong(self, message) -> None:
        COUNTS["pongs"] += 1

    async def handle_ping(self, message) -> None:
        COUNTS["client_pings"] += 1
        await super().handle_ping(message)

    async def handle_subscribe(self, message) -> None:
        COUNTS["operations"] += 1
        await super().handle_subscribe(message)

    async def shutdown(self) -> None:
        if self.ping_task is not None:
            self.ping_task.cancel()
        await super().shutdown()


class App(GraphQL):
    graphql_transport_ws_handler_class = PingingHandler


class Server(uvicorn.Server):
    """uvicorn's server without its signal re-raise: the summary line comes first."""

    reason = "max-seconds"

    @contextlib.contextmanager
    def capture_signals(self):
        def on_signal(sig, frame):
            self.reason = "signal"
            self.should_exit = True
        old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)



async def amain(args: argparse.Namespace) -> int:
    global PING_INTERVAL
    PING_INTERVAL = args.ping_interval
    schema = strawberry.Schema(query=Query, mutation=Mutation, subscription=Subscription)
    app = App(schema, graphql_ide=None,
              subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    config = uvicorn.Config(app, ws="websockets-sansio", lifespan="off", log_level="warning",
                            ws_ping_interval=None, access_log=False, loop="asyncio")
    server = Server(config)

    async def deadline() -> None:
        await asyncio.sleep(args.max_seconds)
        err(f"--max-seconds {args.max_seconds} elapsed, shutting down")
        server.should_exit = True

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        print(f"LISTENING {sock.getsockname()[1]}", flush=True)
        err(f"serving ws://{args.host}:{sock.getsockname()[1]}/graphql ping_interval={args.ping_interval}")

    tasks = [asyncio.create_task(deadline()), asyncio.create_task(announce())]
    await server.serve(sockets=[sock])
    for t in tasks:
        t.cancel()
    print(json.dumps({**{k: COUNTS[k] for k in ("connection_acks", "operations", "publishes",
                                                 "subscriptions", "deliveries_queued", "events",
                                                 "pings", "pongs", "client_pings")},
                      "reason": server.reason}), flush=True)
    return 0 if server.reason == "signal" else 3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ping-interval", type=float, default=2,
                   help='graphql-transport-ws {"type":"ping"} every N s after connection_ack (0 = off)')
    p.add_argument("--max-seconds", type=float, default=300)
    args = p.parse_args()
    try:
        args.host = loopback_host(args.host)
    except ValueError as e:
        p.error(str(e))
    if args.max_seconds <= 0:
        p.error("--max-seconds must be > 0")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
