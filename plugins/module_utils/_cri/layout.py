# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Where a node's runtime listens and which configuration it runs with (node side, Python 3.8+).

Distributions lay the runtime out their own way (docs/nodes.md). ``SOCKET_LAYOUTS`` names each known socket, in
the order they are tried, with the default files of that layout. The configuration the runtime really uses comes
first, read from the process that serves the socket (``_common/proc``): containerd's ``--config``/``-c``, CRI-O's
``--config``, ``--config-dir`` and ``--registries-conf``; a process found without the flag uses its runtime's
built-in default; only when no process is found do the layout's default files count, the first that exists. So a
stray ``/etc/containerd/config.toml`` never wins over the file k3s's containerd was started with. Everything is read
under ``host_root`` (a pod with the host's ``/`` there, and the host's ``/proc`` under it).

``find_socket(root)`` -> (the layout, the socket's host path) of the first known socket that exists;
``find_layout(socket, root, runtime_name, containerd_config)`` -> ``NodeLayout``: the files and where each came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.host_root import host_path, resolved_host_path
from ansible_collections.pinned.images.plugins.module_utils._common.proc import cmdline, flag_value, serving_pid

__all__ = [
    "CONTAINERD_DEFAULT_CONFIG",
    "CRIO_DEFAULTS",
    "SOCKET_LAYOUTS",
    "FoundPath",
    "NodeLayout",
    "SocketLayout",
    "find_layout",
    "find_socket",
    "layout_of_socket",
]

# What containerd reads without --config, and CRI-O without its flags (crio.conf(5), containers-registries.conf(5)).
CONTAINERD_DEFAULT_CONFIG = "/etc/containerd/config.toml"
CRIO_DEFAULTS = {
    "config": "/etc/crio/crio.conf",
    "config_dir": "/etc/crio/crio.conf.d",
    "registries_conf": "/etc/containers/registries.conf",
    "registries_conf_dir": "/etc/containers/registries.conf.d",
}
_CRIO_FLAGS = {
    "config": ("--config", "-c"),
    "config_dir": ("--config-dir", "-d"),
    "registries_conf": ("--registries-conf",),
    "registries_conf_dir": ("--registries-conf-dir",),
}
_CONTAINERD_FLAGS = ("--config", "-c")


@dataclass(frozen=True)
class SocketLayout:
    """A known socket: its layout's name, the runtime behind it, and the default config files of that layout (tried
    in order when no process says which it uses)."""

    name: str
    runtime: str
    socket: str
    configs: Tuple[str, ...] = ()


# Tried in this order (docs/nodes.md): CRI-O's and containerd's own sockets first (as crictl and the collection
# always did), then the distributions' own. Talos, EKS, AKS, GKE, Bottlerocket, Flatcar and kind use containerd's
# socket; Talos's config is /etc/cri/containerd.toml, Flatcar's default /usr/share/containerd/config.toml.
SOCKET_LAYOUTS = (
    SocketLayout("cri-o", "cri-o", "/var/run/crio/crio.sock", (CRIO_DEFAULTS["config"],)),
    SocketLayout(
        "containerd",
        "containerd",
        "/run/containerd/containerd.sock",
        (CONTAINERD_DEFAULT_CONFIG, "/etc/cri/containerd.toml", "/usr/share/containerd/config.toml"),
    ),
    # RKE2 runs k3s's agent code, so its containerd listens at the same path; its config is under its data dir.
    SocketLayout(
        "k3s-rke2",
        "containerd",
        "/run/k3s/containerd/containerd.sock",
        (
            "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
            "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
        ),
    ),
    SocketLayout(
        "microk8s",
        "containerd",
        "/var/snap/microk8s/common/run/containerd.sock",
        ("/var/snap/microk8s/current/args/containerd.toml",),
    ),
)


@dataclass(frozen=True)
class FoundPath:
    """A host path and where it came from (an option, a flag of the runtime's process, a default)."""

    path: str
    source: str

    def report(self) -> Dict[str, str]:
        """For a module's result."""
        return {"path": self.path, "source": self.source}


@dataclass(frozen=True)
class NodeLayout:
    """The runtime's socket and files as found on the node (host paths), and where each came from."""

    layout: str
    runtime: str
    socket: Optional[FoundPath]
    pid: Optional[int] = None
    # containerd's config file, or crio.conf; None: containerd runs with its built-in defaults.
    config: Optional[FoundPath] = None
    # CRI-O only.
    config_dir: Optional[FoundPath] = None
    registries_conf: Optional[FoundPath] = None
    registries_conf_dir: Optional[FoundPath] = None

    def report(self) -> Dict[str, Any]:
        """For a module's result (``cri_image_info``'s ``layout``)."""
        found: Dict[str, Any] = {
            "layout": self.layout,
            "runtime": self.runtime,
            "socket": self.socket.report() if self.socket else None,
            "pid": self.pid,
            "config": self.config.report() if self.config else None,
        }
        if self.runtime == "cri-o":
            found["config_dir"] = self.config_dir.report() if self.config_dir else None
            found["registries_conf"] = self.registries_conf.report() if self.registries_conf else None
            found["registries_conf_dir"] = self.registries_conf_dir.report() if self.registries_conf_dir else None
        return found


def _under(root: Optional[str], path: str) -> str:
    return resolved_host_path(root, path) if root else path


def _resolved(root: Optional[str], path: str) -> str:
    """``path`` with its links resolved, on the node itself too (``/var/run/crio/crio.sock`` is
    ``/run/crio/crio.sock`` on most hosts), to compare two names of one file."""
    return resolved_host_path(root, path) if root else os.path.realpath(path)


def find_socket(root: Optional[str] = None) -> Tuple[Optional[SocketLayout], Tuple[str, ...]]:
    """(the first layout whose socket exists under ``root``, every socket path looked for, under ``root``)."""
    looked = tuple(_under(root, layout.socket) for layout in SOCKET_LAYOUTS)
    for layout, path in zip(SOCKET_LAYOUTS, looked):
        if os.path.exists(path):
            return layout, looked
    return None, looked


def layout_of_socket(socket: str, root: Optional[str] = None) -> Optional[SocketLayout]:
    """The known layout whose socket is the host path ``socket`` (links resolved), or None."""
    wanted = _resolved(root, socket)
    return next((layout for layout in SOCKET_LAYOUTS if _resolved(root, layout.socket) == wanted), None)


def _process_name(argv: Tuple[str, ...], pid: int) -> str:
    return f"{os.path.basename(argv[0]) if argv else 'the runtime'} (pid {pid})"


def _first_existing(root: Optional[str], paths: Tuple[str, ...], layout: str) -> Optional[FoundPath]:
    what = f"a default path of the {layout} layout" if layout != "unknown" else "containerd's default path"
    for path in paths:
        if os.path.exists(host_path(root, path)):
            return FoundPath(path, f"{what} (no process found that serves the socket)")
    return None


def find_layout(
    socket: str,
    root: Optional[str] = None,
    runtime_name: str = "",
    containerd_config: Optional[str] = None,
    socket_source: str = "the cri_socket option",
) -> NodeLayout:
    """The layout of the runtime serving the host path ``socket``: its known layout (by path), the pid serving it
    and the files its flags name, else its runtime's defaults, else the layout's default files. ``runtime_name``
    (``cri-o`` or ``containerd``, from CRI Version) names the runtime of a socket of no known layout;
    ``containerd_config`` (the option, a host path) wins over everything."""
    known = layout_of_socket(socket, root)
    runtime = runtime_name or (known.runtime if known else "")
    name = known.name if known else "unknown"
    pid = serving_pid(host_path(root, "/proc"), socket, root)
    argv = tuple(cmdline(host_path(root, "/proc"), pid)) if pid is not None else ()
    found = NodeLayout(name, runtime, FoundPath(socket, socket_source), pid if argv else None)
    who = _process_name(argv, pid) if argv and pid is not None else ""
    if runtime == "cri-o":
        files: Dict[str, Optional[FoundPath]] = {}
        for key, flags in _CRIO_FLAGS.items():
            value = flag_value(argv, flags) if who else None
            if value:
                files[key] = FoundPath(value, f"the {flags[0]} flag of {who}")
            elif who:
                files[key] = FoundPath(CRIO_DEFAULTS[key], f"CRI-O's default ({who} runs without {flags[0]})")
            else:
                files[key] = FoundPath(CRIO_DEFAULTS[key], "CRI-O's default (no process found that serves the socket)")
        return NodeLayout(
            name,
            runtime,
            found.socket,
            found.pid,
            files["config"],
            files["config_dir"],
            files["registries_conf"],
            files["registries_conf_dir"],
        )
    if containerd_config:
        config: Optional[FoundPath] = FoundPath(containerd_config, "the containerd_config option")
    elif who:
        value = flag_value(argv, _CONTAINERD_FLAGS)
        config = (
            FoundPath(value, f"the --config flag of {who}")
            if value
            else FoundPath(CONTAINERD_DEFAULT_CONFIG, f"containerd's default ({who} runs without --config)")
        )
    else:
        config = _first_existing(root, known.configs if known else (CONTAINERD_DEFAULT_CONFIG,), name)
    return NodeLayout(name, runtime or "containerd", found.socket, found.pid, config)
