#!/usr/bin/env python3
"""Socket.IO load from python-socketio AsyncClients (issue 23): a real client for the reference
server's tests, and the Python side of Benchmarks/socketio-vs-python.sh.

N `socketio.AsyncClient`s (one aiohttp session each, as the library makes them) connect to URL's
namespace (auth {"token": T} with --token), `join` room "room-{i % rooms}" (with ack), then
together emit --rate events per second (spread evenly over the clients, each on its own fixed
schedule: an open model, a late ack does not delay the next emit) for --duration seconds:

  --event say    ["say", {"room": R, "text": "<client>:<seq>"}] with ack; the server emits `said`
                 to the room; each `said` received is counted as own (the text's client is us)
                 or other
  --event echo   ["echo", {"client": i, "seq": n}] (+ --binary BYTES of bytes) with ack; an ack
                 that does not carry back exactly those arguments is counted as echo_mismatch

--rate 0 holds the connections idle for --duration (memory per idle connection).

Ack latency is measured from each emit's intended send time (coordinated omission corrected,
as Stampede's `ack`), and also from the actual call ("uncorrected").

stdout: one JSON object:
  {"clients", "connected", "connect_errors": {CONNECT_ERROR message: n}, "emits", "acks", "acks_missing",
   "said_own", "said_other", "disconnects", "errors": {class: n},
   "ack_ms": {"p50","p99","max"}, "ack_uncorrected_ms": {...}, "transports": {name: n},
   "rss_kib": {"before", "connected", "end"}, "cpu_s": {"connect", "emit"}, "emit_seconds", "ok"}
rss before = after imports, no client; connected = every client connected and joined.
cpu_s = this process's user+sys CPU seconds in each phase. Exit 0 when ok (every client
connected and every emit acked), 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from urllib.parse import urlsplit

import socketio


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return round(v[min(len(v) - 1, int(p / 100 * len(v)))], 3)


class Run:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.c = Counter()
        self.connect_errors = Counter()
        self.errors = Counter()
        self.ack_ms: list[float] = []
        self.ack_uncorrected_ms: list[float] = []
        self.outstanding = 0
        self.clients: list[socketio.AsyncClient] = []
        self.transports = Counter()

    def make_client(self, i: int) -> socketio.AsyncClient:
        a = self.a
        sio = socketio.AsyncClient(reconnection=False, handle_sigint=False)
        refused: list = []
        sio.stampede_refused = refused  # CONNECT_ERROR messages for this client

        @sio.on("connect_error", namespace=a.namespace)
        async def connect_error(data):
            # A dict: the server's CONNECT_ERROR; a string: python-socketio's own connection failure.
            if isinstance(data, dict):
                msg = str(data.get("message"))
                self.connect_errors[msg] += 1
                refused.append(msg)

        @sio.on("said", namespace=a.namespace)
        async def said(data):
            text = data.get("text", "") if isinstance(data, dict) else ""
            if text.split(":", 1)[0] == str(i):
                self.c["said_own"] += 1
            else:
                self.c["said_other"] += 1

        @sio.on("disconnect", namespace=a.namespace)
        async def disconnect(reason=None):
            if not self.c.get("closing"):
                self.c["disconnects"] += 1
                self.errors[f"disconnect {reason}"] += 1

        return sio

    @staticmethod
    async def close_failed(sio: socketio.AsyncClient) -> None:
        # python-socketio keeps the aiohttp session of a connection that never opened (and of a
        # polling one whose upgrade failed): closed here, or aiohttp warns at exit.
        await sio.disconnect()
        http = getattr(sio.eio, "http", None)
        if http is not None and not http.closed:
            await http.close()

    async def connect_one(self, i: int, sem: asyncio.Semaphore) -> socketio.AsyncClient | None:
        a = self.a
        sio = self.make_client(i)
        async with sem:
            try:
                await sio.connect(a.url, auth={"token": a.token} if a.token is not None else None,
                                  transports=a.transports, namespaces=[a.namespace],
                                  socketio_path=a.path.strip("/"), wait_timeout=a.timeout)
            except socketio.exceptions.ConnectionError as e:
                self.errors["namespace_refused" if sio.stampede_refused else f"connect {e}"] += 1
                await self.close_failed(sio)
                return None
            except Exception as e:  # aiohttp/OS errors: counted by class, never a crash
                self.errors[f"connect {type(e).__name__}"] += 1
                await self.close_failed(sio)
                return None
            if a.rooms > 0:
                try:
                    await sio.call("join", f"room-{i % a.rooms}", namespace=a.namespace, timeout=a.timeout)
                except Exception as e:
                    self.errors[f"join {type(e).__name__}"] += 1
                    await self.close_failed(sio)
                    return None
        self.c["connected"] += 1
        return sio

    async def emitter(self, i: int, sio: socketio.AsyncClient, start: float, interval: float, end: float) -> None:
        a = self.a
        seq = 0
        # Offsets spread the clients' schedules over one interval.
        t = start + interval * (i / max(1, len(self.clients)))
        while t < end:
            now = time.monotonic()
            if t > now:
                await asyncio.sleep(t - now)
            intended = t
            actual = time.monotonic()
            if a.event == "say":
                room = f"room-{i % a.rooms}" if a.rooms > 0 else None
                payload = [{"room": room, "text": f"{i}:{seq}"}]
            else:
                payload = [{"client": i, "seq": seq}]
                if a.binary:
                    payload.append(os.urandom(a.binary))

            def on_ack(*args, intended=intended, actual=actual, sent=payload):
                done = time.monotonic()
                self.outstanding -= 1
                self.c["acks"] += 1
                # echo's ack must carry back exactly what was sent, attachments included.
                if a.event == "echo" and list(args) != sent:
                    self.errors["echo_mismatch"] += 1
                self.ack_ms.append((done - intended) * 1e3)
                self.ack_uncorrected_ms.append((done - actual) * 1e3)

            try:
                self.outstanding += 1
                self.c["emits"] += 1
                await sio.emit(a.event, tuple(payload), namespace=a.namespace, callback=on_ack)
            except Exception as e:
                self.outstanding -= 1
                self.c["emits"] -= 1
                self.errors[f"emit {type(e).__name__}"] += 1
                return
            seq += 1
            t += interval

    async def run(self) -> dict:
        a = self.a
        rss_before = rss_kib()
        cpu0 = cpu_s()
        sem = asyncio.Semaphore(a.connect_concurrency)
        results = await asyncio.gather(*(self.connect_one(i, sem) for i in range(a.clients)))
        self.clients = [s for s in results if s is not None]
        for s in self.clients:
            self.transports[s.transport()] += 1
        cpu1 = cpu_s()
        rss_connected = rss_kib()
        start = time.monotonic()
        if a.rate > 0 and self.clients:
            interval = len(self.clients) / a.rate
            end = start + a.duration
            await asyncio.gather(*(self.emitter(i, s, start, interval, end) for i, s in enumerate(self.clients)))
            drain_end = time.monotonic() + a.drain
            while self.outstanding > 0 and time.monotonic() < drain_end:
                await asyncio.sleep(0.02)
        else:
            await asyncio.sleep(a.duration)
        emit_seconds = time.monotonic() - start
        cpu2 = cpu_s()
        rss_end = rss_kib()
        self.c["closing"] = 1
        await asyncio.gather(*(asyncio.wait_for(self.close_failed(s), 5) for s in self.clients), return_exceptions=True)
        acks_missing = self.c["emits"] - self.c["acks"]
        ok = self.c["connected"] == a.clients and acks_missing == 0 and not self.errors
        return {
            "clients": a.clients,
            "connected": self.c["connected"],
            "connect_errors": dict(self.connect_errors),
            "emits": self.c["emits"],
            "acks": self.c["acks"],
            "acks_missing": acks_missing,
            "said_own": self.c["said_own"],
            "said_other": self.c["said_other"],
            "disconnects": self.c["disconnects"],
            "errors": dict(self.errors),
            "ack_ms": {"p50": pct(self.ack_ms, 50), "p99": pct(self.ack_ms, 99), "max": pct(self.ack_ms, 100)},
            "ack_uncorrected_ms": {"p50": pct(self.ack_uncorrected_ms, 50), "p99": pct(self.ack_uncorrected_ms, 99),
                                   "max": pct(self.ack_uncorrected_ms, 100)},
            "transports": dict(self.transports),
            "rss_kib": {"before": rss_before, "connected": rss_connected, "end": rss_end},
            "cpu_s": {"connect": round(cpu1 - cpu0, 3), "emit": round(cpu2 - cpu1, 3)},
            "emit_seconds": round(emit_seconds, 3),
            "ok": ok,
        }


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="python-socketio AsyncClient load (loopback only)")
    p.add_argument("--url", required=True, help="http://127.0.0.1:PORT")
    p.add_argument("--path", default="/socket.io/")
    p.add_argument("--namespace", default="/")
    p.add_argument("--transports", default="polling,websocket")
    p.add_argument("--token", default=None)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--rooms", type=int, default=10, help="clients join room-{i %% rooms}; 0: no join, say broadcasts")
    p.add_argument("--event", choices=("say", "echo"), default="say")
    p.add_argument("--binary", type=int, default=0, help="echo: one bytes argument of this size")
    p.add_argument("--rate", type=float, default=10, help="emits per second, all clients together; 0: idle")
    p.add_argument("--duration", type=float, default=5)
    p.add_argument("--drain", type=float, default=10, help="seconds to wait for outstanding acks")
    p.add_argument("--timeout", type=float, default=10, help="namespace connect / join ack timeout")
    p.add_argument("--connect-concurrency", type=int, default=50)
    a = p.parse_args(argv)
    host = urlsplit(a.url).hostname or ""
    if host not in ("127.0.0.1", "localhost", "::1"):
        p.error("--url must be a loopback address")
    a.transports = [t.strip() for t in a.transports.split(",") if t.strip()]
    if not a.transports or any(t not in ("polling", "websocket") for t in a.transports):
        p.error("--transports: polling and/or websocket")
    if a.clients < 1 or a.rate < 0 or a.duration <= 0 or a.duration > 3600 or a.rooms < 0:
        p.error("--clients >= 1, --rate >= 0, 0 < --duration <= 3600, --rooms >= 0")
    return a


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    report = asyncio.run(Run(args).run())
    print(json.dumps(report, separators=(",", ":")), flush=True)
    sys.exit(0 if report["ok"] else 1)
