# SPDX-License-Identifier: GPL-3.0-or-later
"""Headless Debian chromium driven over the DevTools protocol (one websocket, flat sessions): open a file, evaluate
JavaScript in it, take a PNG screenshot, and collect every console error, uncaught exception and network request.

The network is closed here and the browser must not try it: no first-run, sync, component updates or background
networking, and a fresh profile in a directory of the caller's.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import websocket

CHROMIUM = os.environ.get("PINNED_IMAGES_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
]


class BrowserError(Exception):
    pass


class Browser:
    """``with Browser(profile_dir) as browser: page = browser.open(path)``."""

    def __init__(self, profile: Path, timeout: float = 60.0) -> None:
        self.profile = Path(profile)
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.ws: Any = None
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        if not shutil.which(CHROMIUM):
            raise BrowserError(f"{CHROMIUM} is missing: hack/setup.sh installs Debian's chromium")
        self.profile.mkdir(parents=True, exist_ok=True)
        # Chromium writes crash reports and caches under HOME and the XDG directories whatever --user-data-dir
        # says: all of them go into the profile.
        home = self.profile / "home"
        env = dict(
            os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache")
        )
        log = open(self.profile / "chromium.log", "wb")  # noqa: SIM115 - the browser's lifetime
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--crash-dumps-dir={self.profile / 'crashes'}",
                "about:blank",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        try:
            self._connect()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _connect(self) -> None:
        assert self.proc is not None
        # Chromium picks a free port and writes it, with the browser's websocket path, into the profile.
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise BrowserError("chromium did not start: " + (self.profile / "chromium.log").read_text()[-2000:])
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}{path}", timeout=self.timeout, suppress_origin=True
        )

    def __exit__(self, *exc: object) -> None:
        if self.ws is not None:
            self.ws.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept in ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        """The first ``method`` event of ``session``; BrowserError when none came within ``timeout`` seconds (other
        events keep arriving meanwhile, so each receive's own timeout is not enough)."""
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        deadline = time.monotonic() + self.timeout
        try:
            while time.monotonic() < deadline:
                self.ws.settimeout(max(deadline - time.monotonic(), 0.01))
                event = json.loads(self.ws.recv())
                self.events.append(event)
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
        except websocket.WebSocketTimeoutException:
            pass
        finally:
            self.ws.settimeout(self.timeout)
        raise BrowserError(f"no {method} event within {self.timeout:g} s")

    def open(self, path: Path, width: int = 800, height: int = 1000, media: str = "screen") -> Page:
        """A new tab showing ``path``, loaded (its load event fired), at ``width`` x ``height`` CSS pixels."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session)
        self.call(
            "Emulation.setDeviceMetricsOverride", session, width=width, height=height, deviceScaleFactor=1, mobile=False
        )
        self.call("Emulation.setEmulatedMedia", session, media=media)
        self.call("Page.navigate", session, url=Path(path).resolve().as_uri())
        self.wait_event("Page.loadEventFired", session)
        return Page(self, session)


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page."""
        result = self.browser.call("Runtime.evaluate", self.session, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        """A PNG of the whole page (beyond the viewport)."""
        data = self.browser.call("Page.captureScreenshot", self.session, format="png", captureBeyondViewport=True)
        return base64.b64decode(data["data"])

    def events(self) -> list[dict[str, Any]]:
        return [event for event in self.browser.events if event.get("sessionId") == self.session]

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (a refused load or policy violation)."""
        found = []
        for event in self.events():
            method, params = event.get("method"), event.get("params") or {}
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args")))
            elif method == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    def requests(self) -> list[str]:
        """The URL of every request the page made (its own file included)."""
        return [
            event["params"]["request"]["url"]
            for event in self.events()
            if event.get("method") == "Network.requestWillBeSent"
        ]
