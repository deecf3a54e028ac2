#!/usr/bin/env python3
"""A real SignalR hub server on aiosignalr 0.1.1, exposing Stampede's test hub contract.

Run in the venv from requirements-aiosignalr.txt:

    PY=$(Tests/peers/ensure-venv.sh aiosignalr | tail -n1)
    $PY Tests/peers/signalr_hub_server.py --port 0        # -> "LISTENING <port>"

Hub (URL http://127.0.0.1:PORT/hub; WebSockets, ServerSentEvents, LongPolling; JSON and
MessagePack; negotiate v0 and v1; method names case-insensitive):

    SendMessage(user, message)            -> all clients: ReceiveMessage(user, message); void
    Echo(message) -> str                  returns message
    JoinGroup(group) / LeaveGroup(group)  void
    SendToGroup(group, user, message)     -> group members: ReceiveMessage(user, message); void
    Counter(count, delayMs)               stream of ints 0..count-1, delayMs between items
    AskClient(question) -> str            invokes the caller's GetClientResult(question) and
                                          returns the client's answer (client results)
    Upload(stream) -> int                 client-to-server stream; returns the item count

TLS: --tls-cert F --tls-key F (PEM) serve the same hub over https:// (and wss://) with Python's
ssl on aiohttp's own listener (aiosignalr's serve() takes no SSL context, so this script starts
aiohttp's runner itself, as serve() does).

stdout: "LISTENING <port>" once bound, then one final JSON stats line when stopped. Nothing
else goes to stdout (diagnostics -> stderr).
Exit: 0 after SIGTERM/SIGINT; 3 after --max-seconds (stats line with "reason":"max-seconds");
2 on bad arguments (including a non-loopback --host); 1 if it cannot bind.

Note: this file deliberately does NOT use `from __future__ import annotations`: aiosignalr
decides "void vs. value" from the return annotation, and the string "None" would count as a
value (every void method would then answer `"result": null`).
"""

import argparse
import asyncio
import contextlib
import ipaddress
import json
import logging
import signal
import ssl
import sys
import time
from collections import Counter as Tally

from aiosignalr.errors import HubException
from aiosignalr.server import Hub, IncomingStream, ServerOptions, SignalRServer
from aiosignalr.server import context as _ctx_mod
from aiosignalr.protocol import messagepack_protocol as _mp_mod

STATS = {
    "connections": 0,
    "open_connections": 0,
    "peak_connections": 0,
    "transports": Tally(),
    "protocols": Tally(),
    "stateful_connections": 0,       # handshakes that switched stateful reconnect on (version 2)
    "handshake_failures": 0,
    "negotiations": Tally(),          # by negotiate version: "v0", "v1"
    "stateful_reconnect_negotiated": 0,
    "invocations": Tally(),           # hub method -> calls received
    "broadcasts": 0,                  # SendMessage fan-outs
    "broadcast_deliveries": 0,        # ReceiveMessage copies queued for all connections
    "group_sends": 0,
    "group_deliveries": 0,
    "stream_items_sent": 0,
    "upload_items_received": 0,
    "client_results_ok": 0,
    "client_results_failed": 0,
}
SERVER = None           # the SignalRServer (for connection/group look-ups from hub methods)
CLIENT_RESULT_TIMEOUT = 30.0


def _group_size(group):
    members = SERVER.lifetime._groups.get(group)  # noqa: SLF001 (aiosignalr has no public accessor)
    return len(members) if members else 0


class StampedeHub(Hub):
    """The hub contract shared with Stampede's Swift reference hub."""

    async def on_connected(self):
        STATS["connections"] += 1
        STATS["open_connections"] += 1
        STATS["peak_connections"] = max(STATS["peak_connections"], STATS["open_connections"])
        ctx = SERVER.get_connection(self.context.connection_id) if SERVER else None
        transport = getattr(getattr(ctx, "_transport", None), "name", "unknown")
        STATS["transports"][transport] += 1

    async def on_disconnected(self, exception):
        STATS["open_connections"] -= 1

    async def SendMessage(self, user: str, message: str) -> None:
        STATS["invocations"]["SendMessage"] += 1
        STATS["broadcasts"] += 1
        STATS["broadcast_deliveries"] += len(SERVER.lifetime.connections)
        await self.clients.all_.send("ReceiveMessage", user, message)

    async def Echo(self, message: str) -> str:
        STATS["invocations"]["Echo"] += 1
        return message

    async def JoinGroup(self, group: str) -> None:
        STATS["invocations"]["JoinGroup"] += 1
        await self.groups.add(group)

    async def LeaveGroup(self, group: str) -> None:
        STATS["invocations"]["LeaveGroup"] += 1
        await self.groups.remove(group)

    async def SendToGroup(self, group: str, user: str, message: str) -> None:
        STATS["invocations"]["SendToGroup"] += 1
        STATS["group_sends"] += 1
        STATS["group_deliveries"] += _group_size(group)
        await self.clients.group(group).send("ReceiveMessage", user, message)

    async def Counter(self, count: int, delayMs: int):  # noqa: N803 (wire name)
        STATS["invocations"]["Counter"] += 1
        for i in range(int(count)):
            if i and delayMs:
                await asyncio.sleep(delayMs / 1000.0)
            STATS["stream_items_sent"] += 1
            yield i

    async def AskClient(self, question: str) -> str:
        STATS["invocations"]["AskClient"] += 1
        try:
            answer = await asyncio.wait_for(
                self.clients.caller.invoke("GetClientResult", question), CLIENT_RESULT_TIMEOUT)
        except asyncio.TimeoutError:
            STATS["client_results_failed"] += 1
            raise HubException(f"Client result for 'GetClientResult' timed out after {CLIENT_RESULT_TIMEOUT:g} s.")
        except Exception as exc:
            STATS["client_results_failed"] += 1
            raise HubException(f"Client result failed: {exc}") from None
        STATS["client_results_ok"] += 1
        return answer

    async def Upload(self, stream: IncomingStream) -> int:
        STATS["invocations"]["Upload"] += 1
        n = 0
        async for _ in stream:
            n += 1
        STATS["upload_items_received"] += n
        return n


