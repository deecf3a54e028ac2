#!/usr/bin/env python3
"""An MQTT 3.1.1 broker over WebSocket: amqtt (its own venv, .peers/amqtt), issue 22.

One listener, ``type: ws`` on 127.0.0.1 (any path: amqtt does not look at it; use ``/mqtt``),
WebSocket subprotocol ``mqtt`` (amqtt's websockets server offers only that one: a client that
offers none is still accepted, without a subprotocol), anonymous clients allowed, MQTT packets
in binary WebSocket frames. QoS 0/1/2. No $SYS topics, no packet logging.

Contract (like chat_server.py): stdout line 1 ``LISTENING <port>``; on SIGTERM/SIGINT one JSON
line of counts (connections, disconnections, subscriptions, messages received), exit 0; after
--max-seconds the same, exit 3.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections import Counter

from amqtt.broker import Broker
from amqtt.plugins.base import BasePlugin
from loopback import loopback_host

COUNTS: Counter = Counter()


class CountPlugin(BasePlugin):
    """Counts broker events for the summary line."""

    async def on_broker_client_connected(self, *, client_id: str, client_session=None) -> None:
        COUNTS["connections"] += 1

    async def on_broker_client_disconnected(self, *, client_id: str, client_session=None) -> None:
        COUNTS["disconnections"] += 1

    async def on_broker_client_subscribed(self, *, client_id: str, topic: str, qos: int) -> None:
        COUNTS["subscriptions"] += 1

    async def on_broker_message_received(self, *, client_id: str, message) -> None:
        COUNTS["messages_received"] += 1



async def amain(args: argparse.Namespace) -> int:
    config = {
        "listeners": {"default": {"type": "ws", "bind": f"{args.host}:{args.port}", "max_connections": 10000}},
        "plugins": {
            "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True},
            f"{__name__}.CountPlugin": {},
        },
    }
    broker = Broker(config)
    await broker.start()
    ws_server = broker._servers["default"].instance        # websockets' Server
    port = ws_server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    print(f"amqtt_broker: serving ws://{args.host}:{port}/mqtt (subprotocol mqtt) "
          f"max_seconds={args.max_seconds}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    reason = "signal"
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), timeout=args.max_seconds)
    except asyncio.TimeoutError:
        reason = "max-seconds"
    try:
        await asyncio.wait_for(broker.shutdown(), timeout=5)
    except (asyncio.TimeoutError, Exception) as e:  # noqa: BLE001
        print(f"amqtt_broker: shutdown: {e!r}", file=sys.stderr, flush=True)
    print(json.dumps({**{k: COUNTS[k] for k in ("connections", "disconnections", "subscriptions",
                                                 "messages_received")}, "reason": reason}), flush=True)
    return 0 if reason == "signal" else 3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=300)
    p.add_argument("--verbose", action="store_true", help="amqtt's own log at INFO on stderr")
    args = p.parse_args()
    try:
        args.host = loopback_host(args.host)
    except ValueError as e:
        p.error(str(e))
    if args.max_seconds <= 0:
        p.error("--max-seconds must be > 0")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
