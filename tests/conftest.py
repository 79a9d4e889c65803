# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pytest set-up: test support lives in tests/support (the lab, registries, PKI, fake API server), small
helpers in tests/fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "tests",):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from ansible_collections.pinned.images.plugins.module_utils._common.node_state import ENV_STATE_DIR  # noqa: E402

pytest_plugins = ["support.apiserver.fixtures", "fixtures.bad_files", "fixtures.wheels"]


def _probe_node_deps_without_the_machines_private_directory() -> None:
    """_node_python.deps probes once, at import, and puts an intact PINNED_IMAGES_PYTHON_DIR (default
    /var/lib/pinned-images/python) first on sys.path: the tests' process imports it with a directory that does not
    exist, so a controller the role once provisioned does not change what the tests import. Subprocesses (ansible
    runs) get the environment as it was."""
    name = "PINNED_IMAGES_PYTHON_DIR"
    before = os.environ.get(name)
    os.environ[name] = str(ROOT / ".build" / "no-private-python")
    try:
        from ansible_collections.pinned.images.plugins.module_utils._node_python import deps  # noqa: F401
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


_probe_node_deps_without_the_machines_private_directory()


@pytest.fixture(autouse=True)
def _node_state_dir_of_the_test(monkeypatch, tmp_path_factory):
    """The prefetch's and the prune's default state directory (their lock and record) is the test's own, in this
    process and in the ansible runs it starts (``state_dir``'s environment fallback): no test touches
    /var/lib/pinned-images/state."""
    monkeypatch.setenv(ENV_STATE_DIR, str(tmp_path_factory.mktemp("node-state") / "state"))
    # crictl's variable is the modules' default socket: a shell with the lab's exports does not pick the tests' node.
    monkeypatch.delenv("CONTAINER_RUNTIME_ENDPOINT", raising=False)


def pytest_sessionfinish(session, exitstatus):
    """In CI (PINNED_IMAGES_FORBID_SKIPS=1, set by hack/test.sh) a skipped test fails the run: CI has every file."""
    if os.environ.get("PINNED_IMAGES_FORBID_SKIPS") != "1" or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped:
        reporter.ensure_newline()
        reporter.write_line(
            f"FAILED: {skipped} test(s) skipped; in CI every test must run (see the skip reasons above)", red=True
        )
        session.exitstatus = 1
