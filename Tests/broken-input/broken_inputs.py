#!/usr/bin/env python3
"""Throws generated broken scenarios and broken command lines at `stampede validate` and `stampede run`.

Every one must exit 2 within 5 s, with a message on stderr that names the field (or the flag), and
none may crash (a Swift runtime trap, a signal) or hang. Standard library only.

    Tests/broken-input/broken_inputs.py --stampede .build/debug/stampede [--jobs 4] [--verbose]

Prints one line per failure, then "broken inputs: N passed, N failed" and exits 1 on any failure.
Every scenario targets the embedded reference server or a loopback address: should a broken input
slip through validation, the run it starts stays on this machine and is cut off at 5 s.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time

TIME_LIMIT = 5.0
CRASH_SIGNS = ("Fatal error", "Illegal instruction", "Segmentation fault", "Stack dump", "Crash", "💣", "Backtrace")

CHAT = {"target": "embedded", "clients": "10", "duration": "2s", "drain": "0s"}
HUB = {"target": "embedded", "workload": "hub", "clients": "4", "duration": "2s", "drain": "0s",
       "hub": "{transports: [websockets], method: Echo, arguments: ['{stamp}']}"}
REST = {"target": "embedded", "workload": "rest", "clients": "4", "duration": "2s", "drain": "0s",
        "rest": "{interval: 1s, resources: [/items]}"}

# (base, field to set (dotted: section.key inside a flow mapping is written whole), value, text the message must contain)
CASES = []


def case(base, field, value, expect=None):
    CASES.append((base, field, value, expect or field))


for v in ["0", "-1", "1e-10", "2000000", "abc", ".nan", "[]", "1.5", "{a: 1}", "''"]:
    case(CHAT, "clients", v)
for v in ["0", "1e-10", "1.0e-300", ".nan", ".inf", "-5", "2e6", "fast", "[1]"]:
    case(CHAT, "connect_rate", v)
for v in ["0", "-1s", "1.0e-10", ".nan", ".inf", "1.0e300", "10ns", "200h", "''", "0.0000001s"]:
    case(CHAT, "duration", v)
for v in ["1.0e-10", "1.0e-300", "-1", ".nan", ".inf", "1.0e8", "fast", "0.0001"]:
    case(CHAT, "message", "{rate: %s}" % v, "message.rate")
for v in ["1", "1.0e300", "-5", "100GiB", "big"]:
    case(CHAT, "message", "{size: %s}" % v, "message.size")
for v in ["-1", "1.0e-12", ".nan", "1e-7s"]:
    case(CHAT, "think_time", v)
for v in ["-1", ".nan", "1.0e-9"]:
    case(CHAT, "drain", v)
for v in ["0", "1.0e-10", ".inf"]:
    case(CHAT, "connect_timeout", v)
for v in ["1", "1.0e20", "-1"]:
    case(CHAT, "max_message_size", v)
for v in ["-1", "1.5", "abc"]:
    case(CHAT, "seed", v)
case(CHAT, "load_model", "half")
case(CHAT, "workload", "ftp")
case(CHAT, "target", "http://127.0.0.1:5000/hub")
case(CHAT, "target", "ws://10.1.2.03:80/chat")  # malformed: refused before any traffic
case(CHAT, "target", "ws://127.0.0.1:99999/chat")
case(CHAT, "source_addresses", "[198.51.100.7]")  # TEST-NET-2: not an address of this machine
case(CHAT, "source_addresses", "[127.0.0.1, 127.0.0.1]")
case(CHAT, "headers", "{Host: x}", "headers.Host")
case(CHAT, "heartbeat", "{ping_interval: 1.0e-9}", "heartbeat.ping_interval")
case(CHAT, "heartbeat", "{interval: .nan}", "heartbeat.interval")
case(CHAT, "heartbeat", "{timeout: -1}", "heartbeat.timeout")
case(CHAT, "reconnect", "{exponential: {initial: 1.0e-12}}", "reconnect.exponential.initial")
case(CHAT, "reconnect", "[-1s]", "reconnect[0]")
case(CHAT, "reconnect", "{exponential: {initial: 2s, max: 1s}}", "reconnect.exponential.max")
case(CHAT, "reconnect", "{exponential: {attempts: 0}}", "reconnect.exponential.attempts")
case(CHAT, "events", "[{at: 1.0e300, storm: {}}]", "events[0].at")
case(CHAT, "events", "[{at: 5s, storm: {}}]", "events[0].at")
case(CHAT, "events", "[{at: 1s, churn: {rate: 1.0e-10}}]", "events[0].churn.rate")
case(CHAT, "events", "[{at: 1s, storm: {fraction: 2}}]", "events[0].storm.fraction")
case(CHAT, "events", "[{at: 1s, storm: {mode: stall, for: 1.0e-12}}]", "events[0].storm.for")
case(CHAT, "events", "[{at: 1s, server: {fault: stall, for: 1.0e10}}]", "events[0].server.for")
case(CHAT, "events", "[{at: 1s, command: {run: 'true', timeout: .nan}}]", "events[0].command.timeout")
case(CHAT, "clinets", "5", "clients")
case(CHAT, "while_disconnected", "keep")
case(CHAT, "subprotocol", "'a b'")
case(CHAT, "name", "'../../etc'")

for v in ["1.0e-10", ".nan", "0", "-1"]:
    case(HUB, "hub", "{method: Echo, keep_alive: %s}" % v, "hub.keep_alive")
for v in ["1.0e-10", ".nan"]:
    case(HUB, "hub", "{method: Echo, server_timeout: %s}" % v, "hub.server_timeout")
case(HUB, "hub", "{method: Echo, handshake_timeout: 0}", "hub.handshake_timeout")
case(HUB, "hub", "{method: Echo, operation: upload, upload_items: -1}", "hub.upload_items")
case(HUB, "hub", "{method: Echo, transports: [carrier_pigeon]}", "hub.transports")
case(HUB, "hub", "{method: Echo, redirect_hosts: ['https://x.service.signalr.net']}", "hub.redirect_hosts[0]")
case(HUB, "hub", "{method: Echo, protocol: xml}", "hub.protocol")
case(HUB, "hub", "{method: ''}", "hub.method")
case(HUB, "hub", "{method: Echo, access_token: {env: STAMPEDE_NO_SUCH_VARIABLE}}", "hub.access_token.env")
case(HUB, "hub", "{method: Echo, access_token: {file: /nonexistent/token}}", "hub.access_token.file")
case(HUB, "hub", "{method: Echo, reconnect: {exponential: {initial: 1.0e-12}}}", "hub.reconnect.exponential.initial")
case(HUB, "message", "{rate: 1.0e-300}", "message.rate")
case(HUB, "target", "ws://127.0.0.1:5000/hub")

for v in ["1.0e-12", "10ns", ".nan", "0", "-1s", "0.0001"]:
    case(REST, "rest", "{interval: %s, resources: [/a]}" % v, "rest.interval")
for v in ["0", "1000"]:
    case(REST, "rest", "{pool: %s, resources: [/a]}" % v, "rest.pool")
case(REST, "rest", "{first_byte_timeout: 1.0e-10, resources: [/a]}", "rest.first_byte_timeout")
case(REST, "rest", "{response_timeout: -1, resources: [/a]}", "rest.response_timeout")
case(REST, "rest", "{max_response_size: 1, resources: [/a]}", "rest.max_response_size")
case(REST, "rest", "{redirects: 99, resources: [/a]}", "rest.redirects")
case(REST, "rest", "{token: {env: API_TOKEN_NOT_SET_HERE}, resources: [/a]}", "rest.token.env")
case(REST, "rest", "{resources: []}", "rest.resources")
case(REST, "rest", "{resources: [nopath]}", "rest.resources[0]")
case(REST, "rest", "{resources: [{path: /a, processors: [{status: [99], means: changed}]}]}", "rest.resources[0].processors[0].status[0]")
case(REST, "rest", "{resources: [{path: /a, processors: [{status: [200], means: changed, interval: 1.0e-12}]}]}", "rest.resources[0].processors[0].interval")
case(REST, "rest", "{resources: [/a], embedded: {change_rate: -1}}", "rest.embedded.change_rate")
case(REST, "rest", "{resources: [/a], embedded: {change_rate: .nan}}", "rest.embedded.change_rate")
case(REST, "rest", "{resources: [/a], embedded: {rate_limit: 0}}", "rest.embedded.rate_limit")
case(REST, "reconnect", "default")
case(REST, "heartbeat", "{interval: 1s}")

# Whole files that are broken as files: (name, text, expected)
FILES = [
    ("huge", "target: embedded\nclients: 1\nduration: 1s\nbulk:\n" + "  - 123456789\n" * 200_000, "1 MiB"),
    ("binary", "\x00\x01\x02target", "invalid YAML"),
    ("tabs", "target: embedded\nclients: 1\nduration: 1s\nmessage:\n\trate: 5\n", "tabs"),
    ("list", "- target: embedded\n", "expected a mapping"),
    ("two-docs", "target: embedded\nclients: 1\nduration: 1s\n---\nclients: 2\n", "second one"),
    ("dup", "target: embedded\nclients: 1\nclients: 2\nduration: 1s\n", "clients"),
    ("ramp", "target: embedded\nclients: 1000000\nconnect_rate: 0.001\nduration: 1s\n", "connect_rate"),
]

# (arguments after the scenario, text the message must contain); the scenario itself is valid.
FLAGS = [(["--clients", v], "--clients") for v in ["0", "-1", "abc", "1e-10", "2000000", "nan", ""]]
FLAGS += [(["--duration", v], "--duration") for v in ["nan", "0", "-5", "1e300", "1e-12", "10ns", "inf", "200h", "abc", ""]]
FLAGS += [(["--loops", v], "--loops") for v in ["0", "300", "abc", "-1", "1e3"]]
FLAGS += [(["--target", v], "--target") for v in ["ws://10.0.0.01/chat", "http://127.0.0.1:1/hub", "ftp://x", ""]]
FLAGS += [(["--results", "/proc/stampede-no"], "--results"), (["--results", "/dev/null/x"], "--results")]
FLAGS += [(["--bogus"], "--bogus"), (["--clients"], "--clients"), (["extra-positional"], "extra-positional")]
FLAGS += [(["--duration", "1"], "events[0].at")]  # the scenario has an event at 1.5 s: the override moves the end before it

# Other subcommands' flags: (full argument list, text the message must contain).
OTHER = [(["serve", "--port", v, "--max-seconds", "1"], "--port") for v in ["-1", "70000", "abc"]]
OTHER += [(["serve", "--max-seconds", v], "--max-seconds") for v in ["nan", "-1", "1e300"]]
OTHER += [(["serve", "--host", "198.51.100.7", "--max-seconds", "1"], "--host"), (["serve", "--rest", "--change-rate", "nan", "--max-seconds", "1"], "--change-rate"),
          (["serve", "--rest", "--body-size", "-1", "--max-seconds", "1"], "--body-size"), (["serve", "--hub", "--rest", "--max-seconds", "1"], "--rest"),
          (["serve", "--admin-port", "70000", "--max-seconds", "1"], "--admin-port"), (["autobahn", "--port", "0"], "--port"),
          (["validate"], "files")]


def render(base, field, value):
    fields = dict(base)
    fields[field] = value  # replaces the base's value, or adds the field after the others
    return "".join("%s: %s\n" % (k, v) for k, v in fields.items())


def run_one(stampede, argv, expect, label):
    start = time.monotonic()
    try:
        p = subprocess.run([stampede] + argv, capture_output=True, text=True, timeout=TIME_LIMIT, errors="replace",
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "%s: did not exit within %.0f s (a hang)" % (label, TIME_LIMIT)
    elapsed = time.monotonic() - start
    out = p.stderr + p.stdout
    if p.returncode < 0:
        return "%s: killed by signal %d: %s" % (label, -p.returncode, out[-400:])
    if any(sign in out for sign in CRASH_SIGNS):
        return "%s: crashed: %s" % (label, out[-400:])
    if p.returncode != 2:
        return "%s: exit %d, not 2: %s" % (label, p.returncode, out[-300:])
    if expect not in p.stderr:
        return "%s: the message does not name %r: %s" % (label, expect, p.stderr[-300:])
    if elapsed > TIME_LIMIT:
        return "%s: took %.1f s" % (label, elapsed)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stampede", required=True)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="stampede-broken-")
    results = os.path.join(work, "results")
    jobs = []
    for i, (base, field, value, expect) in enumerate(CASES):
        path = os.path.join(work, "case-%03d.yaml" % i)
        with open(path, "w") as f:
            f.write(render(base, field, value))
        for command in ("validate", "run"):
            extra = ["--results", results, "--quiet"] if command == "run" else []
            jobs.append(([command, path] + extra, expect, "%s case-%03d (%s: %s)" % (command, i, field, value)))
    for name, text, expect in FILES:
        path = os.path.join(work, "file-%s.yaml" % name)
        with open(path, "w") as f:
            f.write(text)
        for command in ("validate", "run"):
            jobs.append(([command, path], expect, "%s file %s" % (command, name)))
    valid = os.path.join(work, "valid.yaml")
    with open(valid, "w") as f:
        f.write(render(CHAT, "events", "[{at: 1.5s, storm: {fraction: 0.5}}]"))
    for argv, expect in FLAGS:
        jobs.append((["run", valid] + argv + ["--quiet"] + ([] if "--results" in argv else ["--results", results]), expect,
                     "run %s" % " ".join(repr(a) for a in argv)))
    for argv, expect in OTHER:
        jobs.append((argv, expect, " ".join(repr(a) for a in argv)))
    scenarios = len(CASES) + len(FILES)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda j: run_one(args.stampede, *j), jobs))
    failures = [o for o in outcomes if o]
    for f in failures:
        print("FAIL " + f)
    if args.verbose:
        for (argv, expect, label), o in zip(jobs, outcomes):
            if not o:
                print("ok   " + label)
    produced = os.path.exists(results) and os.listdir(results)
    if produced:
        print("FAIL a rejected input still wrote results: %s" % produced)
        failures.append("results")
    print("%d broken scenarios, %d broken command lines, %d runs of stampede" % (scenarios, len(FLAGS) + len(OTHER), len(jobs)))
    print("broken inputs: %d passed, %d failed" % (len(jobs) - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
