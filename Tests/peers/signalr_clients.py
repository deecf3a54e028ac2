#!/usr/bin/env python3
"""SignalR scenario driver on pysignalr 1.3.3 (WebSockets only; JSON and MessagePack).

    PY=$(Tests/peers/ensure-venv.sh pysignalr | tail -n1)
    $PY Tests/peers/signalr_clients.py --url http://127.0.0.1:PORT/hub --transport websockets \
        --protocol json|messagepack --clients N --messages M --timeout 60 \
        --scenario broadcast|echo|stream|clientresult|upload|groups [--call send|invoke]

Scenarios (hub contract: see signalr_hub_server.py), every client is user<i>:
  broadcast     all N connected first; each calls SendMessage M times; every client must get
                all N*M ReceiveMessage exactly once.
  echo          each client invokes Echo M times and checks the value.
  stream        each client streams Counter(M, 5): 0..M-1 in order, then a Completion.
  clientresult  each client answers GetClientResult(q) with "answer:"+q and invokes AskClient
                M times, checking the answers.
  upload        each client streams M items to Upload and checks the returned count.
  groups        even-numbered clients join "a"; every client calls SendToGroup("a", ...) M
                times; members must get all N*M exactly once, others none. Then the members
                leave; a SendToGroup after that must reach nobody (checked with a following
                broadcast marker that everyone must get).

stdout: one JSON line (see signalr_common.py). Exit 0 ok, 1 failed, 2 usage, 3 unsupported.
"""

import asyncio
import logging
import os
import sys
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the work tree for signalr_common
import signalr_common as common  # noqa: E402
from pysignalr.client import ClientStream, SignalRClient
from pysignalr.messages import InvocationClientStreamMessage
from pysignalr.protocol.json import JSONProtocol
from pysignalr.protocol.messagepack import MessagepackProtocol

LIBRARY = "pysignalr"


class HubError(Exception):
    pass


class Peer:
    def __init__(self, index, args, report):
        self.index = index
        self.user = f"user{index}"
        self.report = report
        self.args = args
        proto = JSONProtocol() if args.protocol == "json" else MessagepackProtocol()
        # retry_count=1: a failed negotiate is final (no silent retries inside a measured run).
        self.client = SignalRClient(args.url, protocol=proto, retry_count=1, connection_timeout=10)
        self.inbox = common.Inbox(report, index)
        self.opened = asyncio.Event()
        self.closing = False
        self.unexpected_closes = 0
        self.task = None
        self.client.on("ReceiveMessage", self._on_receive)
        self.client.on("GetClientResult", self._on_get_client_result)
        self.client.on_open(self._on_open)
        self.client.on_close(self._on_close)
        self.client.on_error(self._on_error)
        self.client_results_answered = 0

    async def _on_receive(self, arguments):
        self.inbox.on_receive(arguments)

    async def _on_get_client_result(self, arguments):
        self.client_results_answered += 1
        return f"answer:{arguments[0]}"

    async def _on_open(self):
        self.opened.set()

    async def _on_close(self):
        if self.opened.is_set() and not self.closing:
            self.unexpected_closes += 1
            self.report.error(f"client {self.index}: connection closed unexpectedly")

    async def _on_error(self, message):
        # Per-invocation callbacks below see the same Completion; nothing to do here except
        # keeping pysignalr from raising "Error callback is not set".
        return None

    def start(self):
        self.task = asyncio.create_task(self.client.run())

    async def send(self, method, arguments):
        await self.client.send(method, arguments)

    async def invoke(self, method, arguments):
        fut = asyncio.get_running_loop().create_future()

        async def on_completion(message):
            if fut.done():
                return
            if message.error:
                fut.set_exception(HubError(message.error))
            else:
                fut.set_result(message.result)

        await self.client.send(method, arguments, on_invocation=on_completion)
        return await fut

    async def call(self, method, arguments, mode):
        if mode == "invoke":
            await self.invoke(method, arguments)
        else:
            await self.send(method, arguments)

    async def stream(self, method, arguments):
        loop = asyncio.get_running_loop()
        items = []
        done = loop.create_future()

        async def on_next(item):
            items.append(item)

        async def on_complete(message):
            if not done.done():
                done.set_result(message)

        async def on_error(message):
            if not done.done():
                done.set_exception(HubError(getattr(message, "error", None) or repr(message)))

        await self.client.stream(method, arguments, on_next=on_next, on_complete=on_complete, on_error=on_error)
        await done
        return items

    async def upload(self, method, items):
        """Client-to-server stream whose hub return value is read back.

        pysignalr's public client_stream() sends the Invocation *without* an invocationId, so
        the server never sends the Completion carrying the hub method's return value. This sends
        that Invocation itself (pysignalr's own InvocationClientStreamMessage, which has an
        invocation_id field) and registers the Completion callback in pysignalr's handler table.
        """
        fut = asyncio.get_running_loop().create_future()
        invocation_id = str(uuid.uuid4())

        async def on_completion(message):
            if fut.done():
                return
            if message.error:
                fut.set_exception(HubError(message.error))
            else:
                fut.set_result(message.result)

        stream = ClientStream(self.client._transport, method)  # noqa: SLF001
        self.client._invocation_handlers[invocation_id] = on_completion  # noqa: SLF001
        await self.client._transport.send(  # noqa: SLF001
            InvocationClientStreamMessage(stream_ids=[stream.invocation_id], target=method, arguments=[],
                                          invocation_id=invocation_id))
        for item in items:
            await stream.send(item)
        await stream.complete()
        return await fut

    async def close(self):
        self.closing = True
        ws = getattr(self.client._transport, "_ws", None)  # noqa: SLF001
        if ws is not None:
            try:
                await asyncio.wait_for(ws.close(), 3)
            except Exception:  # noqa: BLE001
                pass
        if self.task is not None:
            self.task.cancel()
            try:
                await asyncio.wait_for(self.task, 3)
            except BaseException:  # noqa: BLE001
                pass


