# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/support/browser.py itself: chromium writes nothing outside the profile, a failed connection leaves no
browser running, and waiting for an event that never comes ends."""

from __future__ import annotations

import pytest

from support import browser as browser_support
from support.browser import Browser, BrowserError


def test_chromium_writes_only_into_the_profile(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(home / name.lower()) if name != "HOME" else str(home))
    page_file = tmp_path / "page.html"
    page_file.write_text("<!DOCTYPE html><title>t</title><p>hello</p>")
    with Browser(tmp_path / "profile", timeout=60) as browser:
        assert browser.open(page_file).evaluate("document.querySelector('p').textContent") == "hello"
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []


def test_a_failed_connection_stops_the_browser(tmp_path, monkeypatch):
    started = []

    def refuse(*_args, **_kwargs):
        started.append(browser.proc)
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(browser_support.websocket, "create_connection", refuse)
    browser = Browser(tmp_path / "profile", timeout=60)
    with pytest.raises(ConnectionRefusedError):
        browser.__enter__()
    assert started and started[0].poll() is not None


def test_an_event_that_never_comes_ends_the_wait(tmp_path):
    with Browser(tmp_path / "profile", timeout=2) as browser:
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        with pytest.raises(BrowserError, match="no Page.neverFired event within 2 s"):
            browser.wait_event("Page.neverFired", session)
        # The connection is still usable after the wait gave up.
        assert browser.call("Browser.getVersion")["product"].startswith(("HeadlessChrome", "Chrome"))
