# SPDX-License-Identifier: GPL-3.0-or-later
"""Atomic replacement: proven with real writer processes that are SIGKILLed mid-write."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common import atomic_file as af
from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import (
    AtomicFileError,
    atomic_write,
    cleanup_stale_temps,
    read_bytes,
    remove_file,
)


def _collections_root() -> str:
    # .../ansible_collections/pinned/images/plugins/module_utils/_common/atomic_file.py -> the dir holding ansible_collections
    here = Path(af.__file__)
    for parent in here.parents:
        if parent.name == "ansible_collections":
            return str(parent.parent)
    raise AssertionError("not imported from an ansible_collections tree")


OLD = b'[crio]\n  [crio.image]\n    pinned_images = ["old"]\n'
NEW = b'[crio]\n  [crio.image]\n    pinned_images = ["new", "newer"]\n'


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_create_then_unchanged(tmp_path):
    path = tmp_path / "50-pinned-images"
    result = atomic_write(path, NEW)
    assert result["changed"] and result["created"] and result["content_changed"]
    assert path.read_bytes() == NEW and mode_of(path) == 0o644
    assert result["diff"] == {
        "before": "",
        "after": NEW.decode(),
        "before_header": f"{path} (absent)",
        "after_header": str(path),
    }
    inode = os.stat(path).st_ino
    again = atomic_write(path, NEW.decode())
    assert not again["changed"] and not again["content_changed"] and os.stat(path).st_ino == inode
    assert os.listdir(tmp_path) == ["50-pinned-images"]


def test_replace_keeps_no_temp_and_sets_mode(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(OLD)
    path.chmod(0o600)
    result = atomic_write(path, NEW, mode=0o640)
    assert result["changed"] and not result["created"] and result["content_changed"]
    assert result["diff"]["before"] == OLD.decode() and result["diff"]["after"] == NEW.decode()
    assert path.read_bytes() == NEW and mode_of(path) == 0o640
    assert os.listdir(tmp_path) == ["f"]


def test_mode_only_change(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(NEW)
    path.chmod(0o600)
    result = atomic_write(path, NEW, check_mode=True)
    assert result["changed"] and mode_of(path) == 0o600
    result = atomic_write(path, NEW)
    assert result["changed"] and not result["content_changed"] and mode_of(path) == 0o644
    assert "0600" in result["diff"]["before_header"] and "0644" in result["diff"]["after_header"]


def test_custom_sameness(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(NEW + b"\n\n")
    assert not atomic_write(path, NEW, same=lambda a, b: a.strip() == b.strip())["changed"]
    assert path.read_bytes() == NEW + b"\n\n"


def test_check_mode_writes_nothing(tmp_path):
    path = tmp_path / "f"
    result = atomic_write(path, NEW, check_mode=True)
    assert result["changed"] and result["diff"]["after"] == NEW.decode()
    assert os.listdir(tmp_path) == []
    path.write_bytes(OLD)
    assert atomic_write(path, NEW, check_mode=True)["changed"]
    assert path.read_bytes() == OLD


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(AtomicFileError, match="does not exist"):
        atomic_write(tmp_path / "nope" / "f", NEW)


def test_failure_before_rename_leaves_old_file_and_no_temp(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(OLD)

    def boom(temp):
        assert Path(temp).read_bytes() == NEW
        raise OSError(28, "No space left on device")

    with pytest.raises(AtomicFileError, match="No space left on device"):
        atomic_write(path, NEW, _before_replace=boom)
    assert path.read_bytes() == OLD
    assert os.listdir(tmp_path) == ["f"]


def test_tmp_dir_on_the_same_filesystem(tmp_path):
    side = tmp_path / "side"
    side.mkdir()
    seen = []
    atomic_write(tmp_path / "f", NEW, tmp_dir=str(side), _before_replace=seen.append)
    assert Path(seen[0]).parent == side
    assert (tmp_path / "f").read_bytes() == NEW and os.listdir(side) == []


def test_remove(tmp_path):
    path = tmp_path / "f"
    assert not remove_file(path)["changed"]
    path.write_bytes(OLD)
    result = remove_file(path, check_mode=True)
    assert result["changed"] and path.exists()
    assert result["diff"]["before"] == OLD.decode() and result["diff"]["after"] == ""
    assert remove_file(path)["changed"] and not path.exists()
    assert read_bytes(path) is None


# ----------------------------------------------------------------------------- killed writers

WRITER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import atomic_write

    def pause(temp):
        print("ready " + temp, flush=True)
        time.sleep(60)

    atomic_write(sys.argv[2], sys.argv[3].encode(), _before_replace=pause)
    print("done", flush=True)
    """
)


def kill_writer_before_rename(path):
    """Run atomic_write(path, NEW) in a child and SIGKILL it between write and rename; return (temp, pid)."""
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, _collections_root(), str(path), NEW.decode()], stdout=subprocess.PIPE, text=True
    )
    try:
        line = child.stdout.readline().strip()
        assert line.startswith("ready "), line
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return Path(line[len("ready ") :]), child.pid


