#!/usr/bin/env python3
"""Reference REST target for ETag polling, on the standard library only
(``http.server.ThreadingHTTPServer``): a third-party twin of Stampede's RestServer
(``stampede serve --rest``), with the same contract.

- Every path equal to or under ``--path`` (default ``/api``: ``/api/items``,
  ``/api/users/7``) is a resource; the query string is ignored. At most 10,000
  distinct paths are kept; a new one beyond that, and any other path, gets 404.
  Methods other than GET/HEAD get 405 (after auth and the path check, as in Swift).
- version = floor((now - start) * --change-rate) (0 when the rate is 0); ETag
  ``"v<version>"``; ``X-Changed-At`` = start + version / rate, Unix seconds with
  microseconds.
- ``--token T`` / ``--token-env VAR``: every request needs ``Authorization: Bearer T``
  (scheme in any case), else 401 with ``WWW-Authenticate: Bearer`` and
  ``{"error":"unauthorized"}``. The token is never printed.
- ``If-None-Match`` naming the current ETag (or ``*``; ``W/`` compares weakly) → 304
  with ETag and X-Changed-At, no body.
- ``--rate-limit N``: only would-be 200s count, in one-second windows of the server's
  clock; the (N+1)-th gets 429 with ``Retry-After`` and ``{"error":"rate limited"}``.
  200, 304 and 429 carry ``X-RateLimit-Limit/Remaining/Reset``.
- 200: ``application/json`` ``{"path","version","changed_at","data"}`` padded to about
  ``--body-size`` bytes, ``Cache-Control: no-cache``; Content-Length, or with
  ``--chunked`` Transfer-Encoding: chunked (one chunk).
- HTTP/1.1 keep-alive (pipelined requests answered in order); ``Connection: close``
  is honoured.
- ``--tls-cert F --tls-key F`` (PEM): the same over HTTPS (Python's ``ssl``, TLS 1.2 and
  1.3); each handshake runs in its connection's thread, a failed one is reported on
  stderr and ends only that connection.

Contract (see Tests/peers/README.md):
  stdout line 1:    ``LISTENING <port>``            (flushed once bound)
  stdout last line: ``{"requests": N, "ok": N, "not_modified": N, ...}``
  exit 0 on SIGTERM/SIGINT, 3 when --max-seconds ran out, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from loopback import loopback_host

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_MAX_SECONDS = 3
MAX_RESOURCES = 10_000
MAX_BODY_SIZE = 16 << 20


def err(msg: str) -> None:
    print(f"rest_server: {msg}", file=sys.stderr, flush=True)



class State:
    """Everything the handler threads share, behind one lock."""

    def __init__(self, args: argparse.Namespace, token: str | None) -> None:
        self.lock = threading.Lock()
        self.start = time.time()
        self.rate = args.change_rate
        self.token = token
        self.limit = args.rate_limit
        self.body_size = args.body_size
        self.chunked = args.chunked
        self.base = args.path.rstrip("/")
        if self.base and not self.base.startswith("/"):
            self.base = "/" + self.base
        self.resources: set[str] = set()
        self.window = 0
        self.counted = 0
        self.counters = {
            "requests": 0, "ok": 0, "not_modified": 0, "unauthorized": 0, "rate_limited": 0,
            "not_found": 0, "method_not_allowed": 0, "bad_requests": 0, "connections": 0, "resources": 0,
        }

    def count(self, name: str) -> None:
        with self.lock:
            self.counters[name] += 1

    def version(self, now: float) -> int:
        if self.rate <= 0:
            return 0
        return max(0, math.floor((now - self.start) * self.rate))

    def changed_at(self, version: int) -> str:
        t = self.start + version / self.rate if self.rate > 0 else self.start
        micros = round(t * 1e6)
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def under_base(self, path: str) -> bool:
        if not path.startswith(self.base):
            return False
        if len(path) == len(self.base):
            return path != ""
        return path[len(self.base)] == "/"

    def know(self, path: str) -> bool:
        with self.lock:
            if path in self.resources:
                return True
            if len(self.resources) >= MAX_RESOURCES:
                return False
            self.resources.add(path)
            self.counters["resources"] = len(self.resources)
            return True

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        if header is None or len(header) <= 7 or header[:6].lower() != "bearer" or header[6] not in " \t":
            return False
        return header[7:].lstrip(" \t") == self.token


def etag_matches(value: str, etag: str) -> bool:
    """If-None-Match, weak comparison: ``*`` or any listed tag whose opaque part is etag's."""
    i, end = 0, len(value)
    while i < end:
        c = value[i]
        if c in " \t,":
            i += 1
            continue
        if c == "*":
            return True
        if value.startswith('W/"', i):
            i += 2
        if value[i] == '"':
            close = value.find('"', i + 1)
            if close < 0:
                return False
            if value[i:close + 1] == etag:
                return True
            i = close + 1
        while i < end and value[i] != ",":
            i += 1
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body are separate writes: without this, Nagle + delayed ACK stall keep-alive.
    disable_nagle_algorithm = True
    server_version = "rest_server.py"
    state: State  # set on the class by main()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass

    def setup(self) -> None:
        super().setup()
        self.state.count("connections")

    def __getattr__(self, name: str):
        # Every method goes through handle_any, so the order of checks matches RestServer's.
        if name.startswith("do_"):
            return self.handle_any
        raise AttributeError(name)

    def send_error(self, code, message=None, explain=None) -> None:
        if code == 400:
            self.state.count("bad_requests")
        super().send_error(code, message, explain)

    def discard_body(self) -> None:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True  # not worth de-chunking: no client here sends one
            return
        length = self.headers.get("Content-Length")
        if length:
            try:
                self.rfile.read(int(length))
            except ValueError:
                self.close_connection = True

    def reply(self, status: int, headers: list[tuple[str, str]], body: bytes, chunked: bool = False) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if status != 304:
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD" or status == 304:
            return
        if chunked:
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        else:
            self.wfile.write(body)

    def error_reply(self, status: int, text: str, extra: list[tuple[str, str]] | None = None) -> None:
        headers = [("Content-Type", "application/json")] + (extra or [])
        self.reply(status, headers, json.dumps({"error": text}, separators=(",", ":")).encode())

    def rate_headers(self) -> list[tuple[str, str]]:
        s = self.state
        if s.limit is None:
            return []
        return [("X-RateLimit-Limit", str(s.limit)), ("X-RateLimit-Remaining", str(max(0, s.limit - s.counted))),
                ("X-RateLimit-Reset", str(s.window + 1))]

    def handle_any(self) -> None:
        s = self.state
        s.count("requests")
        self.discard_body()
        if not s.authorized(self.headers.get("Authorization")):
            s.count("unauthorized")
            self.error_reply(401, "unauthorized", [("WWW-Authenticate", "Bearer")])
            return
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if not s.under_base(path):
            s.count("not_found")
            self.error_reply(404, "not found")
            return
        if self.command not in ("GET", "HEAD"):
            s.count("method_not_allowed")
            self.error_reply(405, "method not allowed", [("Allow", "GET, HEAD")])
            return
        if not s.know(path):
            s.count("not_found")
            self.error_reply(404, "too many resources")
            return
        now = time.time()
        version = s.version(now)
        etag = f'"v{version}"'
        changed_at = s.changed_at(version)
        validators = [("ETag", etag), ("X-Changed-At", changed_at), ("Cache-Control", "no-cache")]
        not_modified = etag_matches(self.headers.get("If-None-Match") or "", etag)
        with s.lock:
            if s.limit is not None:
                second = math.floor(now)
                if second != s.window:
                    s.window, s.counted = second, 0
            limited = not not_modified and s.limit is not None and s.counted >= s.limit
            if not not_modified and not limited and s.limit is not None:
                s.counted += 1
            rate = self.rate_headers()
            window_end = s.window + 1
        if not_modified:
            s.count("not_modified")
            self.reply(304, validators + rate, b"")
            return
        if limited:
            s.count("rate_limited")
            retry_after = max(1, math.ceil(window_end - now))
            self.error_reply(429, "rate limited", [("Retry-After", str(retry_after))] + rate)
            return
        s.count("ok")
        prefix = f'{{"path":{json.dumps(path)},"version":{version},"changed_at":{changed_at},"data":"'
        pad = max(0, s.body_size - len(prefix) - 2)
        body = (prefix + "x" * pad + '"}').encode()
        chunked = s.chunked and self.request_version != "HTTP/1.0"
        self.reply(200, [("Content-Type", "application/json")] + validators + rate, body, chunked=chunked)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Reference REST target for ETag polling (stdlib only).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--path", default="/api")
    p.add_argument("--change-rate", type=float, default=1.0, help="version changes per second per resource (0: never)")
    p.add_argument("--token", help="require Authorization: Bearer TOKEN")
    p.add_argument("--token-env", help="read the token from this environment variable")
    p.add_argument("--rate-limit", type=int, help="200s per second, whole server")
    p.add_argument("--body-size", type=int, default=256)
    p.add_argument("--chunked", action="store_true")
    p.add_argument("--max-seconds", type=float, default=300.0)
    p.add_argument("--tls-cert", help="PEM certificate (chain): serve HTTPS (needs --tls-key)")
    p.add_argument("--tls-key", help="PEM private key of --tls-cert")
    return p.parse_args(argv)