class CountingServer(SignalRServer):
    async def handle_negotiate(self, request):
        body = await super().handle_negotiate(request)
        if "negotiateVersion" in body:
            STATS["negotiations"][f"v{body['negotiateVersion']}"] += 1
        if body.get("useStatefulReconnect"):
            STATS["stateful_reconnect_negotiated"] += 1
        return body


class LpIdleGraceServer(CountingServer):
    """Works around aiosignalr's long-polling idle race (see --lp-idle-grace)."""

    lp_idle_grace = 0.0

    async def _lp_idle_watch(self, record, ctx):
        try:
            await asyncio.wait_for(ctx.wait_closed(),
                                   timeout=self.options.long_polling_timeout + self.lp_idle_grace)
        except (TimeoutError, asyncio.TimeoutError):
            await self._teardown(ctx)
        except asyncio.CancelledError:
            pass


def _install_handshake_counter():
    original = _ctx_mod.HubConnectionContext._handle_handshake

    async def counted(self, frame):
        ok = await original(self, frame)
        if self.protocol is not None and not getattr(self, "_stampede_counted", False):
            self._stampede_counted = True
            STATS["protocols"][self.protocol.name] += 1
            if self._message_buffer is not None:
                STATS["stateful_connections"] += 1
        elif not ok:
            STATS["handshake_failures"] += 1
        return ok

    _ctx_mod.HubConnectionContext._handle_handshake = counted


def _install_handshake_timeout():
    """aiosignalr 0.1.1 has a handshake_timeout option but never enforces it: do it here."""
    original_attach = _ctx_mod.HubConnectionContext.attach_transport

    def attach(self, transport, *, inherent_keepalive):
        original_attach(self, transport, inherent_keepalive=inherent_keepalive)
        if getattr(self, "_stampede_hs_watch", None) is None:
            self._stampede_hs_watch = asyncio.get_running_loop().create_task(_handshake_watch(self))

    async def _handshake_watch(ctx):
        with contextlib.suppress(asyncio.CancelledError):
            try:
                await asyncio.wait_for(ctx.closed.wait(), SERVER.options.handshake_timeout)
            except (TimeoutError, asyncio.TimeoutError):
                if ctx.protocol is None and not ctx.closed.is_set():
                    STATS["handshake_failures"] += 1
                    print(f"handshake timeout on {ctx.connection_id}", file=sys.stderr, flush=True)
                    ctx.closed.set()
                    ctx._abort_event.set()

    _ctx_mod.HubConnectionContext.attach_transport = attach


def _fix_msgpack_headers():
    """Make aiosignalr write empty MessagePack headers as a map (0x80) instead of the int 128."""
    _mp_mod._EMPTY_HEADERS = {}


def _stats_line(reason, started):
    out = {}
    for key, value in STATS.items():
        out[key] = dict(value) if isinstance(value, Tally) else value
    out["uptime_s"] = round(time.monotonic() - started, 3)
    out["reason"] = reason
    return json.dumps(out, separators=(",", ":"))


