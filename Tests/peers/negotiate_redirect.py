#!/usr/bin/env python3
"""A negotiate endpoint that redirects (Azure SignalR Service style, signalr-protocol.md §1).

POST /first/negotiate  -> {"url": "http://127.0.0.1:<own port>/second", "accessToken": "token-two"}
POST /second/negotiate -> {"url": <--final>, "accessToken": "token-three"}
POST /loop/negotiate   -> redirects to itself forever (the client must stop after 100)
POST /azure/negotiate  -> {"url": <--azure>, "accessToken": "azure-token-never-in-results"}: a
                          hub elsewhere by name, as Azure SignalR Service answers
With --cert and --key the server speaks TLS (https).
Every negotiate's Authorization header is recorded; on SIGTERM the server prints one JSON line
{"authorizations": {"/first": [...], "/second": [...]}, "loop_requests": N} and exits 0.
stdout first line: "LISTENING <port>". Loopback only, bounded by --max-seconds.
"""
import argparse
import json
import signal
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

seen = {"/first": [], "/second": [], "/azure": []}
loop_requests = 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--final", required=True, help="hub base URL to redirect to last (loopback)")
    p.add_argument("--azure", help="hub URL /azure/negotiate redirects to")
    p.add_argument("--cert", help="PEM certificate: serve https")
    p.add_argument("--key", help="PEM private key of --cert")
    p.add_argument("--max-seconds", type=float, default=120)
    args = p.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            global loop_requests
            path = self.path.split("?")[0]
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            port = self.server.server_address[1]
            if path == "/first/negotiate":
                seen["/first"].append(self.headers.get("Authorization"))
                body = {"url": f"http://127.0.0.1:{port}/second", "accessToken": "token-two"}
            elif path == "/second/negotiate":
                seen["/second"].append(self.headers.get("Authorization"))
                body = {"url": args.final, "accessToken": "token-three"}
            elif path == "/azure/negotiate" and args.azure:
                seen["/azure"].append(self.headers.get("Authorization"))
                body = {"url": args.azure, "accessToken": "azure-token-never-in-results"}
            elif path == "/loop/negotiate":
                loop_requests += 1
                body = {"url": f"http://127.0.0.1:{port}/loop"}
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"LISTENING {server.server_address[1]}", flush=True)
    done = threading.Event()
    # A test runner may start us with these blocked (the mask survives exec).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    done.wait(args.max_seconds)
    server.shutdown()
    print(json.dumps({"authorizations": seen, "loop_requests": loop_requests}), flush=True)


main()
