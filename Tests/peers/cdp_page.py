"""Loads one local page in headless Chromium and reports what it did, over the Chrome DevTools
Protocol (https://chromedevtools.github.io/devtools-protocol/).

    python cdp_page.py URL [--screenshot FILE.png] [--width 1200] [--max-height 16000] [--timeout 25]

Starts `chromium --headless --no-sandbox --remote-debugging-port=0` with a throw-away profile,
reads the port from DevToolsActivePort, attaches to a new tab, enables Runtime, Log, Network and
Page, navigates to URL and waits for the load event. Prints one JSON object:

    {"console": [...], "exceptions": [...], "log": [...], "requests": [...], "dom": "<html>…"}

`requests` lists every request but the page's own URL; `dom` is the document's outerHTML (taken
with DOM.getOuterHTML, no script run in the page). With --screenshot, a full-page PNG. Chromium
is killed (its whole process group) on every path, SIGTERM included; exit 1 on failure.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from websockets.sync.client import connect


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--screenshot")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--max-height", type=int, default=16000, help="cut the full-page screenshot at this height")
    ap.add_argument("--timeout", type=float, default=25)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = ap.parse_args()
    # Local files only: the page under test must not be fetched from anywhere.
    if not args.url.startswith("file:///"):
        ap.error("URL must be a file:/// URL")
    deadline = time.monotonic() + args.timeout

    # The test runner stops us with SIGTERM on its timeout: unwind so `finally` kills Chromium.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    profile = tempfile.mkdtemp(prefix="stampede-chromium-")
    proc = None
    try:
        proc = subprocess.Popen(
            [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        port_file = os.path.join(profile, "DevToolsActivePort")
        lines = []
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {proc.returncode} before DevTools was up")
            if os.path.exists(port_file):
                lines = open(port_file).read().split("\n")
                if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("no DevToolsActivePort within the timeout")
        result = drive(f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}", args, deadline)
        print(json.dumps(result))
    finally:
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 3)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        shutil.rmtree(profile, ignore_errors=True)


def drive(endpoint, args, deadline):
    events = {"console": [], "exceptions": [], "log": [], "requests": []}
    with connect(endpoint, max_size=None, open_timeout=10) as ws:
        counter = [0]

        def note(msg):
            method, p = msg.get("method"), msg.get("params", {})
            if method == "Runtime.consoleAPICalled":
                events["console"].append({"type": p.get("type"), "args": [a.get("value", a.get("description")) for a in p.get("args", [])]})
            elif method == "Runtime.exceptionThrown":
                events["exceptions"].append(p.get("exceptionDetails", {}).get("text"))
            elif method == "Log.entryAdded":
                e = p.get("entry", {})
                events["log"].append({"level": e.get("level"), "source": e.get("source"), "text": e.get("text"), "url": e.get("url")})
            elif method == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url")
                if url != args.url:
                    events["requests"].append(url)
            return method

        def call(method, params=None, session=None):
            counter[0] += 1
            msg = {"id": counter[0], "method": method, "params": params or {}}
            if session:
                msg["sessionId"] = session
            ws.send(json.dumps(msg))
            while True:
                reply = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
                if reply.get("id") == counter[0]:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
                note(reply)

        target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            call(f"{domain}.enable", session=session)
        call("Emulation.setDeviceMetricsOverride", {"width": args.width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
        call("Page.navigate", {"url": args.url}, session)
        loaded = False
        while not loaded:
            loaded = note(json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))) == "Page.loadEventFired"
        # Late events (a blocked load would be reported right after the load event).
        settle = time.monotonic() + 0.5
        while time.monotonic() < settle:
            try:
                note(json.loads(ws.recv(timeout=max(0.05, settle - time.monotonic()))))
            except TimeoutError:
                break
        root = call("DOM.getDocument", {"depth": 0}, session)["root"]["nodeId"]
        events["dom"] = call("DOM.getOuterHTML", {"nodeId": root}, session)["outerHTML"]
        if args.screenshot:
            size = call("Page.getLayoutMetrics", session=session)["cssContentSize"]
            height = max(100, min(args.max_height, int(size["height"]) + 1))
            call("Emulation.setDeviceMetricsOverride", {"width": args.width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
            clip = {"x": 0, "y": 0, "width": args.width, "height": height, "scale": 1}
            shot = call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}, session)["data"]
            import base64
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(shot))
    return events


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line for the test's message
        print(f"cdp_page: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