def _loopback_host(host):
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    return None


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--host", default="127.0.0.1", help="loopback only (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="0 = ephemeral (default)")
    p.add_argument("--path", default="/hub", help="hub path (default /hub)")
    p.add_argument("--max-seconds", type=float, default=300.0,
                   help="stop by itself after this long, exit 3 (default 300)")
    sr = p.add_mutually_exclusive_group()
    sr.add_argument("--stateful-reconnect", dest="stateful", action="store_true",
                    help="allow stateful reconnect (negotiate useStatefulReconnect=true, handshake v2)")
    sr.add_argument("--no-stateful-reconnect", dest="stateful", action="store_false",
                    help="refuse it (default, like ASP.NET Core)")
    p.set_defaults(stateful=False)
    p.add_argument("--keep-alive", type=float, default=15.0, help="server ping interval s (default 15)")
    p.add_argument("--client-timeout", type=float, default=30.0,
                   help="drop a WS/SSE client silent for this long, s (default 30)")
    p.add_argument("--handshake-timeout", type=float, default=15.0, help="s (default 15)")
    p.add_argument("--long-polling-timeout", type=float, default=15.0,
                   help="poll timeout s; aiosignalr's default 15 (ASP.NET Core: 90)")
    p.add_argument("--lp-idle-grace", type=float, default=None,
                   help="extra seconds before an un-polled long-polling connection is dropped. "
                        "Stock aiosignalr uses exactly --long-polling-timeout, which races the poll "
                        "timeout itself; default: stock behaviour (0 = stock; 15 = ASP.NET's DisconnectTimeout)")
    p.add_argument("--stateful-reconnect-buffer", type=int, default=100_000, help="bytes (default 100000)")
    p.add_argument("--stateful-reconnect-timeout", type=float, default=30.0, help="s (default 30)")
    p.add_argument("--max-message-size", type=int, default=32 * 1024, help="bytes (default 32768)")
    p.add_argument("--stream-buffer", type=int, default=10, help="upload stream queue capacity (default 10)")
    p.add_argument("--max-parallel-invocations", type=int, default=1, help="per connection (default 1)")
    p.add_argument("--client-result-timeout", type=float, default=30.0,
                   help="AskClient gives up (Completion error) after this long, s (default 30)")
    p.add_argument("--detailed-errors", action="store_true", help="include exception text in errors")
    p.add_argument("--fix-msgpack-headers", action="store_true",
                   help="write empty MessagePack headers as a map; stock aiosignalr writes the int 128 "
                        "(CC 80) in StreamItem/Completion/CancelInvocation")
    p.add_argument("-v", "--verbose", action="store_true", help="aiosignalr INFO logs on stderr")
    p.add_argument("--tls-cert", help="PEM certificate (chain): serve https:// (needs --tls-key)")
    p.add_argument("--tls-key", help="PEM private key of --tls-cert")
    args = p.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    args.tls = None
    if args.tls_cert:
        args.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        args.tls.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            args.tls.load_cert_chain(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as e:
            p.error(f"--tls-cert/--tls-key: {e}")
    host = _loopback_host(args.host)
    if host is None:
        p.error(f"--host must be a loopback address or localhost, got {args.host!r}")
    args.host = host
    if not args.path.startswith("/") or args.path.endswith("/") and args.path != "/":
        p.error("--path must start with '/' and not end with '/'")
    if args.port < 0 or args.port > 65535 or args.max_seconds <= 0:
        p.error("bad --port or --max-seconds")
    return args


async def main_async(args):
    global SERVER, CLIENT_RESULT_TIMEOUT
    CLIENT_RESULT_TIMEOUT = args.client_result_timeout
    options = ServerOptions(
        keep_alive_interval=args.keep_alive,
        client_timeout_interval=args.client_timeout,
        handshake_timeout=args.handshake_timeout,
        maximum_parallel_invocations=args.max_parallel_invocations,
        maximum_receive_message_size=args.max_message_size,
        stream_buffer_capacity=args.stream_buffer,
        long_polling_timeout=args.long_polling_timeout,
        enable_detailed_errors=args.detailed_errors,
        allow_stateful_reconnects=args.stateful,
        stateful_reconnect_buffer_size=args.stateful_reconnect_buffer,
        stateful_reconnect_timeout=args.stateful_reconnect_timeout,
    )
    if args.lp_idle_grace:
        cls = LpIdleGraceServer
        cls.lp_idle_grace = args.lp_idle_grace
    else:
        cls = CountingServer
    SERVER = cls(StampedeHub, options=options, logger=logging.getLogger("aiosignalr.server"))
    started = time.monotonic()
    runner = None
    try:
        if args.tls is None:
            _, port = await SERVER.serve(args.host, args.port, path=args.path)
        else:
            from aiohttp import web
            runner = web.AppRunner(SERVER.create_application(path=args.path))
            await runner.setup()
            site = web.TCPSite(runner, args.host, args.port, ssl_context=args.tls)
            await site.start()
            port = runner.addresses[0][1]
    except OSError as exc:
        print(f"cannot bind {args.host}:{args.port}: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"LISTENING {port}", flush=True)

    stop = asyncio.Event()
    reason = {"why": "max-seconds"}
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: (reason.__setitem__("why", "signal"), stop.set()))
    with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
        await asyncio.wait_for(stop.wait(), args.max_seconds)

    # Close every connection (the WebSocket ones get 1001 from aiohttp), bounded.
    for ctx in list(SERVER.lifetime.connections.values()):
        with contextlib.suppress(Exception):
            ctx.closed.set()
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(SERVER.close() if runner is None else runner.cleanup(), 5.0)
    print(_stats_line(reason["why"], started), flush=True)
    return 0 if reason["why"] == "signal" else 3


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    _install_handshake_counter()
    _install_handshake_timeout()
    if args.fix_msgpack_headers:
        _fix_msgpack_headers()
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
