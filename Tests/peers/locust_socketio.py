"""A Locust file with Locust's own Socket.IO user (`locust.contrib.socketio.SocketIOUser`, python-socketio's
threaded `Client` under gevent) for Benchmarks/socketio-vs-python.sh: the Socket.IO load generator
we compare Stampede with. Not a test peer.

Each user connects to SIO_URL's SIO_NAMESPACE over SIO_TRANSPORTS, joins room-{n % SIO_ROOMS} with ack,
then `call("say", {"room", "text"})` (an emit with ack, timed by Locust as request type "WSC")
once every SIO_PACING seconds (`constant_pacing`: SIO_PACING = users / total rate). SIO_PACING=0:
the user connects and stays idle (memory per idle connection). Run headless, e.g.

  SIO_URL=http://127.0.0.1:PORT SIO_PACING=2 SIO_REPORT=out.json locust -f Tests/peers/locust_socketio.py \
      --headless -u 200 -r 100 -t 20s --only-summary --skip-log

SIO_REPORT gets one JSON object, measured by this process on itself like socketio_clients.py:
rss_kib {before: at init, no user; connected: when every user is spawned, plus 2 s for the last
connects; end}, cpu_s {emit: user+sys from then to the test's stop}, acks / failures of `say`
calls in that window, ack_ms p50/p99 (Locust's response times: from the call, not corrected).
"""

import itertools
import json
import os

import gevent
from locust import constant, constant_pacing, events, task
from locust.contrib.socketio import SocketIOUser

URL = os.environ.get("SIO_URL", "http://127.0.0.1:3000")
NAMESPACE = os.environ.get("SIO_NAMESPACE", "/")
TRANSPORTS = [t for t in os.environ.get("SIO_TRANSPORTS", "websocket").split(",") if t]
PACING = float(os.environ.get("SIO_PACING", "1"))
ROOMS = max(1, int(os.environ.get("SIO_ROOMS", "10")))
REPORT = os.environ.get("SIO_REPORT")
numbers = itertools.count()
window = {"open": False, "acks": 0, "failures": 0, "ms": []}
marks = {}


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system


@events.init.add_listener
def on_init(environment, **_kw):
    marks["rss_before"] = rss_kib()


@events.spawning_complete.add_listener
def on_spawned(user_count, **_kw):
    marks["users"] = user_count
    def open_window():
        gevent.sleep(2)  # on_start (connect + join) of the last users spawned
        marks["rss_connected"] = rss_kib()
        marks["cpu0"] = cpu_s()
        window["open"] = True
    gevent.spawn(open_window)


@events.request.add_listener
def on_request(request_type, name, response_time, exception, **_kw):
    if request_type == "WSC" and name == "say" and window["open"]:
        if exception is None:
            window["acks"] += 1
            window["ms"].append(response_time)
        else:
            window["failures"] += 1


@events.test_stop.add_listener
def on_stop(environment, **_kw):
    if not REPORT or "cpu0" not in marks:
        return
    window["open"] = False
    ms = sorted(window["ms"])
    pct = lambda p: round(ms[min(len(ms) - 1, int(p / 100 * len(ms)))], 3) if ms else None
    report = {"users": marks.get("users"), "connected": marks.get("connected", 0),
              "acks": window["acks"], "failures": window["failures"],
              "ack_ms": {"p50": pct(50), "p99": pct(99)},
              "rss_kib": {"before": marks["rss_before"], "connected": marks["rss_connected"], "end": rss_kib()},
              "cpu_s": {"emit": round(cpu_s() - marks["cpu0"], 3)}}
    with open(REPORT, "w") as f:
        json.dump(report, f)


class ChatUser(SocketIOUser):
    # Reconnection off: a dropped connection shows up as failed calls, as in the other clients.
    options = {"reconnection": False}
    wait_time = constant_pacing(PACING) if PACING > 0 else constant(3600)

    def on_start(self):
        self.n = next(numbers)
        self.seq = 0
        self.room = f"room-{self.n % ROOMS}"
        self.sio.connect(URL, namespaces=[NAMESPACE], transports=TRANSPORTS, wait_timeout=10)
        self.sio.call("join", self.room, namespace=NAMESPACE, timeout=10)
        marks["connected"] = marks.get("connected", 0) + 1

    @task
    def say(self):
        if PACING <= 0:
            gevent.sleep(3600)
            return
        self.sio.call("say", {"room": self.room, "text": f"{self.n}:{self.seq}"}, namespace=NAMESPACE, timeout=10)
        self.seq += 1

    def on_stop(self):
        self.sio.disconnect()
