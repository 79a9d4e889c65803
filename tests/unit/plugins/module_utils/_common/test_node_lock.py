# SPDX-License-Identifier: GPL-3.0-or-later
"""_node_lock with real flocks: a second holder in another process is refused at once and named; a killed holder
leaves no lock behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock, NodeLockError

HOLD = """
import sys
from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock
lock = NodeLock(sys.argv[1], "first-run").acquire()
print("held", flush=True)
sys.stdin.read()
"""


def holder(path):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_second_run_is_refused_and_told_who_holds_the_lock(tmp_path):
    path = tmp_path / "prefetch.lock"
    first = holder(path)
    try:
        with pytest.raises(NodeLockError) as info:
            NodeLock(str(path), "second-run").acquire()
        message = str(info.value)
        assert message.startswith(f"another prefetch is running on this node (pid {first.pid}, run first-run, started ")
        assert f"lock file {path}" in message and "images already present are skipped" in message
        assert json.loads(path.read_text())["run_id"] == "first-run"
    finally:
        first.stdin.close()
        assert first.wait(timeout=30) == 0
    # The holder ended: the lock is free again, and the record is the new holder's.
    with NodeLock(str(path), "third-run"):
        assert json.loads(path.read_text()) == {
            "pid": os.getpid(),
            "run_id": "third-run",
            "started": json.loads(path.read_text())["started"],
        }
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_killed_holder_leaves_no_lock(tmp_path):
    path = tmp_path / "prefetch.lock"
    first = holder(path)
    first.kill()
    first.wait(timeout=30)
    first.stdin.close()
    first.stdout.close()
    with NodeLock(str(path), "next"):
        pass


def test_unusable_lock_files_are_named(tmp_path):
    with pytest.raises(NodeLockError, match=r"lock file .*/missing/x.lock cannot be opened: No such file or directory"):
        NodeLock(str(tmp_path / "missing" / "x.lock")).acquire()
    target = tmp_path / "target"
    target.write_text("keep")
    (tmp_path / "link.lock").symlink_to(target)
    with pytest.raises(NodeLockError, match="cannot be opened"):
        NodeLock(str(tmp_path / "link.lock")).acquire()
    assert target.read_text() == "keep"


def test_a_garbage_record_still_gives_a_message(tmp_path):
    path = tmp_path / "prefetch.lock"
    first = holder(path)
    try:
        with open(path, "r+") as handle:  # a record overwritten by something else
            handle.write("x" * 10_000)
        with pytest.raises(NodeLockError, match=r"another prefetch is running on this node \(another process;"):
            NodeLock(str(path)).acquire()
    finally:
        first.stdin.close()
        first.wait(timeout=30)