def test_writer_killed_between_write_and_rename(tmp_path):
    path = tmp_path / "50-pinned-images"
    path.write_bytes(OLD)
    temp, pid = kill_writer_before_rename(path)
    # The temporary was complete, fsynced and already had its final mode when the writer died.
    assert temp.read_bytes() == NEW and mode_of(temp) == 0o644
    # The old file survives intact.
    assert path.read_bytes() == OLD
    # The leftover cannot be mistaken for the config: hidden, its own suffix, the dead writer's pid in its name.
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name != path.name)
    assert leftovers == [temp.name]
    assert temp.name.startswith(f".{path.name}.{pid}.") and temp.name.endswith(".tmp")
    assert not temp.name.startswith(path.name)
    # The next write removes the dead writer's leftover and succeeds.
    assert atomic_write(path, NEW)["changed"]
    assert path.read_bytes() == NEW
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_remove_also_removes_a_killed_writers_leftover(tmp_path):
    # CRI-O reads every file of crio.conf.d, hidden ones included: removing the drop-in must not leave a killed
    # writer's complete temporary behind to pin on the next reload.
    path = tmp_path / "50-pinned-images"
    path.write_bytes(OLD)
    temp, _pid = kill_writer_before_rename(path)
    assert temp.read_bytes() == NEW
    # Check mode changes nothing, the leftover included.
    assert remove_file(path, check_mode=True)["changed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, temp.name])
    result = remove_file(path)
    assert result["changed"] and result["diff"]["before"] == OLD.decode()
    assert list(tmp_path.iterdir()) == []


def test_remove_of_an_absent_file_still_removes_dead_writers_leftovers(tmp_path):
    path = tmp_path / "f"
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = tmp_path / f".f.{finished.pid}.{'1' * 16}.tmp"
    dead.write_bytes(NEW)
    mine = tmp_path / f".f.{os.getpid()}.{'0' * 16}.tmp"
    mine.write_bytes(NEW)
    assert not remove_file(path, check_mode=True)["changed"]
    assert dead.exists()
    # The target's own state decides "changed"; a live writer's temporary is left alone.
    assert not remove_file(path)["changed"]
    assert not dead.exists() and mine.exists()


def test_live_writers_temporaries_are_not_cleaned(tmp_path):
    path = tmp_path / "f"
    mine = tmp_path / f".f.{os.getpid()}.{'0' * 16}.tmp"
    mine.write_bytes(b"x")
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead_pid = finished.pid
    dead = tmp_path / f".f.{dead_pid}.{'1' * 16}.tmp"
    dead.write_bytes(b"x")
    other = tmp_path / ".g.1.0000000000000000.tmp"
    other.write_bytes(b"x")
    removed = cleanup_stale_temps(path)
    assert removed == [str(dead)]
    assert mine.exists() and other.exists()


LOOPER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import atomic_write
    contents = [sys.argv[3].encode(), sys.argv[4].encode()]
    print("go", flush=True)
    n = 0
    while True:
        atomic_write(sys.argv[2], contents[n % 2])
        n += 1
    """
)


def test_random_kills_never_leave_a_torn_file(tmp_path):
    path = tmp_path / "50-pinned-images"
    big_old = OLD * 2000
    big_new = NEW * 2000
    path.write_bytes(big_old)
    rng = random.Random(1234)
    for _round in range(12):
        child = subprocess.Popen(
            [sys.executable, "-c", LOOPER, _collections_root(), str(path), big_old.decode(), big_new.decode()],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout.readline().strip() == "go"
            time.sleep(rng.uniform(0.0, 0.05))
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert path.read_bytes() in (big_old, big_new)
        for leftover in tmp_path.iterdir():
            if leftover.name != path.name:
                assert leftover.name.startswith(f".{path.name}.") and leftover.name.endswith(".tmp")
    atomic_write(path, NEW)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_huge_old_file_is_replaced_without_being_read_whole(tmp_path, monkeypatch):
    target = tmp_path / "50-pinned-images"
    with target.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: 50 MiB of zeros
    read_sizes = []

    class Recorded:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            self.handle.close()

        def read(self, size=-1):
            data = self.handle.read(size)
            read_sizes.append(len(data))
            return data

        def fileno(self):
            return self.handle.fileno()

    monkeypatch.setattr(af, "open", lambda *args, **kwargs: Recorded(open(*args, **kwargs)), raising=False)
    result = atomic_write(target, "small\n")
    monkeypatch.undo()
    assert result["changed"] is True
    assert result["diff"]["before"] == f"({50 * 1024 * 1024} bytes, far more than the new content: not shown)\n"
    assert target.read_text() == "small\n"
    assert read_sizes == [af._MIN_COMPARED + 1]
