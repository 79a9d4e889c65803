# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Atomic file replacement and removal with Ansible-style diffs (node side, Python 3.8+).

A write goes to a temporary file in the target's directory (created with O_EXCL, mode 0600), is
flushed and fsynced, gets its final mode, is renamed over the target, and the directory is fsynced.
A reader sees the old file or the new one, never a torn one. A writer killed before the rename
leaves the old file intact plus a temporary named ``.<target>.<pid>.<random>.tmp``; the next write
to, or removal of, the same target removes such leftovers of writers that are no longer running.

Note for config directories read wholesale (CRI-O walks every file of ``crio.conf.d``): the temporary
exists only between create and rename; ``tmp_dir`` puts it elsewhere on the same filesystem.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from typing import Any, Callable, Dict, List, Optional, Pattern, Tuple, Union

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import StrPath
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "DEFAULT_MODE",
    "AtomicFileError",
    "atomic_write",
    "cleanup_stale_temps",
    "compare_limit",
    "file_sha256",
    "read_bytes",
    "remove_file",
]

DEFAULT_MODE = 0o644
_TEMP_SUFFIX = ".tmp"


class AtomicFileError(CollectionError):
    """A file could not be written or removed; the message names the path and the cause, ``errno`` the OS error."""

    def __init__(self, err: Optional[int], message: str) -> None:
        super().__init__(message)
        self.errno = err