class TLSHTTPServer(ThreadingHTTPServer):
    """Accepts plain sockets and wraps them; the handshake happens in the connection's own
    thread, so a slow or failing client holds up no one else."""

    context: ssl.SSLContext

    def get_request(self):
        sock, address = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request, client_address) -> None:
        try:
            request.settimeout(10)
            request.do_handshake()
            request.settimeout(None)
        except (ssl.SSLError, OSError) as e:
            err(f"TLS handshake with {client_address} failed: {e}")
            return
        super().finish_request(request, client_address)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        host = loopback_host(args.host)
    except ValueError as e:
        err(str(e))
        return EXIT_USAGE
    problems = []
    if args.token is not None and args.token_env is not None:
        problems.append("--token and --token-env are exclusive")
    if not (math.isfinite(args.change_rate) and args.change_rate >= 0):
        problems.append("--change-rate must be >= 0")
    if args.rate_limit is not None and args.rate_limit < 1:
        problems.append("--rate-limit must be >= 1")
    if not 0 <= args.body_size <= MAX_BODY_SIZE:
        problems.append(f"--body-size must be from 0 to {MAX_BODY_SIZE}")
    if not 0 <= args.port <= 65535:
        problems.append("--port must be from 0 to 65535")
    if bool(args.tls_cert) != bool(args.tls_key):
        problems.append("--tls-cert and --tls-key go together")
    context = None
    if args.tls_cert and args.tls_key:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as e:
            problems.append(f"--tls-cert/--tls-key: {e}")
    token = args.token
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            problems.append(f"--token-env: {args.token_env} is not set or empty")
    elif token == "":
        problems.append("--token must not be empty")
    if problems:
        for problem in problems:
            err(problem)
        return EXIT_USAGE

    state = State(args, token)
    Handler.state = state
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.allow_reuse_address = True
    if context is not None:
        TLSHTTPServer.context = context
        server = TLSHTTPServer((host, args.port), Handler)
    else:
        server = ThreadingHTTPServer((host, args.port), Handler)
    server.daemon_threads = True
    stop = threading.Event()
    reason = ["max-seconds"]

    def on_signal(signum, frame) -> None:
        reason[0] = "signal"
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    print(f"LISTENING {server.server_address[1]}", flush=True)
    deadline = time.monotonic() + args.max_seconds if args.max_seconds > 0 else math.inf
    while not stop.is_set() and time.monotonic() < deadline:
        stop.wait(0.2)
    server.shutdown()
    server.server_close()
    with state.lock:
        report = dict(state.counters, reason=reason[0])
    print(json.dumps(report), flush=True)
    return EXIT_OK if reason[0] == "signal" else EXIT_MAX_SECONDS


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