async def wait_until(predicate, deadline, step=0.02):
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(step)
    return True


async def run(args, report, peers, deadline, diag):
    n, m = args.clients, args.messages
    t0 = time.monotonic()
    for p in peers:
        p.start()

    async def opened_or_failed(p):
        waiter = asyncio.create_task(p.opened.wait())
        done, _ = await asyncio.wait({waiter, p.task}, timeout=max(0.0, deadline - time.monotonic()),
                                     return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if p.opened.is_set():
            return True
        if p.task in done and p.task.exception() is not None:
            report.error(f"client {p.index}: connect failed: {p.task.exception()!r}")
        else:
            report.error(f"client {p.index}: not connected before the deadline")
        return False

    results = await asyncio.gather(*(opened_or_failed(p) for p in peers))
    diag["connect_s"] = round(time.monotonic() - t0, 3)
    if not all(results):
        diag["connected"] = sum(results)
        report.expected = common.planned_expected(args)
        report.missing = report.expected
        return

    t1 = time.monotonic()
    scenario = args.scenario
    if scenario == "broadcast":
        ids = [[common.message_id(report, i, j) for j in range(m)] for i in range(n)]
        all_ids = {mid for row in ids for mid in row}
        report.plan_settle([p.inbox for p in peers], [all_ids] * n)

        async def sender(p):
            for mid in ids[p.index]:
                try:
                    await p.call("SendMessage", [p.user, mid], args.call)
                    report.sent += 1
                except Exception as exc:  # noqa: BLE001
                    report.error(f"client {p.index}: SendMessage failed: {exc!r}")

        await asyncio.gather(*(sender(p) for p in peers))
        await wait_until(lambda: all(p.inbox.count_of(all_ids) == len(all_ids) for p in peers), deadline)
        report.settle()

    elif scenario == "echo":
        report.expected = n * m

        async def echoer(p):
            for j in range(m):
                text = common.message_id(report, p.index, j, "echo")
                report.sent += 1
                try:
                    got = await p.invoke("Echo", [text])
                except Exception as exc:  # noqa: BLE001
                    report.error(f"client {p.index}: Echo failed: {exc!r}")
                    continue
                if got == text:
                    report.received += 1
                else:
                    report.error(f"client {p.index}: Echo returned {got!r}, expected {text!r}")

        await asyncio.gather(*(echoer(p) for p in peers))
        report.missing = report.expected - report.received

    elif scenario == "stream":
        report.expected = n * m

        async def streamer(p):
            report.sent += 1
            try:
                items = await p.stream("Counter", [m, common.STREAM_DELAY_MS])
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: stream failed: {exc!r}")
                return
            check_stream(report, p.index, items, m)

        await asyncio.gather(*(streamer(p) for p in peers))

    elif scenario == "clientresult":
        report.expected = n * m

        async def asker(p):
            for j in range(m):
                q = common.message_id(report, p.index, j, "q")
                report.sent += 1
                try:
                    got = await p.invoke("AskClient", [q])
                except Exception as exc:  # noqa: BLE001
                    report.error(f"client {p.index}: AskClient failed: {exc!r}")
                    continue
                if got == f"answer:{q}":
                    report.received += 1
                else:
                    report.error(f"client {p.index}: AskClient returned {got!r}")

        await asyncio.gather(*(asker(p) for p in peers))
        report.missing = report.expected - report.received
        diag["client_results_answered"] = sum(p.client_results_answered for p in peers)

    elif scenario == "upload":
        report.expected = n * m
        diag["workaround"] = ("pysignalr's client_stream() sends no invocationId, so Upload's return value "
                              "is never sent back; the driver sends the stream Invocation itself with an id")

        async def uploader(p):
            try:
                count = await p.upload("Upload", list(range(m)))
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: Upload failed: {exc!r}")
                return
            finally:
                report.sent += m
            check_upload(report, p.index, count, m)

        await asyncio.gather(*(uploader(p) for p in peers))

    elif scenario == "groups":
        members = [p for p in peers if p.index % 2 == 0]
        diag["members"] = len(members)
        for p in members:
            try:
                await p.invoke("JoinGroup", [common.GROUP])
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: JoinGroup failed: {exc!r}")
        ids = [[common.message_id(report, i, j, "g") for j in range(m)] for i in range(n)]
        group_ids = {mid for row in ids for mid in row}
        after_leave = common.message_id(report, 0, 0, "afterleave")
        marker = common.message_id(report, 0, 0, "marker")
        report.plan_settle([p.inbox for p in peers],
                           [(group_ids | {marker}) if p.index % 2 == 0 else {marker} for p in peers])

        async def sender(p):
            for mid in ids[p.index]:
                try:
                    await p.call("SendToGroup", [common.GROUP, p.user, mid], args.call)
                    report.sent += 1
                except Exception as exc:  # noqa: BLE001
                    report.error(f"client {p.index}: SendToGroup failed: {exc!r}")

        await asyncio.gather(*(sender(p) for p in peers))
        await wait_until(lambda: all(p.inbox.count_of(group_ids) == len(group_ids) for p in members), deadline)
        # Leave, then a group message nobody may get, then a broadcast everybody must get.
        for p in members:
            try:
                await p.invoke("LeaveGroup", [common.GROUP])
            except Exception as exc:  # noqa: BLE001
                report.error(f"client {p.index}: LeaveGroup failed: {exc!r}")
        try:
            await peers[0].invoke("SendToGroup", [common.GROUP, peers[0].user, after_leave])
            await peers[0].invoke("SendMessage", [peers[0].user, marker])
        except Exception as exc:  # noqa: BLE001
            report.error(f"client 0: post-leave sends failed: {exc!r}")
        await wait_until(lambda: all(p.inbox.count_of({marker}) == 1 for p in peers), deadline)
        report.settle()

    diag["exchange_s"] = round(time.monotonic() - t1, 3)


def check_stream(report, index, items, m):
    expected = list(range(m))
    got = set()
    for it in items:
        if isinstance(it, int) and 0 <= it < m and it not in got:
            got.add(it)
        elif it in got:
            report.duplicates += 1
    report.received += len(got)
    report.missing += m - len(got)
    if items != expected:
        report.error(f"client {index}: stream items {items[:20]!r}... not 0..{m - 1} in order")


def check_upload(report, index, count, m):
    if count == m:
        report.received += m
    else:
        report.error(f"client {index}: Upload returned {count!r}, expected {m}")
        if isinstance(count, int) and 0 <= count <= m:
            report.received += count
            report.missing += m - count


async def main_async(args):
    report = common.Report(LIBRARY, args)
    if args.transport != "websockets":
        return report.unsupported(f"pysignalr 1.3.3 implements only the WebSockets transport, not {args.transport}")
    t_start = time.monotonic()
    close_reserve = min(5.0, args.timeout / 10)
    deadline = t_start + args.timeout - close_reserve
    peers = [Peer(i, args, report) for i in range(args.clients)]
    diag = {}
    timed_out = False
    try:
        await asyncio.wait_for(run(args, report, peers, deadline, diag),
                               max(0.1, deadline - time.monotonic() + 0.5))
    except (asyncio.TimeoutError, TimeoutError):
        timed_out = True
        report.error("timed out")
    if time.monotonic() >= deadline:
        timed_out = True
    # Close within what is left of --timeout (at least 0.5 s); a flooded connection may not finish.
    closers = [asyncio.create_task(p.close()) for p in peers]
    _, stuck = await asyncio.wait(closers, timeout=max(0.5, t_start + args.timeout - time.monotonic()))
    if args.scenario in ("echo", "clientresult", "upload", "stream"):
        report.missing = report.expected - report.received
    code = report.emit(timed_out=timed_out, unexpected_closes=sum(p.unexpected_closes for p in peers),
                       close_stuck=len(stuck), seconds=round(time.monotonic() - t_start, 3), **diag)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # do not let asyncio.run() wait for stuck closing handshakes


def main():
    args = common.parse_args(LIBRARY)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.verbose else logging.CRITICAL)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
