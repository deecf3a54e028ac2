#!/usr/bin/env python3
"""SignalR scenario driver on signalrcore 1.0.2 (threaded client; WebSockets, SSE, long polling).

    PY=$(Tests/peers/ensure-venv.sh signalrcore | tail -n1)
    $PY Tests/peers/signalr_clients_signalrcore.py --url http://127.0.0.1:PORT/hub \
        --transport websockets|sse|longpolling --protocol json|messagepack --clients N \
        --messages M --timeout 60 --scenario broadcast|echo|stream|clientresult|upload|groups \
        [--call send|invoke] [--force] [--keepalive 10]

Same scenarios, report line and exit codes as signalr_clients.py (see there and
signalr_common.py). Combinations signalrcore cannot do are reported as unsupported (exit 3)
without connecting; --force tries them anyway (to re-check a library upgrade).
The transport is always chosen explicitly (signalrcore's own fallback checks SSE twice and
never reaches long polling). --keepalive S: the driver sends its own Ping every S seconds
(default 10; 0 = only signalrcore's own pings, i.e. none without automatic reconnect).
"""

import logging
import os
import socket
import sys
import threading
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the work tree for signalr_common
import signalr_common as common  # noqa: E402
from signalrcore.hub.handlers import InvocationHandler, StreamHandler
from signalrcore.hub_connection_builder import HubConnectionBuilder
from signalrcore.messages.invocation_message import InvocationClientStreamMessage
from signalrcore.messages.ping_message import PingMessage
from signalrcore.messages.stream_invocation_message import StreamInvocationMessage
from signalrcore.protocol.messagepack_protocol import MessagePackHubProtocol
from signalrcore.subject import Subject
from signalrcore.types import HttpTransportType, HubProtocolEncoding

LIBRARY = "signalrcore"
KEEPALIVE = 10.0   # seconds between the driver's own Pings; --keepalive 0 = the library's behaviour
TRANSPORT = {
    "websockets": HttpTransportType.web_sockets,
    "sse": HttpTransportType.server_sent_events,
    "longpolling": HttpTransportType.long_polling,
}

# (transport, protocol, scenarios) -> reason; None is a wildcard. Each entry was confirmed by
# running it with --force against signalr_hub_server.py (aiosignalr); see Tests/peers/README.md.
UNSUPPORTED = [
    (None, None, ("clientresult",),
     "signalrcore 1.0.2 has no client-results API: handler return values are ignored and no "
     "Completion is sent for a server Invocation that has an invocationId, so AskClient never gets an answer"),
    ("sse", "messagepack", None,
     "SSE is text-only (the server offers ServerSentEvents with transferFormats [Text]) and signalrcore "
     "silently falls back to JSON instead of failing"),
    ("longpolling", "messagepack", None,
     "signalrcore's long polling never uses its binary client (the factory never passes is_binary, and "
     "LongPollingBinaryClient.__init__ calls super() with the wrong class): MessagePack poll bodies are "
     "decoded as UTF-8 text and split on 0x1E, so every hub message after the handshake is lost"),
    ("longpolling", "json", ("broadcast", "stream", "groups"),
     "signalrcore's long polling client hands on only the first 0x1E-terminated message of each poll "
     "response and keeps the rest until a later poll returns, so when several messages share a poll "
     "they trickle out one per poll timeout (15 s on aiosignalr); only one-message-at-a-time scenarios "
     "(echo, upload) work"),
]


class HubError(Exception):
    pass


class Slot:
    def __init__(self):
        self.event = threading.Event()
        self.result = None
        self.error = None

    def set(self, result=None, error=None):
        if not self.event.is_set():
            self.result, self.error = result, error
            self.event.set()


