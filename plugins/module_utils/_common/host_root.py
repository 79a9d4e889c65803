# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Node paths seen from a pod that mounts the host's root at ``host_root`` (node side, Python 3.8+).

A module run in a privileged pod (``oc debug node/...`` style, the host's ``/`` at ``/host``) finds every node path
under that directory: the CRI socket, the drop-in, the pull secret, registries.conf, containerd's config and the
registry directories it names, the lock and progress files. ``host_path`` is the one mapping; the runs apply it
where they read their options (``_runs/options.node_params``), and to the host paths the node itself reports (CRI Status, config files).

``check_host_root(value) -> str | None``: None for no host root (empty or ``/``), the normalised directory, or a
    HostRootError naming the input.
``host_path(root, path) -> str``: ``path`` (or a ``unix://`` URL) under ``root``; unchanged without a root, and for a
    relative path or ``host:port``.
``resolved_host_path(root, path)``: ``host_path`` with the host's symbolic links resolved inside ``root`` (an
    absolute link target is the host's), for paths looked for on the node (the default CRI sockets).
``host_view(root, path)``: the host's path of a path under ``root`` (the inverse of ``host_path``).
``host_paths(root, value)``: a path option's value (a str, a list of them) under ``root``; ``host_path_list(root,
    value)``: a ``:``-separated list of paths (containerd's ``config_path``) under ``root``.
``chrooted(root, run_command)``: a command runner that runs each command in the host's root (``chroot``), so
    ``systemctl`` talks to the host's systemd.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "HostRootError",
    "RunCommand",
    "check_host_root",
    "chrooted",
    "host_path",
    "host_path_list",
    "host_paths",
    "host_view",
    "resolved_host_path",
]

if TYPE_CHECKING:  # pragma: no cover
    RunCommand = Callable[[List[str]], Tuple[int, str, str]]


class HostRootError(CollectionError):
    """The ``host_root`` option is not an absolute directory."""


def check_host_root(value: Optional[str]) -> Optional[str]:
    """The host root of the option ``value``: None when empty or ``/``, else its normalised absolute path."""
    if not value:
        return None
    if not os.path.isabs(value):
        raise HostRootError(
            f"host_root must be an absolute path (the host's / inside the pod, as /host), got {value!r}"
        )
    root = os.path.normpath(value)
    if root == "/":
        return None
    if not os.path.isdir(root):
        raise HostRootError(f"host_root {root} is not a directory: mount the host's / there (hostPath /)")
    return root


def host_path(root: Optional[str], path: str) -> str:
    """``path`` of the host as seen under ``root``; relative paths and a missing root leave it alone."""
    if path.startswith("unix://"):
        return "unix://" + host_path(root, path[len("unix://") :])
    if not root or not path or not os.path.isabs(path):
        return path
    return root if os.path.normpath(path) == "/" else root + os.path.normpath(path)


def host_view(root: Optional[str], path: str) -> str:
    """The host's path of ``path`` seen under ``root``; a path outside ``root`` (or no root) as it is."""
    if path.startswith("unix://"):
        return "unix://" + host_view(root, path[len("unix://") :])
    if not root or not path.startswith(root) or path[len(root) : len(root) + 1] not in ("", "/"):
        return path
    return path[len(root) :] or "/"


# Linux's limit on symbolic links followed in one lookup (ELOOP).
_MAX_LINKS = 40


def resolved_host_path(root: Optional[str], path: str) -> str:
    """``host_path``, with the symbolic links of the host resolved inside ``root``, as the host resolves them: an
    absolute target (Debian's ``/var/run -> /run``) is a host path too, not one of the pod's. Components that do
    not exist are kept as they are; a loop or too many links gives the plain ``host_path``."""
    if path.startswith("unix://"):
        return "unix://" + resolved_host_path(root, path[len("unix://") :])
    if not root or not path or not os.path.isabs(path):
        return path
    pending = [part for part in os.path.normpath(path).split("/") if part]
    done: List[str] = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = root + "/" + "/".join(done + [part])
        if not os.path.islink(candidate):
            done.append(part)
            continue
        links += 1
        if links > _MAX_LINKS:
            return host_path(root, path)
        try:
            target = os.readlink(candidate)
        except OSError:  # removed since islink: resolve no further
            return host_path(root, path)
        if os.path.isabs(target):
            done = []
        pending = [item for item in target.split("/") if item and item != "."] + pending
    return root + "/" + "/".join(done) if done else root


def host_paths(root: Optional[str], value: Any) -> Any:
    """A path option's value under ``root``: a path, or each path of a list; anything else as it is."""
    if isinstance(value, str):
        return host_path(root, value)
    if isinstance(value, list):
        return [host_path(root, item) if isinstance(item, str) else item for item in value]
    return value


def host_path_list(root: Optional[str], value: Optional[str]) -> Optional[str]:
    """A ``:``-separated list of paths under ``root`` (empty entries dropped, as containerd does)."""
    if not root or not value:
        return value
    return os.pathsep.join(host_path(root, part) for part in value.split(os.pathsep) if part)


def chrooted(root: Optional[str], run_command: Optional[RunCommand]) -> Optional[RunCommand]:
    """``run_command`` running each command under ``chroot root`` (as is, without a root)."""
    if not root or run_command is None:
        return run_command
    inner = run_command

    def run(argv: List[str]) -> Tuple[int, str, str]:
        return inner(["chroot", root] + list(argv))

    return run
