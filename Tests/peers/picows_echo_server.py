#!/usr/bin/env python3
"""A picows WebSocket echo server on 127.0.0.1: every text (and binary) message goes back to its
sender as it came, on any path. picows parses and builds frames in C, so it is the fastest
third-party server here (see shared/reference/peers.md): the common target that
Benchmarks/flow-vs-floor.sh runs the C floor client, the chat workload and the flow against.

Venv: Tests/peers/ensure-venv.sh picows. stdout: "LISTENING <port>" once it accepts (port 0 picks
a free one); bounded by --max-seconds; exits 0 on SIGTERM or SIGINT, printing the echo count.
"""
import argparse
import asyncio
import signal

from picows import WSFrame, WSListener, WSMsgType, WSTransport, WSUpgradeRequest, ws_create_server

echoed = 0


class Echo(WSListener):
    def on_ws_frame(self, transport: WSTransport, frame: WSFrame):
        global echoed
        if frame.msg_type in (WSMsgType.TEXT, WSMsgType.BINARY):
            # Clients here send whole messages in one frame; echo it with its fin bit.
            transport.send(frame.msg_type, frame.get_payload_as_memoryview(), frame.fin)
            echoed += 1
        elif frame.msg_type == WSMsgType.CONTINUATION:
            transport.send(frame.msg_type, frame.get_payload_as_memoryview(), frame.fin)
        elif frame.msg_type == WSMsgType.CLOSE:
            transport.send_close(frame.get_close_code(), frame.get_close_message())
            transport.disconnect()
        # PING is answered by picows itself (enable_auto_pong, on by default).


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=300)
    args = p.parse_args()
    server = await ws_create_server(lambda request: Echo(), "127.0.0.1", args.port,
                                    max_frame_size=1 << 20)
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    try:
        # Bounded: a forgotten server goes away by itself.
        await asyncio.wait_for(stop.wait(), args.max_seconds)
    except asyncio.TimeoutError:
        pass
    server.close()
    print(f"ECHOED {echoed}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