class Peer:
    def __init__(self, index, args, report):
        self.index = index
        self.user = f"user{index}"
        self.report = report
        self.args = args
        builder = HubConnectionBuilder().with_url(args.url, options={"transport": TRANSPORT[args.transport]})
        builder.with_hub_protocol(HubProtocolEncoding.binary if args.protocol == "messagepack"
                                  else HubProtocolEncoding.text)
        self.conn = builder.build()
        self.inbox = common.Inbox(report, index)
        self.opened = threading.Event()
        self.start_failed = threading.Event()
        self.closed = threading.Event()
        self.closing = False
        self.unexpected_closes = 0
        self.pending = {}
        self.lock = threading.Lock()
        self.conn.on_open(self.opened.set)
        self.conn.on_close(self._on_close)
        self.conn.on_error(self._on_error)
        self.conn.on("ReceiveMessage", self.inbox.on_receive)
        self.client_result_requests = 0
        self.conn.on("GetClientResult", self._on_get_client_result)

    def _on_get_client_result(self, arguments):
        self.client_result_requests += 1
        return f"answer:{arguments[0]}"   # signalrcore ignores this return value

    def _on_close(self):
        self.closed.set()
        if self.opened.is_set() and not self.closing:
            self.unexpected_closes += 1
            self.report.error(f"client {self.index}: connection closed unexpectedly")

    def _on_error(self, message):
        # Completion errors (invocations *and* streams) come here, not to their handlers.
        inv = getattr(message, "invocation_id", None)
        with self.lock:
            slot = self.pending.pop(inv, None) if inv else None
        text = getattr(message, "error", None) or repr(message)
        if slot is not None:
            slot.set(error=text)
        else:
            self.report.error(f"client {self.index}: error: {text}")

    def start(self):
        started = self.conn.start()
        # One sender at a time per connection: the ping thread below, and the scenario thread,
        # share a socket (WebSockets) or must keep one POST in flight (SSE, long polling).
        transport = self.conn.transport
        send, lock = transport.send, threading.Lock()

        def locked_send(message, *a, **kw):
            with lock:
                return send(message, *a, **kw)

        transport.send = locked_send
        if KEEPALIVE > 0:
            threading.Thread(target=self._keepalive, daemon=True).start()
        return started

    def _keepalive(self):
        """signalrcore only pings when automatic reconnect is configured (WebSockets) and never on
        SSE in practice, so a client that only listens is dropped by the server's client timeout
        (30 s). Send a Ping every KEEPALIVE seconds ourselves."""
        while not self.closing:
            time.sleep(KEEPALIVE)
            if self.closing or not self.opened.is_set():
                continue
            try:
                self.conn.transport.send(PingMessage())
            except Exception:  # noqa: BLE001
                pass

    def protocol_name(self):
        return "messagepack" if isinstance(self.conn.protocol, MessagePackHubProtocol) else "json"

    def _register(self, invocation_id):
        slot = Slot()
        with self.lock:
            self.pending[invocation_id] = slot
        return slot

    def _wait(self, slot, invocation_id, deadline, what):
        if not slot.event.wait(max(0.0, deadline - time.monotonic())):
            with self.lock:
                self.pending.pop(invocation_id, None)
            raise TimeoutError(f"{what}: no Completion before the deadline")
        if slot.error is not None:
            raise HubError(slot.error)
        return slot.result

    def invoke(self, method, arguments, deadline):
        invocation_id = str(uuid.uuid4())
        slot = self._register(invocation_id)

        def done(message):
            with self.lock:
                self.pending.pop(invocation_id, None)
            slot.set(result=message.result)

        self.conn.invoke(method, arguments, on_invocation=done, invocation_id=invocation_id)
        return self._wait(slot, invocation_id, deadline, method)

    def call(self, method, arguments, mode, deadline):
        if mode == "invoke":
            return self.invoke(method, arguments, deadline)
        # signalrcore has no fire-and-forget: send() is invoke() with an id whose Completion is ignored.
        self.conn.send(method, arguments)
        return None

    def stream(self, method, arguments, deadline):
        """Like HubConnection.stream(), but subscribes *before* sending the StreamInvocation.

        signalrcore's stream() sends first and returns the handler to subscribe() to, so the
        receive thread can deliver the first items to the default (logging) callbacks.
        """
        invocation_id = str(uuid.uuid4())
        slot = self._register(invocation_id)
        items = []

        def complete(message):
            with self.lock:
                self.pending.pop(invocation_id, None)
            slot.set(result=items)

        handler = StreamHandler(method, invocation_id)
        handler.subscribe({"next": items.append, "complete": complete,
                           "error": lambda m: slot.set(error=getattr(m, "error", None) or repr(m))})
        self.conn.stream_handlers[invocation_id].append(handler)
        self.conn.transport.send(StreamInvocationMessage(invocation_id, method, arguments,
                                                         headers=self.conn.headers))
        return self._wait(slot, invocation_id, deadline, method)

    def upload(self, method, items, deadline):
        """Client-to-server stream whose hub return value is read back.

        signalrcore's Subject sends the stream Invocation without an invocationId (and, in
        MessagePack, therefore shifts target into the id slot), so the hub's return value never
        comes back. The driver sends that Invocation itself with an id; items and the closing
        Completion go through the stock Subject.
        """
        invocation_id = str(uuid.uuid4())
        slot = self._register(invocation_id)

        def done(message):
            with self.lock:
                self.pending.pop(invocation_id, None)
            slot.set(result=message.result)

        subject = Subject()
        subject.connection = self.conn
        subject.target = method
        self.conn.stream_handlers[invocation_id].append(InvocationHandler(invocation_id, done))
        start = InvocationClientStreamMessage([subject.invocation_id], method, [], headers=self.conn.headers)
        start.invocation_id = invocation_id
        self.conn.transport.send(start)
        for item in items:
            subject.next(item)
        subject.complete()
        return self._wait(slot, invocation_id, deadline, method)

    def stop(self, timeout=3.0):
        """conn.stop() can block (it joins the receive thread): run it in a bounded daemon thread."""
        self.closing = True
        t = threading.Thread(target=self._stop, daemon=True)
        t.start()
        t.join(timeout)
        return not t.is_alive()

    def _stop(self):
        # signalrcore's WebSocket/SSE close() closes the socket from this thread while the
        # receive thread sits in recv(), which Linux does not wake up, then joins that thread
        # forever. Shutting the socket down first makes recv() return.
        sock = getattr(getattr(self.conn.transport, "_client", None), "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            self.conn.stop()
        except Exception:  # noqa: BLE001
            pass


def wait_until(predicate, deadline, step=0.02):
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
    return True


def run_parallel(peers, fn):
    threads = [threading.Thread(target=fn, args=(p,), daemon=True) for p in peers]
    for t in threads:
        t.start()
    return threads


def join_all(threads, deadline):
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return all(not t.is_alive() for t in threads)


def run(args, report, peers, deadline, diag):
    n, m = args.clients, args.messages
    t0 = time.monotonic()

    def starter(p):
        try:
            p.start()
        except Exception as exc:  # noqa: BLE001
            p.start_failed.set()
            report.error(f"client {p.index}: start failed: {exc!r}")

    join_all(run_parallel(peers, starter), deadline)
    wait_until(lambda: all(p.opened.is_set() or p.start_failed.is_set() for p in peers), deadline)
    for p in peers:
        if not p.opened.is_set() and not p.start_failed.is_set():
            report.error(f"client {p.index}: not connected before the deadline")
    diag["connect_s"] = round(time.monotonic() - t0, 3)
    connected = sum(p.opened.is_set() for p in peers)
    if connected < n:
        diag["connected"] = connected
        report.expected = common.planned_expected(args)
        report.missing = report.expected
        return
    chosen = {p.protocol_name() for p in peers}
    if chosen != {args.protocol}:
        report.error(f"signalrcore chose protocol {sorted(chosen)} instead of {args.protocol}")
        diag["protocol_used"] = sorted(chosen)

    t1 = time.monotonic()
    scenario = args.scenario
    lock = threading.Lock()

    def add(field, k=1):
        with lock:
            setattr(report, field, getattr(report, field) + k)

    if scenario == "broadcast":
        ids = [[common.message_id(report, i, j) for j in range(m)] for i in range(n)]
        all_ids = {mid for row in ids for mid in row}
        report.plan_settle([p.inbox for p in peers], [all_ids] * n)

        def sender(p):
            for mid in ids[p.index]:
                try:
                    p.call("SendMessage", [p.user, mid], args.call, deadline)
                    add("sent")
                except Exception as exc:  # noqa: BLE001
                    report.error(f"client {p.index}: SendMessage failed: {exc!r}")

        join_all(run_parallel(peers, sender), deadline)
        wait_until(lambda: all(p.inbox.count_of(all_ids) == len(all_ids) for p in peers), deadline)
        report.settle()

    elif scenario in ("echo", "clientresult"):
        report.expected = n * m
        method, tag = ("Echo", "echo") if scenario == "echo" else ("AskClient", "q")

        def caller(p):
            for j in range(m):
                text = common.message_id(report, p.index, j, tag)
                want = text if scenario == "echo" else f"answer:{text}"
                add("sent")
                try:
                    got = p.invoke(method, [text], deadline)
                except Exception as exc:  # noqa: BLE001
                    report.error(f"client {p.index}: {method} failed: {exc!r}")
                    continue
                if got == want:
                    add("received")
                else:
                    report.error(f"client {p.index}: {method} returned {got!r}, expected {want!r}")

        join_all(run_parallel(peers, caller), deadline)

    elif scenario == "stream":
        report.expected = n * m

        def streamer(p):
            add("sent")
            try:
                items = p.stream("Counter", [m, common.STREAM_DELAY_MS], deadline)
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: stream failed: {exc!r}")
                return
            with lock:
                check_stream(report, p.index, list(items), m)

        join_all(run_parallel(peers, streamer), deadline)

    elif scenario == "upload":
        report.expected = n * m
        diag["workaround"] = ("signalrcore's Subject sends the stream Invocation without an invocationId, so "
                              "Upload's return value never comes back; the driver sends that Invocation "
                              "itself with an id")

        def uploader(p):
            try:
                count = p.upload("Upload", list(range(m)), deadline)
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: Upload failed: {exc!r}")
                return
            finally:
                add("sent", m)
            with lock:
                check_upload(report, p.index, count, m)

        join_all(run_parallel(peers, uploader), deadline)

    elif scenario == "groups":
        members = [p for p in peers if p.index % 2 == 0]
        diag["members"] = len(members)
        for p in members:
            try:
                p.invoke("JoinGroup", [common.GROUP], deadline)
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: JoinGroup failed: {exc!r}")
        ids = [[common.message_id(report, i, j, "g") for j in range(m)] for i in range(n)]
        group_ids = {mid for row in ids for mid in row}
        after_leave = common.message_id(report, 0, 0, "afterleave")
        marker = common.message_id(report, 0, 0, "marker")
        report.plan_settle([p.inbox for p in peers],
                           [(group_ids | {marker}) if p.index % 2 == 0 else {marker} for p in peers])

        def sender(p):
            for mid in ids[p.index]:
                try:
                    p.call("SendToGroup", [common.GROUP, p.user, mid], args.call, deadline)
                    add("sent")
                except Exception as exc:  # noqa: BLE001
                    report.error(f"client {p.index}: SendToGroup failed: {exc!r}")

        join_all(run_parallel(peers, sender), deadline)
        wait_until(lambda: all(p.inbox.count_of(group_ids) == len(group_ids) for p in members), deadline)
        for p in members:
            try:
                p.invoke("LeaveGroup", [common.GROUP], deadline)
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: LeaveGroup failed: {exc!r}")
        try:
            peers[0].invoke("SendToGroup", [common.GROUP, peers[0].user, after_leave], deadline)
            peers[0].invoke("SendMessage", [peers[0].user, marker], deadline)
        except Exception as exc:  # noqa: BLE001
            report.error(f"client 0: post-leave sends failed: {exc!r}")
        wait_until(lambda: all(p.inbox.count_of({marker}) == 1 for p in peers), deadline)
        report.settle()

    diag["exchange_s"] = round(time.monotonic() - t1, 3)


def check_stream(report, index, items, m):
    got = set()
    for it in items:
        if isinstance(it, int) and 0 <= it < m and it not in got:
            got.add(it)
        elif it in got:
            report.duplicates += 1
    report.received += len(got)
    if items != list(range(m)):
        report.error(f"client {index}: stream items {items[:20]!r} not 0..{m - 1} in order")


def check_upload(report, index, count, m):
    if count == m:
        report.received += m
    else:
        report.error(f"client {index}: Upload returned {count!r}, expected {m}")
        if isinstance(count, int) and 0 <= count <= m:
            report.received += count


def unsupported_reason(args):
    for transport, protocol, scenarios, why in UNSUPPORTED:
        if ((transport is None or transport == args.transport) and (protocol is None or protocol == args.protocol)
                and (scenarios is None or args.scenario in scenarios)):
            return why
    return None


def main():
    argv = sys.argv[1:]
    force = "--force" in argv
    if force:
        argv = [a for a in argv if a != "--force"]
    global KEEPALIVE
    if "--keepalive" in argv:
        i = argv.index("--keepalive")
        try:
            KEEPALIVE = float(argv[i + 1])
        except (IndexError, ValueError):
            common.die_usage("--keepalive needs a number of seconds")
        del argv[i:i + 2]
    args = common.parse_args(LIBRARY, argv)
    logging.getLogger("SignalRCoreClient").setLevel(logging.DEBUG if args.verbose else logging.CRITICAL + 1)
    if args.verbose:
        logging.basicConfig(stream=sys.stderr, level=logging.DEBUG)
    report = common.Report(LIBRARY, args)
    why = unsupported_reason(args)
    if why and not force:
        return report.unsupported(why)

    t_start = time.monotonic()
    close_reserve = min(5.0, args.timeout / 10)
    deadline = t_start + args.timeout - close_reserve
    peers = [Peer(i, args, report) for i in range(args.clients)]
    diag = {}
    worker = threading.Thread(target=run, args=(args, report, peers, deadline, diag), daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()) + 0.5)
    timed_out = worker.is_alive() or time.monotonic() >= deadline
    if timed_out:
        report.error("timed out")
    stop_deadline = time.monotonic() + close_reserve
    stuck = sum(not p.stop(max(0.2, stop_deadline - time.monotonic())) for p in peers)
    if args.scenario != "broadcast" and args.scenario != "groups":
        report.missing = report.expected - report.received
    code = report.emit(timed_out=timed_out, unexpected_closes=sum(p.unexpected_closes for p in peers),
                       stop_stuck=stuck, seconds=round(time.monotonic() - t_start, 3),
                       forced=bool(why), **diag)
    sys.stdout.flush()
    # Daemon receive threads may still sit in blocking reads: leave without joining them.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
