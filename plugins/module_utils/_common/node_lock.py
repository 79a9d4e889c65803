# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""One prefetch at a time per node: an exclusive ``flock`` on a lock file (node side, Python 3.8+).

Two runs on one node (two AWX jobs, or a rerun while the background job of a killed controller still pulls) would
pull the same images twice at once and overwrite each other's progress file. The lock is taken without waiting;
the second run fails at once with a message naming the holder (pid, run id, start time), which the lock file
records. The kernel drops the lock when the holder's process ends, however it ends, so a killed run never leaves
a stale lock; the file itself stays (removing it would let a third run lock a different inode).
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os

from ansible_collections.pinned.images.plugins.module_utils._common.errors import LOCKED, CollectionError

__all__ = ["NodeLock", "NodeLockError"]

# A lock file holds one small JSON record; a bigger one is not ours and is not read whole.
_MAX_RECORD = 4096


class NodeLockError(CollectionError):
    """The lock is held by another run, or the lock file cannot be used; ``error_kind`` is ``locked``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, details={"error_kind": LOCKED})


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        record = json.loads(os.read(fd, _MAX_RECORD).decode("utf-8"))
    except (OSError, ValueError):
        return "another process"
    if not isinstance(record, dict):
        return "another process"
    parts = [f"pid {record.get('pid')}"]
    if record.get("run_id"):
        parts.append(f"run {str(record['run_id'])[:100]}")
    if record.get("started"):
        parts.append(f"started {str(record['started'])[:40]}")
    return ", ".join(parts)


class NodeLock:
    """``with NodeLock(path, run_id):`` holds the lock for the block; NodeLockError when another run has it."""

    def __init__(self, path: str, run_id: str | None = None):
        self.path = path
        self.run_id = run_id
        self._fd: int | None = None

    def acquire(self) -> NodeLock:
        """Take the lock or raise NodeLockError at once; then record this process in the file."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise NodeLockError(f"lock file {self.path} cannot be opened: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise NodeLockError(
                f"another prefetch is running on this node ({holder}; lock file {self.path}). This run stops so that "
                "the same images are not pulled twice at once; run again when it has ended: images already present "
                "are skipped"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise NodeLockError(f"lock file {self.path} cannot be locked: {exc.strerror or exc}") from None
        record = {
            "pid": os.getpid(),
            "run_id": self.run_id,
            "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode("utf-8"), 0)
        except OSError:
            pass  # the record only helps the message of a second run; the lock is what counts
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = None

    def __enter__(self) -> NodeLock:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()