def read_bytes(path: StrPath, limit: Optional[int] = None) -> Optional[bytes]:
    """The file's bytes, or None when it does not exist; with ``limit``, at most ``limit + 1`` of them (enough to
    tell that the file is bigger)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(-1 if limit is None else limit + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AtomicFileError(exc.errno, f"cannot read {path}: {exc.strerror or exc}") from exc


# An old file much bigger than the new content cannot be the same: only its start is read, and the diff leaves it out.
_MIN_COMPARED = 1024 * 1024


def compare_limit(new_content: Union[str, bytes]) -> int:
    """How much of an old file is read to compare it with ``new_content``: more cannot be the same."""
    return max(_MIN_COMPARED, 4 * len(new_content))


def _read_bounded(path: str, limit: int) -> Tuple[Optional[bytes], int]:
    """(bytes or None when absent, the file's size when it is larger than ``limit`` else 0)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
            if len(data) <= limit:
                return data, 0
            return data[:limit], os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return None, 0
    except OSError as exc:
        raise AtomicFileError(exc.errno, f"cannot read {path}: {exc.strerror or exc}") from exc


def file_sha256(path: StrPath) -> str:
    """The hex sha256 of the file at ``path``, read in blocks (wheels and unpacked libraries are megabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _text(data: Optional[bytes]) -> str:
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def _diff(path: str, before: Optional[bytes], after: Optional[bytes]) -> Dict[str, str]:
    return {
        "before": _text(before),
        "after": _text(after),
        "before_header": path if before is not None else f"{path} (absent)",
        "after_header": path if after is not None else f"{path} (absent)",
    }


def _temp_re(base: str) -> Pattern[str]:
    return re.compile(r"\." + re.escape(base) + r"\.(\d+)\.[0-9a-f]{16}" + re.escape(_TEMP_SUFFIX))


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_stale_temps(path: StrPath, tmp_dir: Optional[str] = None) -> List[str]:
    """Remove temporaries for ``path`` left by writers that are no longer running."""
    directory = tmp_dir or os.path.dirname(os.path.abspath(path))
    pattern = _temp_re(os.path.basename(path))
    removed: List[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match and not _pid_alive(int(match.group(1))):
            try:
                os.unlink(os.path.join(directory, name))
                removed.append(os.path.join(directory, name))
            except OSError:
                pass
    return removed


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on directories
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _same_device(first: str, second: str) -> bool:
    try:
        return os.stat(first).st_dev == os.stat(second).st_dev
    except OSError:
        return False


def atomic_write(
    path: StrPath,
    content: Union[str, bytes],
    mode: int = DEFAULT_MODE,
    check_mode: bool = False,
    same: Optional[Callable[[bytes, bytes], bool]] = None,
    tmp_dir: Optional[str] = None,
    _before_replace: Optional[Callable[[str], None]] = None,
) -> Dict[str, Any]:
    """Replace ``path`` with ``content`` (str, as UTF-8, or bytes) atomically, as the module docstring says.

    ``same(old_bytes, new_bytes)`` decides "unchanged" (default: byte equality); unchanged content is not rewritten,
    and a wrong mode is fixed with chmod. Returns ``{changed, created, content_changed, diff}``
    (``content_changed`` is false for a mode-only fix; ``diff``: ``{before, after, before_header, after_header}``).
    """
    path = os.fspath(path)
    data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    before, oversize = _read_bounded(path, compare_limit(data))
    unchanged = before is not None and not oversize and (same(before, data) if same else before == data)
    if unchanged:
        current_mode = stat.S_IMODE(os.stat(path).st_mode)
        if current_mode == mode:
            return {"changed": False, "created": False, "content_changed": False, "diff": _diff(path, before, before)}
        if not check_mode:
            try:
                os.chmod(path, mode)
            except OSError as exc:
                raise AtomicFileError(exc.errno, f"cannot chmod {path}: {exc.strerror or exc}") from exc
        diff = _diff(path, before, before)
        diff["before_header"] = f"{path} (mode {current_mode:04o})"
        diff["after_header"] = f"{path} (mode {mode:04o})"
        return {"changed": True, "created": False, "content_changed": False, "diff": diff}

    result: Dict[str, Any] = {
        "changed": True,
        "created": before is None,
        "content_changed": True,
        "diff": _diff(path, before, data),
    }
    if oversize:
        result["diff"]["before"] = f"({oversize} bytes, far more than the new content: not shown)\n"
    if check_mode:
        return result

    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise AtomicFileError(errno.ENOENT, f"cannot write {path}: directory {directory} does not exist")
    temp_dir = directory
    if tmp_dir and os.path.isdir(tmp_dir) and _same_device(tmp_dir, directory):
        temp_dir = tmp_dir
    cleanup_stale_temps(path, temp_dir)
    temp: str | None = None
    try:
        fd = None
        for _attempt in range(100):
            candidate = os.path.join(
                temp_dir, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(8).hex()}{_TEMP_SUFFIX}"
            )
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            except FileExistsError:
                continue
            temp = candidate
            break
        if fd is None or temp is None:
            raise AtomicFileError(errno.EEXIST, f"cannot create a temporary file in {temp_dir}")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        if before is not None and hasattr(os, "chown"):
            old = os.stat(path)
            if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(temp, old.st_uid, old.st_gid)
                except PermissionError:
                    pass
        if _before_replace is not None:
            _before_replace(temp)
        os.replace(temp, path)
        temp = None
        _fsync_dir(directory)
    except AtomicFileError:
        raise
    except OSError as exc:
        raise AtomicFileError(exc.errno, f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if temp is not None:
            try:
                os.unlink(temp)
            except OSError:
                pass
    return result


def remove_file(path: StrPath, check_mode: bool = False) -> Dict[str, Any]:
    """Remove ``path`` and, outside check mode, the leftovers of dead writers for it (CRI-O would read them, hidden
    or not); a missing file is no change. Returns ``{changed, diff}``, which describe ``path`` only."""
    path = os.fspath(path)
    if not check_mode:
        # A directory read wholesale (crio.conf.d) would still apply a temporary a killed writer left behind.
        cleanup_stale_temps(path)
    before = read_bytes(path)
    if before is None:
        return {"changed": False, "diff": _diff(path, None, None)}
    result: Dict[str, Any] = {"changed": True, "diff": _diff(path, before, None)}
    if check_mode:
        return result
    try:
        os.unlink(path)
    except FileNotFoundError:
        return {"changed": False, "diff": _diff(path, None, None)}
    except OSError as exc:
        raise AtomicFileError(exc.errno, f"cannot remove {path}: {exc.strerror or exc}") from exc
    _fsync_dir(os.path.dirname(os.path.abspath(path)))
    return result
