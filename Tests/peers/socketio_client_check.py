#!/usr/bin/env python3
"""Checks a Socket.IO server (Stampede's `serve --socketio`) with python-socketio's AsyncClient,
a client we did not write, over one transport choice:

    socketio_client_check.py --url http://127.0.0.1:PORT --transports polling|websocket|polling,websocket
                             [--token T] [--namespace /live] [--stay 0] [--insecure]

What it proves, each as one named check:
- connect: the main namespace and --namespace connect (with auth {"token": T} when given);
- transport: the transport in use at the end (websocket after an upgrade);
- echo: an event with an ack is acked with its own arguments, on both namespaces;
- join / say: `join` acks true; `say` to a room reaches every member (sender included) and no
  one else, acks true; `say` without a room reaches the whole namespace;
- binary: bytes survive an echo (BINARY_EVENT → BINARY_ACK) and a broadcast;
- refused: with a token, a CONNECT with a wrong one gets connect_error {"message": "not authorized"};
- alive: the connection is still up after --stay seconds (the server's pings were answered).

Prints one line `RESULT {json}` with every check's outcome and exits 0 only if all passed.
"""
import argparse
import asyncio
import json
import sys

import socketio


async def make_client(args, transports, token, received, name):
    sio = socketio.AsyncClient(reconnection=False, ssl_verify=not args.insecure)
    namespaces = ["/", args.namespace]
    for ns in namespaces:
        def on_said(*data, ns=ns):
            received.append((name, ns, data))
        sio.on("said", on_said, namespace=ns)
    auth = {"token": token} if token is not None else None
    await sio.connect(args.url, transports=transports, namespaces=namespaces, auth=auth,
                      socketio_path=args.path.strip("/"), wait_timeout=10)
    return sio


async def wait_for(predicate, timeout=5.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--path", default="/socket.io/")
    p.add_argument("--transports", default="polling,websocket")
    p.add_argument("--token")
    p.add_argument("--namespace", default="/live")
    p.add_argument("--stay", type=float, default=0)
    p.add_argument("--insecure", action="store_true", help="https: accept any certificate (a self-signed test server)")
    args = p.parse_args()
    transports = args.transports.split(",")
    checks = {}
    received = []

    a = await make_client(args, transports, args.token, received, "a")
    b = await make_client(args, transports, args.token, received, "b")
    c = await make_client(args, transports, args.token, received, "c")
    try:
        checks["connect"] = a.connected and b.connected and c.connected and set(a.namespaces) == {"/", args.namespace}
        # python-engineio upgrades during connect, before returning.
        want = "polling" if transports == ["polling"] else "websocket"
        checks["transport"] = a.transport() == want

        r1 = await a.call("echo", ("hi", {"n": 1}), timeout=5)
        r2 = await a.call("echo", "on-namespace", namespace=args.namespace, timeout=5)
        checks["echo"] = r1 == ["hi", {"n": 1}] or r1 == ("hi", {"n": 1})
        checks["echo_namespace"] = r2 == "on-namespace"

        j1 = await a.call("join", "room-1", timeout=5)
        j2 = await b.call("join", "room-1", timeout=5)
        checks["join"] = j1 is True and j2 is True

        ack = await a.call("say", {"room": "room-1", "text": "hello room"}, timeout=5)
        got = await wait_for(lambda: sum(1 for m in received if m[2] and m[2][0].get("text") == "hello room") >= 2)
        await asyncio.sleep(0.2)
        room_receivers = sorted(m[0] for m in received if m[2] and m[2][0].get("text") == "hello room")
        checks["say_room"] = ack is True and got and room_receivers == ["a", "b"]

        await c.emit("say", {"text": "hello all"}, namespace=args.namespace)
        got = await wait_for(lambda: sum(1 for m in received if m[2] and m[2][0].get("text") == "hello all") >= 3)
        everyone = sorted(m[0] for m in received if m[2] and m[2][0].get("text") == "hello all" and m[1] == args.namespace)
        checks["say_namespace"] = got and everyone == ["a", "b", "c"]

        blob = bytes(range(256)) * 3
        echoed = await a.call("echo", blob, timeout=5)
        checks["binary_echo"] = echoed == blob
        await b.emit("say", {"room": "room-1", "text": "binary", "blob": blob[:100]})
        got = await wait_for(lambda: sum(1 for m in received if m[2] and m[2][0].get("text") == "binary") >= 2)
        blobs = [m[2][0].get("blob") for m in received if m[2] and m[2][0].get("text") == "binary"]
        checks["binary_broadcast"] = got and blobs == [blob[:100]] * 2

        if args.token is not None:
            errors = []
            bad = socketio.AsyncClient(reconnection=False, ssl_verify=not args.insecure)
            bad.on("connect_error", lambda data: errors.append(data), namespace="/")
            try:
                await bad.connect(args.url, transports=transports, auth={"token": "wrong"},
                                  socketio_path=args.path.strip("/"), wait_timeout=5)
                checks["refused"] = False
            except socketio.exceptions.ConnectionError:
                checks["refused"] = errors == [{"message": "not authorized"}]
            finally:
                await bad.disconnect()

        if args.stay > 0:
            await asyncio.sleep(args.stay)
            r = await a.call("echo", "still here", timeout=5)
            checks["alive"] = a.connected and r == "still here"
    except Exception as e:  # a timeout or a protocol failure is a failed check, reported
        checks["exception"] = False
        checks["error"] = repr(e)
    finally:
        for s in (a, b, c):
            await s.disconnect()
    ok = all(v is True for k, v in checks.items() if k != "error")
    print("RESULT " + json.dumps(checks, sort_keys=True), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
