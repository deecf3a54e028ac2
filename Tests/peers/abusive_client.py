#!/usr/bin/env python3
"""Abusive clients against a `stampede serve` on 127.0.0.1, for Benchmarks/abusive-clients.sh.

One abuser floods the server and never reads what it is sent (it reconnects whenever the
server drops it); meanwhile a normal client opens a fresh connection every second and times
its upgrade (chat, hub over WebSockets), its negotiate plus SSE stream head (hub over SSE) or
its first response (REST), and the server's VmRSS is sampled every second from /proc.

Kinds: chat, hub-ws, hub-sse (the SSE stream is never read; the same connection's POSTs send
SendMessage and read their 200s), rest (pipelined GETs, answers never read).

Prints one JSON line: peak RSS, upgrade-time max/p50 (ms), the probes that failed, and the
abuser's reconnects. Standard library only; bounded by --seconds (every socket call has a
timeout). Loopback only.
"""
import argparse
import base64
import json
import os
import socket
import statistics
import threading
import time

HOST = "127.0.0.1"


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def connect(port, timeout=2.0):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("closed before the response head")
        data += chunk
    return data


def upgrade_request(path):
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def ws_frame(payload, opcode=1):
    """A masked client frame (the mask is zero: masking is required, its value is not)."""
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


def http_request(s, method, target, body=b"", extra=""):
    s.sendall((f"{method} {target} HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(body)}\r\n{extra}\r\n").encode() + body)


def read_response(s):
    """Status and body of one Content-Length response."""
    head = read_head(s)
    end = head.index(b"\r\n\r\n") + 4
    lines = head[:end].decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    body = head[end:]
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        body += chunk
    return int(lines[0].split()[1]), body[:length]


def negotiate(port):
    s = connect(port)
    try:
        http_request(s, "POST", "/hub/negotiate?negotiateVersion=1")
        _, body = read_response(s)
        return json.loads(body)["connectionToken"]
    finally:
        s.close()


HANDSHAKE = b'{"protocol":"json","version":1}\x1e'


def send_message(text):
    return json.dumps({"type": 1, "target": "SendMessage", "arguments": ["abuser", text]}).encode() + b"\x1e"


class Abuser(threading.Thread):
    """Floods the server and never reads; reconnects when dropped."""

    def __init__(self, kind, port, deadline):
        super().__init__(daemon=True)
        self.kind, self.port, self.deadline = kind, port, deadline
        self.reconnects = 0

    def run(self):
        while time.monotonic() < self.deadline:
            try:
                getattr(self, "flood_" + self.kind.replace("-", "_"))()
            except (OSError, ConnectionError, ValueError, KeyError):
                pass
            self.reconnects += 1
            time.sleep(0.05)

    def push(self, s, data):
        """Sends until done, the deadline passes, or the server drops us; a full socket (the
        server stopped reading) just waits."""
        view = memoryview(data)
        while view and time.monotonic() < self.deadline:
            try:
                n = s.send(view)
                view = view[n:]
            except socket.timeout:
                continue

    def flood_chat(self):
        s = connect(self.port, timeout=0.5)
        with s:
            s.sendall(upgrade_request("/chat"))
            read_head(s)  # the 101; nothing is read after it
            msg = json.dumps({"message": "x" * 1024, "user": "abuser", "userID": "1"}).encode()
            batch = ws_frame(msg) * 64
            while time.monotonic() < self.deadline:
                self.push(s, batch)

    def flood_hub_ws(self):
        s = connect(self.port, timeout=0.5)
        with s:
            s.sendall(upgrade_request("/hub"))
            read_head(s)
            self.push(s, ws_frame(HANDSHAKE))
            batch = ws_frame(send_message("x" * 1024)) * 64
            while time.monotonic() < self.deadline:
                self.push(s, batch)

    def flood_hub_sse(self):
        token = negotiate(self.port)
        sse = connect(self.port, timeout=0.5)
        with sse:
            http_request(sse, "GET", f"/hub?id={token}", extra="Accept: text/event-stream\r\n")
            # The SSE stream is never read. Its connection's messages go by POST, as SSE
            # clients send; those answers are read.
            post = connect(self.port, timeout=2.0)
            with post:
                http_request(post, "POST", f"/hub?id={token}", HANDSHAKE)
                if read_response(post)[0] != 200:
                    return
                batch = send_message("x" * 1024) * 16
                while time.monotonic() < self.deadline:
                    http_request(post, "POST", f"/hub?id={token}", batch)
                    if read_response(post)[0] != 200:
                        return  # the connection is gone (dropped as a slow consumer)

    def flood_rest(self):
        s = connect(self.port, timeout=0.5)
        with s:
            batch = f"GET /api/items HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode() * 256
            while time.monotonic() < self.deadline:
                self.push(s, batch)


def probe(kind, port):
    """One normal client's upgrade / first-response time, in ms."""
    t0 = time.perf_counter()
    s = connect(port, timeout=5.0)
    with s:
        if kind == "chat":
            s.sendall(upgrade_request("/chat"))
            ok = read_head(s).startswith(b"HTTP/1.1 101")
        elif kind == "hub-ws":
            s.sendall(upgrade_request("/hub"))
            ok = read_head(s).startswith(b"HTTP/1.1 101")
        elif kind == "hub-sse":
            http_request(s, "POST", "/hub/negotiate?negotiateVersion=1")
            token = json.loads(read_response(s)[1])["connectionToken"]
            http_request(s, "GET", f"/hub?id={token}", extra="Accept: text/event-stream\r\n")
            ok = read_head(s).startswith(b"HTTP/1.1 200")
        else:
            http_request(s, "GET", "/api/items")
            ok = read_response(s)[0] == 200
    if not ok:
        raise ConnectionError("unexpected answer")
    return (time.perf_counter() - t0) * 1000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["chat", "hub-ws", "hub-sse", "rest"], required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True, help="the server's process, for VmRSS")
    p.add_argument("--seconds", type=float, default=60)
    args = p.parse_args()
    deadline = time.monotonic() + min(args.seconds, 600)
    abuser = Abuser(args.kind, args.port, deadline)
    abuser.start()
    times, failures, peak = [], 0, 0
    next_tick = time.monotonic()
    while time.monotonic() < deadline:
        peak = max(peak, rss_bytes(args.pid))
        try:
            times.append(probe(args.kind, args.port))
        except (OSError, ConnectionError, ValueError, KeyError):
            failures += 1
        peak = max(peak, rss_bytes(args.pid))
        next_tick += 1
        time.sleep(max(0, min(next_tick, deadline) - time.monotonic()))
    abuser.join(timeout=5)
    print(json.dumps({
        "kind": args.kind, "peak_rss_bytes": peak, "probes": len(times), "probe_failures": failures,
        "upgrade_ms_max": max(times) if times else None,
        "upgrade_ms_p50": statistics.median(times) if times else None,
        "abuser_reconnects": abuser.reconnects,
    }), flush=True)


main()
