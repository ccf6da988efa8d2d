#!/usr/bin/env python3
"""browser.py — open a page in headless Chromium and report what a person would see.

Drives Debian's chromium through the DevTools protocol over a pipe (--remote-debugging-pipe:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so it needs no websocket
client, no port and nothing from npm. It collects every console error, uncaught exception,
failed load and CSP violation (Runtime.consoleAPICalled type error/assert,
Runtime.exceptionThrown, Log.entryAdded level error), every network request that is not for the
page itself or a data: URL, evaluates a JavaScript expression in the page, and saves a PNG
screenshot of the whole page (up to --max-height pixels).

USAGE: browser.py --page FILE.html [--eval EXPR] [--screenshot OUT.png] [--eval-after EXPR] [--width 1400]
                  [--max-height 9000] [--tile-height H] [--settle-ms 800] [--timeout 60]
Prints one JSON object: {"errors": [...], "requests": [...], "eval": <value of EXPR>,
"eval_after": <value of the --eval-after EXPR, run after the screenshot>}.
Exit status: 0 the page loaded (errors are for the caller to judge), 2 the browser failed.
"""
import argparse
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, exe, width, timeout):
        self.tmp = tempfile.mkdtemp(prefix="tet-chromium.")
        # pipe ends above 10, so that dup2 onto 3 and 4 in the child never meets one of them
        # (dup2 of an fd onto itself would keep its close-on-exec flag)
        fds = []
        for fd in os.pipe() + os.pipe():
            fds.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
            os.close(fd)
        to_chrome_r, self.to_chrome_w, self.from_chrome_r, from_chrome_w = fds

        def wire():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-dev-shm-usage", "--disable-extensions",
                "--hide-scrollbars", "--mute-audio", "--no-default-browser-check",
                f"--user-data-dir={self.tmp}", f"--window-size={width},900",
                "--remote-debugging-pipe", "about:blank"]
        self.log = open(os.path.join(self.tmp, "chromium.log"), "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log, preexec_fn=wire, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 1
        self.events = []
        self.deadline = time.monotonic() + timeout

    def _read_message(self):
        while b"\0" not in self.buf:
            if time.monotonic() > self.deadline:
                raise TimeoutError("timed out waiting for the browser")
            chunk = os.read(self.from_chrome_r, 1 << 16)
            if not chunk:
                raise EOFError("the browser closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None):
        mid = self.next_id
        self.next_id += 1
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome_w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read_message()
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, session=None):
        for i, m in enumerate(self.events):
            if m.get("method") == method and (session is None or m.get("sessionId") == session):
                del self.events[i]
                return m
        while True:
            m = self._read_message()
            if m.get("method") == method and (session is None or m.get("sessionId") == session):
                return m
            self.events.append(m)

    def drain(self, seconds):
        end = time.monotonic() + seconds
        os.set_blocking(self.from_chrome_r, False)
        try:
            while time.monotonic() < end:
                try:
                    chunk = os.read(self.from_chrome_r, 1 << 16)
                except BlockingIOError:
                    time.sleep(0.05)
                    continue
                if not chunk:
                    break
                self.buf += chunk
                while b"\0" in self.buf:
                    msg, self.buf = self.buf.split(b"\0", 1)
                    self.events.append(json.loads(msg))
        finally:
            os.set_blocking(self.from_chrome_r, True)

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--eval", default="null")
    ap.add_argument("--eval-after", default="null",
                    help="evaluated after the screenshot (interactions that change the page)")
    ap.add_argument("--screenshot")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--max-height", type=int, default=9000)
    ap.add_argument("--tile-height", type=int, default=0,
                    help="also save the screenshot in tiles OUT-1.png, OUT-2.png… of this height")
    ap.add_argument("--settle-ms", type=int, default=800)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    a = ap.parse_args()
    url = "file://" + os.path.abspath(a.page)
    b = Browser(a.chromium, a.width, a.timeout)
    out = {"errors": [], "requests": [], "eval": None}
    try:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for dom in ("Runtime", "Log", "Page", "Network"):
            b.send(dom + ".enable", session=s)
        b.send("Emulation.setDeviceMetricsOverride",
               {"width": a.width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=s)
        b.send("Page.navigate", {"url": url}, session=s)
        b.wait_event("Page.loadEventFired", session=s)
        b.drain(a.settle_ms / 1000)
        r = b.send("Runtime.evaluate", {"expression": a.eval, "returnByValue": True,
                                        "awaitPromise": True}, session=s)
        if "exceptionDetails" in r:
            out["errors"].append("eval: " + json.dumps(r["exceptionDetails"])[:2000])
        else:
            out["eval"] = r.get("result", {}).get("value")
        if a.screenshot:
            m = b.send("Page.getLayoutMetrics", session=s)
            size = m.get("cssContentSize") or m["contentSize"]
            h = min(int(size["height"]) + 1, a.max_height)
            shot = b.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": a.width, "height": h, "scale": 1}}, session=s)
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            for i, y in enumerate(range(0, h, a.tile_height or h + 1)):
                if not a.tile_height:
                    break
                tile = b.send("Page.captureScreenshot", {
                    "format": "png", "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": y, "width": a.width,
                             "height": min(a.tile_height, h - y), "scale": 1}}, session=s)
                with open(a.screenshot.replace(".png", f"-{i + 1}.png"), "wb") as f:
                    f.write(base64.b64decode(tile["data"]))
        r = b.send("Runtime.evaluate", {"expression": a.eval_after, "returnByValue": True,
                                        "awaitPromise": True}, session=s)
        if "exceptionDetails" in r:
            out["errors"].append("eval-after: " + json.dumps(r["exceptionDetails"])[:2000])
        else:
            out["eval_after"] = r.get("result", {}).get("value")
        b.drain(0.2)
        for m in b.events:
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out["errors"].append("exception: " + (d.get("exception", {}).get("description")
                                                      or d.get("text", "")))
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out["errors"].append("console." + p["type"] + ": " + " ".join(
                    str(x.get("value", x.get("description", ""))) for x in p.get("args", [])))
            elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out["errors"].append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}")
            elif meth == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if u != url and not u.startswith("data:"):
                    out["requests"].append(u)
            elif meth == "Network.loadingFailed":
                out["errors"].append("load failed: " + p.get("errorText", ""))
    except Exception as e:  # noqa: BLE001 — any failure of the browser is reported, exit 2
        print(json.dumps({"browser_error": f"{type(e).__name__}: {e}"}))
        b.close()
        return 2
    b.close()
    print(json.dumps(out))
    return 0


sys.exit(main())
