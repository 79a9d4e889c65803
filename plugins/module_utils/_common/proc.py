# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node's processes, read from ``/proc`` under the host root (node side, Python 3.8+).

Which process serves a unix socket: the kernel lists every bound unix socket with its inode and path in
``/proc/<pid>/net/unix`` (one list per network namespace), and each process's open sockets are the ``socket:[inode]``
links of ``/proc/<pid>/fd``. Seen from a pod, the host's procfs is at ``<host_root>/proc``; ``/proc/1/net/unix`` is
then the host's network namespace, where the runtimes listen, even when the pod has its own.

``serving_pid(proc_dir, socket, root)`` -> the pid listening on the host path ``socket`` (None: not found, or
    ``/proc`` not readable), told apart from others that bind the same path in other mount namespaces by the
    socket file each sees through ``/proc/<pid>/root``; ``cmdline(proc_dir, pid)`` -> its arguments; ``flag_value(argv, names)`` -> the value of
    the last of the flags ``names`` (``--config x``, ``--config=x``, ``-c x``), as Go's flag parsers take it.
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence, Set, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.host_root import resolved_host_path

__all__ = ["cmdline", "flag_value", "listening_inodes", "serving_pid", "socket_holders"]

# The "Flags" column of /proc/net/unix: __SO_ACCEPTCON, a socket that listen() was called on.
_LISTENING = 0x10000


def listening_inodes(proc_dir: str, socket: str, root: Optional[str] = None) -> Set[int]:
    """The inodes of the listening unix sockets bound at the host path ``socket`` (its links resolved in ``root``,
    or on this host without one, as the host resolves them: ``/var/run`` is ``/run`` on Debian), over the namespaces of ``/proc/net/unix`` and
    ``/proc/1/net/unix``."""
    resolve = (lambda path: resolved_host_path(root, path)) if root else os.path.realpath
    wanted = resolve(socket)
    name = os.path.basename(socket)
    found: Set[int] = set()
    for table in (os.path.join(proc_dir, "net", "unix"), os.path.join(proc_dir, "1", "net", "unix")):
        try:
            with open(table, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            # Num RefCount Protocol Flags Type St Inode Path
            fields = line.split(None, 7)
            if len(fields) < 8 or os.path.basename(fields[7]) != name:
                continue
            try:
                flags, inode = int(fields[3], 16), int(fields[6])
            except ValueError:
                continue
            if flags & _LISTENING and resolve(fields[7]) == wanted:
                found.add(inode)
    return found


def _pids(proc_dir: str) -> List[int]:
    try:
        return sorted(int(entry) for entry in os.listdir(proc_dir) if entry.isdigit())
    except OSError:
        return []


def socket_holders(proc_dir: str, inodes: Set[int]) -> List[int]:
    """The pids holding a socket of ``inodes`` open; processes whose fds cannot be read are skipped."""
    links = {f"socket:[{inode}]" for inode in inodes}
    holders = []
    for pid in _pids(proc_dir) if links else []:
        fd_dir = os.path.join(proc_dir, str(pid), "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in links:
                    holders.append(pid)
                    break
            except OSError:
                continue
    return holders


def _same_file(proc_dir: str, pid: int, socket: str, seen: Optional[Tuple[int, int]]) -> Optional[bool]:
    """Whether ``socket`` in the mount namespace of ``pid`` (through ``/proc/<pid>/root``) is the file seen here;
    None when it cannot be told."""
    if seen is None:
        return None
    try:
        there = os.stat(os.path.join(proc_dir, str(pid), "root") + socket)
    except OSError:
        return None
    return (there.st_dev, there.st_ino) == seen


def serving_pid(proc_dir: str, socket: str, root: Optional[str] = None) -> Optional[int]:
    """The pid listening on the host path ``socket``; None when none is found. Several runtimes may bind the same
    path, each in its own mount namespace (nested nodes, containers): the one whose socket is the file seen here
    wins. A socket-activating pid 1 (systemd) holds the listener too: another holder is the runtime."""
    holders = socket_holders(proc_dir, listening_inodes(proc_dir, socket, root))
    try:
        found = os.stat(resolved_host_path(root, socket))
        seen: Optional[Tuple[int, int]] = (found.st_dev, found.st_ino)
    except OSError:
        seen = None
    verdicts = {pid: _same_file(proc_dir, pid, socket, seen) for pid in holders}
    if any(verdicts.values()):
        holders = [pid for pid in holders if verdicts[pid]]
    else:
        holders = [pid for pid in holders if verdicts[pid] is not False] or holders
    others = [pid for pid in holders if pid != 1]
    chosen = others or holders
    return chosen[0] if chosen else None


def cmdline(proc_dir: str, pid: int) -> List[str]:
    """The arguments of ``pid`` (empty: gone, a zombie, or not readable)."""
    try:
        with open(os.path.join(proc_dir, str(pid), "cmdline"), "rb") as handle:
            return [arg.decode("utf-8", "replace") for arg in handle.read().split(b"\0") if arg]
    except OSError:
        return []


def flag_value(argv: Sequence[str], names: Sequence[str]) -> Optional[str]:
    """The value of the last of the flags ``names`` (``-c``, ``--config``) in ``argv``, given as ``--name value``
    or ``--name=value``; Go's flag packages accept one or two dashes for either form. None: not given."""
    bare = {name.lstrip("-") for name in names}
    value = None
    index = 1
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == "--":
            break
        if not arg.startswith("-"):
            continue
        key, sep, inline = arg.lstrip("-").partition("=")
        if key not in bare:
            continue
        if sep:
            value = inline
        elif index < len(argv):
            value = argv[index]
            index += 1
    return value
