"""A real headless Chromium driven over the DevTools protocol (one websocket, flat sessions): open
a file, run JavaScript in the page, click, type, take screenshots, save downloads. Debian's
``chromium`` (``.ci/run`` installs it); under ``CI=true`` a missing browser fails the test instead
of skipping it."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", "--force-color-profile=srgb", "--font-render-hinting=none"]
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 60.0


def chromium_path() -> str:
    """The browser, or a skip (a failure under CI) saying why there is none."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        reason = "no chromium on PATH (apt-get install chromium; .ci/run installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the browser tests cannot run under CI: {reason}", pytrace=False)
        pytest.skip(reason)
    return path


class Page:
    """One tab: ``js`` evaluates an expression (awaiting promises) and returns its JSON value."""

    def __init__(self, ws: Any, session: str) -> None:
        self._ws, self._session, self._ids = ws, session, itertools.count(1)
        self.events: list[dict[str, Any]] = []  # the protocol's events seen while waiting for replies
        self._downloads_from = 0  # the first event after the last ``allow_downloads``

    def requests(self) -> list[str]:
        """The URLs the page asked for since ``Network.enable`` (read the events waiting first)."""
        self.js("1")
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def script_errors(self) -> list[str]:
        """Uncaught exceptions in the page's scripts (``Runtime.enable`` is on for every page)."""
        self.js("1")
        return [str(e["params"]["exceptionDetails"].get("exception", {}).get("description")
                    or e["params"]["exceptionDetails"].get("text"))
                for e in self.events if e.get("method") == "Runtime.exceptionThrown"]

    def call(self, method: str, session: bool = True, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        self._ws.send(json.dumps(message))
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while time.monotonic() < deadline:
            reply = json.loads(self._ws.recv())
            if "method" in reply:
                self.events.append(reply)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise TimeoutError(method)

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: Path, *, width: int = 1400, height: int = 900, dark: bool = False,
             mobile: bool = False) -> None:
        """``mobile``: a phone's viewport (the page's viewport meta honoured) and touch input."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=mobile)
        self.call("Emulation.setTouchEmulationEnabled", enabled=mobile, maxTouchPoints=5 if mobile else 1)
        self.call("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme",
                                                           "value": "dark" if dark else "light"}])
        # the document open now is marked: "complete" counts only once a new document is there (the
        # same URL opened again would otherwise read the old one's readyState before it is replaced)
        self.js("window.__rgOldDocument = true")
        self.call("Page.navigate", url=path.resolve().as_uri())
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not self._loaded():
            if time.monotonic() > deadline:
                raise TimeoutError("the page did not load")
            time.sleep(0.05)

    def _loaded(self) -> bool:
        try:
            return bool(self.js("!window.__rgOldDocument && document.readyState === 'complete'"))
        except RuntimeError:  # the context went with the old document: still loading
            return False

    def click(self, selector: str) -> None:
        self.js(f"document.querySelector({json.dumps(selector)}).click()")

    def tap(self, x: float, y: float) -> None:
        """A finger's tap at a point of the viewport: touch start and end, then what the browser
        makes of them (pointer events, the click) — with ``open(mobile=True)``'s touch input."""
        self.call("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": x, "y": y}])
        self.call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])

    def tap_element(self, selector: str, index: int = 0) -> None:
        """A finger's tap at the middle of the ``index``-th element ``selector`` matches, scrolled
        into view first when it is not; the element must be what is at that point (not covered by
        a sticky header or a button bar)."""
        at = self.js(f"""(() => {{
          const el = document.querySelectorAll({json.dumps(selector)})[{index}];
          let r = el.getBoundingClientRect();
          if (r.top < 0 || r.bottom > window.innerHeight) {{
            el.scrollIntoView({{block: "center"}}); r = el.getBoundingClientRect(); }}
          const x = r.left + r.width / 2, y = r.top + r.height / 2;
          return {{x, y, hit: el.contains(document.elementFromPoint(x, y))}}; }})()""")
        assert at["hit"], f"{selector}[{index}] is covered where a finger taps it"
        self.tap(at["x"], at["y"])

    def key(self, key: str, code: str, key_code: int, text: str = "") -> None:
        """A real key press (down and up) on the focused element."""
        self.call("Input.dispatchKeyEvent", type="keyDown", key=key, code=code, windowsVirtualKeyCode=key_code,
                  text=text, unmodifiedText=text)
        self.call("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=key_code)

    def type_text(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def screenshot(self, path: Path, *, full: bool = False, clip: dict[str, float] | None = None) -> None:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full or clip is not None}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
        elif full:
            size = self.js("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))

    def allow_downloads(self, folder: Path) -> None:
        """Downloads go to ``folder`` from now on; ``read_download`` waits for the browser to say one
        finished (its events are on, and counted from here)."""
        self._downloads_from = len(self.events)
        self.call("Browser.setDownloadBehavior", session=False, behavior="allow", downloadPath=str(folder),
                  eventsEnabled=True)

    def wait_for_event(self, matches: Callable[[dict[str, Any]], bool], *, since: int = 0) -> dict[str, Any]:
        """The first protocol event from ``since`` on that ``matches``, reading the socket until it
        comes: what the browser says happened, never a guess at how long it takes (the deadline is
        a safety net against a browser that never says it)."""
        deadline = time.monotonic() + CALL_TIMEOUT_S
        seen = since
        while True:
            for event in self.events[seen:]:
                if matches(event):
                    return event
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise TimeoutError("the browser did not send the event awaited")
            message = json.loads(self._ws.recv())
            if "method" in message:
                self.events.append(message)

    def downloaded(self, name: str) -> None:
        """Wait until the browser says the download of ``name`` (the first since ``allow_downloads``)
        completed — its ``Browser.downloadProgress`` event, sent once the file is written and renamed
        into place — instead of polling the folder for the name under a deadline past which a slow
        browser's missing file was read anyway."""
        began = self.wait_for_event(lambda e: e.get("method") == "Browser.downloadWillBegin"
                                    and e["params"].get("suggestedFilename") == name, since=self._downloads_from)
        guid = began["params"]["guid"]
        ended = self.wait_for_event(lambda e: e.get("method") == "Browser.downloadProgress"
                                    and e["params"].get("guid") == guid
                                    and e["params"].get("state") in ("completed", "canceled"),
                                    since=self._downloads_from)
        assert ended["params"]["state"] == "completed", f"the download of {name} was canceled"

    def press(self, key: str) -> None:
        """One key of ``KEYS`` pressed (down and up), with its text when it is a character."""
        code, number = KEYS[key]
        self.key(key, code, number, text=key if len(key) == 1 else "")


# The keys the labelling pages take: key → (code, key code).
KEYS = {**{str(d): (f"Digit{d}", 48 + d) for d in range(10)},
        "n": ("KeyN", 78), "r": ("KeyR", 82), "s": ("KeyS", 83), "d": ("KeyD", 68),
        "ArrowDown": ("ArrowDown", 40), "ArrowUp": ("ArrowUp", 38), "ArrowLeft": ("ArrowLeft", 37)}


def read_download(page: Page, folder: Path, name: str = "labels.jsonl") -> list[dict[str, Any]]:
    """The JSONL file the browser saved into ``folder``, read once the browser says the download
    completed (``Page.downloaded``), not when a file of that name appears."""
    page.downloaded(name)
    return [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines()]


@contextmanager
def browser() -> Iterator[Page]:
    """A fresh headless Chromium (its own profile folder) with one blank tab."""
    import websocket  # websocket-client

    exe = chromium_path()
    profile = Path(tempfile.mkdtemp(prefix="rg-chromium-"))
    proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (port_file.is_file() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start (exit {proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=10) as reply:
            endpoint = json.load(reply)["webSocketDebuggerUrl"]
        ws = websocket.create_connection(endpoint, timeout=CALL_TIMEOUT_S, suppress_origin=True)
        try:
            page = Page(ws, "")
            target = page.call("Target.createTarget", session=False, url="about:blank")["targetId"]
            page._session = page.call("Target.attachToTarget", session=False, targetId=target,
                                      flatten=True)["sessionId"]
            page.call("Page.enable")
            page.call("Runtime.enable")
            yield page
        finally:
            ws.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


# The geometry a reviewer sees, measured in the page: where "What changed" starts, the page's
# height, the tallest visible case row, card/case ids broken across lines (each id token of an
# ``.ids`` element, by the line boxes of its text range), and chart text that leaves its chart or
# overlaps other text of the same chart.
MEASURE_JS = r"""(() => {
  const top = el => el.getBoundingClientRect().top + window.scrollY;
  const wc = document.getElementById("what-changed");
  const rows = Array.from(document.querySelectorAll("#cases tbody tr")).filter(r => r.offsetParent !== null
    && !r.classList.contains("detail"));
  const broken = [];
  document.querySelectorAll(".ids").forEach(el => {
    if (el.offsetParent === null) return;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\S+/g; let m;
      while ((m = re.exec(node.data)) !== null) {
        const range = document.createRange();
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  });
  const outside = [], overlapping = [];
  document.querySelectorAll("svg.chart").forEach((svg, i) => {
    if (svg.getBoundingClientRect().width === 0) return;
    const box = svg.getBoundingClientRect();
    const texts = Array.from(svg.querySelectorAll("text")).map(t => [t.textContent, t.getBoundingClientRect()]);
    texts.forEach(([s, r]) => {
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
        outside.push(`chart ${i}: ${s}`);
    });
    for (let a = 0; a < texts.length; a++) for (let b = a + 1; b < texts.length; b++) {
      const [s, r] = texts[a], [u, q] = texts[b];
      const w = Math.min(r.right, q.right) - Math.max(r.left, q.left);
      const h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
      if (w > 1 && h > 1) overlapping.push(`chart ${i}: ${s} / ${u}`);
    }
  });
  return {what_changed_top: wc ? Math.round(top(wc)) : null,
          page_height: document.documentElement.scrollHeight,
          rows: rows.length,
          max_row_height: rows.length ? Math.max(...rows.map(r => r.getBoundingClientRect().height)) : 0,
          rows_over_120: rows.filter(r => r.getBoundingClientRect().height > 120).length,
          broken_ids: broken, chart_text_outside: outside, chart_text_overlapping: overlapping};
})()"""


def measure(page: Page) -> dict[str, Any]:
    return page.js(MEASURE_JS)
