# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pytest set-up: test support lives in tests/support (the lab, registries, PKI, fake API server), small
helpers in tests/fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "tests",):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

pytest_plugins = ["support.apiserver.fixtures", "fixtures.bad_files", "fixtures.wheels"]


def pytest_sessionfinish(session, exitstatus):
    """In CI (PINNED_IMAGES_FORBID_SKIPS=1, set by hack/test.sh) a skipped test fails the run: CI has every file."""
    if os.environ.get("PINNED_IMAGES_FORBID_SKIPS") != "1" or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped:
        reporter.ensure_newline()
        reporter.write_line(f"FAILED: {skipped} test(s) skipped; in CI every test must run (see the skip reasons above)",
                            red=True)
        session.exitstatus = 1
