#!/usr/bin/env python3
"""A WebSocket server that completes the upgrade and then never sends anything, not even
pongs: a dead server as a client sees it (for dead-server detection tests). Standard library
only. stdout: "LISTENING <port>"; bounded by --max-seconds; exits 0 on SIGTERM.
"""
import argparse
import base64
import hashlib
import signal
import socket
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def serve(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk
    key = b""
    for line in data.split(b"\r\n"):
        if line.lower().startswith(b"sec-websocket-key:"):
            key = line.split(b":", 1)[1].strip()
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    while conn.recv(65536):  # read and ignore everything
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-seconds", type=float, default=60)
    args = p.parse_args()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    print(f"LISTENING {s.getsockname()[1]}", flush=True)

    def accept_loop():
        while True:
            conn, _ = s.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    done.wait(args.max_seconds)


main()
