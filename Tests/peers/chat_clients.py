#!/usr/bin/env python3
"""Chat load checker (workloads.md §2) built on `websockets` (asyncio API).

Connects --clients WebSocket clients to a chat server, and only once every one
of them is connected, each sends --messages chat messages
``{"message", "user", "userID"}``. Every client then waits until it has
received all clients x messages broadcasts (or --timeout runs out), checks
each broadcast, and closes with code 1000.

Checks: every broadcast is a JSON object with string fields date (ISO 8601),
id (UUID), message, user, userID; every client receives every
(userID, message) pair exactly once; one server id per message (all clients
see the same id for a message, and distinct messages have distinct ids).

stdout: one JSON line
  {"clients":C,"sent":S,"expected_per_client":E,"received_total":R,
   "missing":M,"duplicates":D,"ok":true|false, ...extra diagnostics}
exit: 0 iff ok; 1 not ok (including timeout / connection errors); 2 bad args.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import ssl
import sys
import time
import uuid
from collections import Counter
from datetime import datetime
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def err(msg: str) -> None:
    print(f"chat_clients: {msg}", file=sys.stderr, flush=True)


def check_loopback_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ValueError(f"URL scheme must be ws or wss: {url!r}")
    host = parts.hostname or ""
    if host == "localhost":
        return
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"URL host must be a loopback IP or localhost: {host!r}") from None
    if not ip.is_loopback:
        raise ValueError(f"refusing non-loopback URL host {host!r}")


def make_message(client: int, seq: int, size: int) -> str:
    head = f"c{client}m{seq}:"
    return head + "x" * max(0, size - len(head))


def validate_broadcast(raw) -> dict:
    if isinstance(raw, bytes):
        raise ValueError("binary frame")
    obj = json.loads(raw)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    for key in ("date", "id", "message", "user", "userID"):
        if not isinstance(obj.get(key), str):
            raise ValueError(f"missing or non-string field {key!r}")
    uuid.UUID(obj["id"])
    datetime.fromisoformat(obj["date"].replace("Z", "+00:00"))
    return obj


class Client:
    def __init__(self, index: int, expected_total: int) -> None:
        self.index = index
        self.user = f"user{index}"
        self.user_id = str(uuid.uuid4())
        self.expected_total = expected_total
        self.ws: ClientConnection | None = None
        self.counts: Counter[tuple[str, str]] = Counter()
        self.ids: dict[tuple[str, str], str] = {}
        self.invalid = 0
        self.foreign = 0
        self.done = asyncio.Event()
        if expected_total == 0:
            self.done.set()
        self.closing = False
        self.sent_at: dict[str, float] = {}
        self.rtts: list[float] = []
        self.close_code: int | None = None
        self.error: str | None = None

    async def receive_loop(self, known: dict[tuple[str, str], int]) -> None:
        assert self.ws is not None
        try:
            async for raw in self.ws:
                now = time.perf_counter()
                try:
                    obj = validate_broadcast(raw)
                except (ValueError, json.JSONDecodeError) as e:
                    self.invalid += 1
                    if self.invalid <= 5:
                        err(f"client {self.index}: invalid broadcast ({e}): {str(raw)[:200]!r}")
                    continue
                key = (obj["userID"], obj["message"])
                if key not in known:
                    self.foreign += 1
                    continue
                self.counts[key] += 1
                self.ids.setdefault(key, obj["id"])
                if obj["userID"] == self.user_id and self.counts[key] == 1:
                    t0 = self.sent_at.get(obj["message"])
                    if t0 is not None:
                        self.rtts.append(now - t0)
                if len(self.counts) >= self.expected_total:
                    self.done.set()
        except ConnectionClosed as e:
            if not self.closing:
                self.error = f"connection failed: {e}"
        finally:
            if not self.closing and self.error is None and len(self.counts) < self.expected_total:
                code = self.ws.close_code
                self.error = f"server closed the connection (code {code}) before all broadcasts arrived"
            # The loop is over: no more broadcasts will come, stop waiting.
            self.done.set()


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


async def run(args: argparse.Namespace) -> dict:
    expected = args.clients * args.messages
    clients = [Client(i, expected) for i in range(args.clients)]
    known: dict[tuple[str, str], int] = {}
    for c in clients:
        for j in range(args.messages):
            known[(c.user_id, make_message(c.index, j, args.size))] = c.index

    stats = {"connect_errors": 0, "close_errors": 0, "sent": 0, "timed_out": False}
    recv_tasks: list[asyncio.Task] = []
    sem = asyncio.Semaphore(args.connect_parallel)
    t_start = time.perf_counter()
    t_connected = t_sent = None
    deadline = t_start + args.timeout
    # Keep part of the budget for the closing handshakes, so that the whole
    # run (connect, send, receive, close) stays within --timeout.
    close_reserve = min(5.0, args.timeout * 0.1)
    exchange_budget = args.timeout - close_reserve

    # wss:// with --ca-file trusts that CA only; without it, the system store.
    tls = None
    if args.url.startswith("wss:"):
        tls = ssl.create_default_context(cafile=args.ca_file)

    async def open_one(c: Client) -> None:
        async with sem:
            try:
                c.ws = await connect(
                    args.url,
                    ssl=tls,
                    compression="deflate" if args.compression == "deflate" else None,
                    open_timeout=max(1.0, min(30.0, args.timeout)),
                    close_timeout=min(2.0, close_reserve),
                    max_size=None,
                    ping_interval=None,
                    user_agent_header="stampede-peer-chat-clients",
                )
            except Exception as e:  # noqa: BLE001 - every failure is counted
                stats["connect_errors"] += 1
                c.error = f"connect failed: {e!r}"
                if stats["connect_errors"] <= 5:
                    err(f"client {c.index}: {c.error}")
                return
        recv_tasks.append(asyncio.create_task(c.receive_loop(known)))

    async def send_all(c: Client) -> None:
        assert c.ws is not None
        for j in range(args.messages):
            text = make_message(c.index, j, args.size)
            payload = json.dumps({"message": text, "user": c.user, "userID": c.user_id})
            c.sent_at[text] = time.perf_counter()
            try:
                await c.ws.send(payload)
            except ConnectionClosed as e:
                c.error = f"send failed: {e}"
                return
            stats["sent"] += 1

    try:
        async with asyncio.timeout(exchange_budget):
            # Phase 1: everyone connects before anyone sends.
            await asyncio.gather(*(open_one(c) for c in clients))
            t_connected = time.perf_counter()
            if stats["connect_errors"]:
                raise RuntimeError("not all clients connected")
            # Phase 2: everyone sends.
            await asyncio.gather(*(send_all(c) for c in clients))
            t_sent = time.perf_counter()
            # Phase 3: everyone waits for every broadcast.
            await asyncio.gather(*(c.done.wait() for c in clients))
    except TimeoutError:
        stats["timed_out"] = True
        err(f"timed out after {exchange_budget:g}s (--timeout minus {close_reserve:g}s kept for closing)")
    except RuntimeError as e:
        err(str(e))
    t_received = time.perf_counter()

    # Phase 4: close cleanly (1000), within what is left of --timeout.
    async def close_one(c: Client) -> None:
        if c.ws is None:
            return
        c.closing = True
        try:
            await c.ws.close(code=1000)
        except Exception as e:  # noqa: BLE001
            c.error = c.error or f"close failed: {e!r}"
        c.close_code = c.ws.close_code
        # Our close frame (1000) was answered by the server's close frame:
        # websockets records the code the server echoed back.
        if c.close_code != 1000:
            stats["close_errors"] += 1

    close_budget = max(0.1, deadline - time.perf_counter())
    try:
        async with asyncio.timeout(close_budget):
            await asyncio.gather(*(close_one(c) for c in clients))
    except TimeoutError:
        stats["close_errors"] += 1
        err("timed out while closing")
    for t in recv_tasks:
        t.cancel()
    await asyncio.gather(*recv_tasks, return_exceptions=True)

    # Accounting.
    received_total = missing = duplicates = 0
    id_inconsistent = 0
    canonical_ids: dict[tuple[str, str], str] = {}
    for c in clients:
        received_total += sum(c.counts.values())
        missing += expected - len(c.counts)
        duplicates += sum(n - 1 for n in c.counts.values() if n > 1)
        for key, mid in c.ids.items():
            if canonical_ids.setdefault(key, mid) != mid:
                id_inconsistent += 1
    id_reused = len(canonical_ids) - len(set(canonical_ids.values()))
    invalid = sum(c.invalid for c in clients)
    foreign = sum(c.foreign for c in clients)
    rtts = [r for c in clients for r in c.rtts]
    errors = [f"client {c.index}: {c.error}" for c in clients if c.error]

    ok = (
        not stats["timed_out"]
        and stats["connect_errors"] == 0
        and stats["sent"] == expected
        and missing == 0
        and duplicates == 0
        and invalid == 0
        and id_inconsistent == 0
        and id_reused == 0
        and stats["close_errors"] == 0
        and not errors
    )
    for e in [e for e in errors if "connect failed" not in e][:5]:
        err(e)

    def ms(x: float | None) -> float | None:
        return None if x is None else round(x * 1000, 3)

    exchange = (t_received - t_connected) if t_connected is not None else None
    return {
        "clients": args.clients,
        "sent": stats["sent"],
        "expected_per_client": expected,
        "received_total": received_total,
        "missing": missing,
        "duplicates": duplicates,
        "ok": ok,
        "invalid": invalid,
        "foreign": foreign,
        "id_inconsistent": id_inconsistent,
        "id_reused": id_reused,
        "connect_errors": stats["connect_errors"],
        "close_errors": stats["close_errors"],
        "timed_out": stats["timed_out"],
        "connect_s": round((t_connected or t_received) - t_start, 3),
        "send_s": round(t_sent - t_connected, 3) if t_sent and t_connected else None,
        "exchange_s": round(exchange, 3) if exchange is not None else None,
        "recv_msgs_per_s": round(received_total / exchange) if exchange else None,
        "rtt_ms_p50": ms(percentile(rtts, 50)),
        "rtt_ms_p99": ms(percentile(rtts, 99)),
        "rtt_ms_max": ms(max(rtts) if rtts else None),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="e.g. ws://127.0.0.1:PORT/chat (loopback only)")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--messages", type=int, default=10, help="messages sent by each client")
    p.add_argument("--size", type=int, default=64,
                   help="message text length in characters (padded with 'x'; "
                        "never shorter than its unique 'c<i>m<j>:' prefix)")
    p.add_argument("--timeout", type=float, default=60, help="overall bound in seconds (default 60)")
    p.add_argument("--connect-parallel", type=int, default=64,
                   help="max simultaneous opening handshakes (default 64)")
    p.add_argument("--compression", choices=("none", "deflate"), default="none")
    p.add_argument("--ca-file", help="PEM CA that signed a wss:// server's certificate (default: the system store)")
    args = p.parse_args()
    try:
        check_loopback_url(args.url)
    except ValueError as e:
        p.error(str(e))
    if args.clients < 1 or args.messages < 0 or args.size < 0 or args.timeout <= 0 or args.connect_parallel < 1:
        p.error("--clients >= 1, --messages >= 0, --size >= 0, --timeout > 0, --connect-parallel >= 1")
    result = asyncio.run(run(args))
    print(json.dumps(result, separators=(",", ":")), flush=True)
    return EXIT_OK if result["ok"] else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
