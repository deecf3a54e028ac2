"""Shared, stdlib-only parts of the SignalR client drivers (signalr_clients*.py).

Both drivers take the same CLI, run the same scenarios against the hub contract described in
signalr_hub_server.py and print the same one-line JSON report:

    {"library","transport","protocol","scenario","clients","sent","expected","received",
     "missing","duplicates","errors","ok", ...diagnostics}

Exit codes: 0 ok; 1 failed (mismatch, error, timeout); 2 bad arguments; 3 unsupported by
the library (the line is then {"ok":false,"unsupported":"why",...}).
"""

import argparse
import ipaddress
import json
import os
import sys
import threading
import uuid
from collections import Counter
from urllib.parse import urlsplit

SCENARIOS = ("broadcast", "echo", "stream", "clientresult", "upload", "groups")
TRANSPORTS = ("websockets", "sse", "longpolling")
PROTOCOLS = ("json", "messagepack")
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_UNSUPPORTED = 0, 1, 2, 3
GROUP = "a"
STREAM_DELAY_MS = 5
MAX_ERROR_SAMPLES = 10


def _loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_args(library, argv=None):
    p = argparse.ArgumentParser(description=f"SignalR scenario driver on {library}")
    p.add_argument("--url", required=True, help="hub URL, e.g. http://127.0.0.1:PORT/hub (loopback only)")
    p.add_argument("--transport", choices=TRANSPORTS, default="websockets")
    p.add_argument("--protocol", choices=PROTOCOLS, default="json")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--messages", type=int, default=5)
    p.add_argument("--timeout", type=float, default=60.0, help="whole run, seconds (default 60)")
    p.add_argument("--scenario", choices=SCENARIOS, default="broadcast")
    p.add_argument("--call", choices=("send", "invoke"), default="send",
                   help="broadcast/groups: send without an invocation id (default) or invoke and await "
                        "each Completion")
    p.add_argument("-v", "--verbose", action="store_true", help="library logs on stderr")
    args = p.parse_args(argv)
    try:
        parts = urlsplit(args.url)
        host = parts.hostname
    except ValueError:
        p.error(f"bad --url {args.url!r}")
    if parts.scheme not in ("http", "https", "ws", "wss") or not host:
        p.error(f"--url must be http(s)://HOST:PORT/PATH, got {args.url!r}")
    if not _loopback(host):
        p.error(f"--url host must be loopback (127.0.0.0/8, ::1, localhost), got {host!r}")
    if args.clients < 1 or args.messages < 1 or args.timeout <= 0:
        p.error("--clients and --messages must be >= 1, --timeout > 0")
    # urllib (signalrcore) honours *_proxy variables: never send loopback traffic to a proxy.
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        os.environ.pop(var, None)
    os.environ["no_proxy"] = os.environ["NO_PROXY"] = "*"
    return args


class Report:
    """Accumulates the counts of one run (thread-safe) and prints the JSON line."""

    def __init__(self, library, args):
        self.library = library
        self.args = args
        self.lock = threading.Lock()
        self.sent = 0
        self.expected = 0
        self.received = 0
        self.missing = 0
        self.duplicates = 0
        self.errors = 0
        self.error_samples = []
        self.extra = {}
        self.run_id = uuid.uuid4().hex[:8]
        self._settle = None
        self._settle_lock = threading.Lock()

    def plan_settle(self, inboxes, expected_by_client):
        """Register the ReceiveMessage accounting to fold in, now or when the run ends early."""
        self._settle = (inboxes, expected_by_client)

    def settle(self):
        """Fold the planned inbox accounting into the counts (once; no-op if none planned)."""
        with self._settle_lock:
            planned, self._settle = self._settle, None
        if planned is not None:
            settle_inboxes(self, *planned)

    def error(self, text):
        with self.lock:
            self.errors += 1
            if len(self.error_samples) < MAX_ERROR_SAMPLES:
                self.error_samples.append(str(text)[:300])

    def base(self):
        a = self.args
        return {"library": self.library, "transport": a.transport, "protocol": a.protocol,
                "scenario": a.scenario, "clients": a.clients}

    def emit(self, **diagnostics):
        self.settle()
        if self.expected == 0:      # stopped before the scenario computed it (timeout, connect error)
            self.expected = planned_expected(self.args)
            self.missing = self.expected - self.received
        ok = (self.errors == 0 and self.missing == 0 and self.duplicates == 0
              and self.received == self.expected and self.expected > 0)
        out = self.base()
        out.update(sent=self.sent, expected=self.expected, received=self.received,
                   missing=self.missing, duplicates=self.duplicates, errors=self.errors, ok=ok)
        out.update(self.extra)
        out.update(diagnostics)
        out["error_samples"] = self.error_samples
        print(json.dumps(out, separators=(",", ":")), flush=True)
        return EXIT_OK if ok else EXIT_FAIL

    def unsupported(self, why):
        out = self.base()
        out.update(ok=False, unsupported=why)
        print(json.dumps(out, separators=(",", ":")), flush=True)
        return EXIT_UNSUPPORTED


class Inbox:
    """ReceiveMessage accounting for one client: counts every message id it got."""

    def __init__(self, report, index):
        self.report = report
        self.index = index
        self.got = Counter()
        self.foreign = 0
        self.bad = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)

    def on_receive(self, arguments):
        prefix = f"{self.report.run_id}:"
        try:
            user, text = arguments[0], arguments[1]
        except (TypeError, IndexError, KeyError):
            with self.lock:
                self.bad += 1
            self.report.error(f"client {self.index}: malformed ReceiveMessage arguments {arguments!r}")
            return
        with self.cond:
            if not isinstance(text, str) or not text.startswith(prefix):
                self.foreign += 1
                return
            self.got[text] += 1
            if not (isinstance(user, str) and text.split(":")[1] == user):
                self.bad += 1
            self.cond.notify_all()

    def count_of(self, ids):
        with self.lock:
            return sum(1 for i in ids if self.got[i] > 0)


def message_id(report, sender, j, tag="m"):
    """The text of message j from client `sender`: 'RUN:userS:tagJ' (the user name is field 2)."""
    return f"{report.run_id}:user{sender}:{tag}{j}"


def settle_inboxes(report, inboxes, expected_by_client):
    """Fold per-client inbox counters into the report's received/missing/duplicates.

    A message of this run that a client was not meant to get (e.g. a group message sent to a
    non-member) counts as an error ("unexpected_deliveries")."""
    foreign = bad = leaked = 0
    for k, inbox in enumerate(inboxes):
        expected = expected_by_client[k]
        with inbox.lock:
            got = Counter(inbox.got)
            foreign += inbox.foreign
            bad += inbox.bad
        report.expected += len(expected)
        for mid in expected:
            n = got.get(mid, 0)
            if n == 0:
                report.missing += 1
            else:
                report.received += 1
                report.duplicates += n - 1
        for mid, n in got.items():
            if mid not in expected:
                leaked += n
    if bad:
        report.error(f"{bad} ReceiveMessage calls with a user that does not match the text")
    if leaked:
        report.error(f"{leaked} ReceiveMessage calls delivered to a client that should not get them")
    report.extra.update(foreign=foreign, unexpected_deliveries=leaked)


def planned_expected(args):
    """What `expected` would have been had every client connected."""
    n, m = args.clients, args.messages
    if args.scenario == "broadcast":
        return n * n * m
    if args.scenario == "groups":
        return ((n + 1) // 2) * n * m + n
    return n * m


def die_usage(msg):
    print(msg, file=sys.stderr)
    sys.exit(EXIT_USAGE)
