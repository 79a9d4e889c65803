# SPDX-License-Identifier: GPL-3.0-or-later
"""containerd nodes of the lab: which binary, the node's config.toml and hosts.toml, and the CRI readiness probe."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Any, Mapping, Sequence

from support.errors import LabError
from support.processes import binary, tail

REPO = Path(__file__).resolve().parents[2]
# Plugins the lab never uses (CRI uses the "native" snapshotter). Not io.containerd.runtime.v1.linux: in 1.6
# the tasks service, and through it the CRI plugin, fails to load without it.
DISABLED_PLUGINS = (
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.overlayfs",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.tracing.processor.v1.otlp",
    "io.containerd.internal.v1.tracing",
)
NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
TMPFS_SIZE = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")
# sun_path is 108 bytes including the NUL.
MAX_SOCKET_PATH = 107
# containerd binaries a node may run: Debian 12's 1.6 from PATH, or Debian trixie's 1.7 that hack/setup.sh unpacks
# (hack/trixie_debs.sh). CRI reports the image label io.cri-containerd.pinned only from 1.7.3 on.
CONTAINERD_BINARIES = {
    "system": None,
    "trixie": REPO / ".build" / "trixie" / "containerd" / "usr" / "bin" / "containerd",
}


def check_tmpfs_size(size: str) -> None:
    """Refuse a tmpfs size mount(8) would not take."""
    if not TMPFS_SIZE.match(size):
        raise LabError("bad tmpfs size %r: use a number with an optional k/m/g suffix, e.g. 64M" % size)


def containerd_binary(choice: str) -> str:
    """The containerd binary named by `choice`, a key of CONTAINERD_BINARIES."""
    if choice not in CONTAINERD_BINARIES:
        raise LabError("unknown containerd %r: use one of %s" % (choice, ", ".join(CONTAINERD_BINARIES)))
    path = CONTAINERD_BINARIES[choice]
    if path is None:
        return binary("containerd")
    if not os.access(path, os.X_OK):
        raise LabError("%s not found; run hack/setup.sh (hack/trixie_debs.sh containerd unpacks it)" % path)
    return str(path)


def containerd_choices(choices: Mapping[str, str] | None, names: Sequence[str]) -> dict[str, str]:
    """Node name -> containerd choice for every node; unknown names and choices are errors."""
    choices = dict(choices or {})
    unknown = sorted(set(choices) - set(names))
    if unknown:
        raise LabError("--containerd-node names no node: %s (nodes: %s)" % (", ".join(unknown), ", ".join(names)))
    for choice in set(choices.values()):
        containerd_binary(choice)
    return {name: choices.get(name, "system") for name in names}


def node_names(nodes: int, control_plane: int | None = None) -> list[str]:
    """`control_plane` (default: 1 when there is a node) names cp-0.., the rest are worker-0.."""
    if control_plane is None:
        control_plane = min(1, nodes)
    if nodes < 0 or not 0 <= control_plane <= nodes:
        raise LabError("need 0 <= control_plane (%d) <= nodes (%d)" % (control_plane, nodes))
    return ["cp-%d" % i for i in range(control_plane)] + ["worker-%d" % i for i in range(nodes - control_plane)]


def containerd_config(base: Path, sock: Path, stream_port: int, cni: Path, config_path: str | None = None) -> str:
    """The config.toml of a node whose files live under ``base``, serving CRI on ``sock``; ``cni`` holds the
    shared ``bin`` and ``net.d`` directories; ``config_path`` is the CRI registry's hosts directory (default
    ``base/certs.d``, which the lab fills with its registries' hosts.toml)."""
    q = json.dumps  # TOML basic strings take JSON's escapes
    return f"""version = 2
root = {q(str(base / "root"))}
state = {q(str(base / "state"))}
temp = {q(str(base / "tmp"))}
disabled_plugins = {q(list(DISABLED_PLUGINS))}

[grpc]
  address = {q(str(sock))}

[ttrpc]
  address = {q(str(sock) + ".ttrpc")}

# No TCP listeners: several nodes share this machine's network namespace.
[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {q(str(base / "opt"))}

[plugins."io.containerd.grpc.v1.cri"]
  disable_apparmor = true
  disable_tcp_service = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "{stream_port}"

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "native"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = {q(str(cni / "bin"))}
  conf_dir = {q(str(cni / "net.d"))}

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = {q(config_path or str(base / "certs.d"))}
"""


def hosts_toml(url: str, ca: str | None) -> str:
    """The hosts.toml that sends a node's pulls from the registry at ``url`` (trusting ``ca``)."""
    ca_line = "\n  ca = %s" % json.dumps(ca) if ca else ""
    return f"""server = "{url}"

[host."{url}"]
  capabilities = ["pull", "resolve"]{ca_line}
"""


def cri_ready(entry: Mapping[str, Any]) -> bool:
    """True when the node's socket answers and its CRI plugin loaded (containerd serves even when it did not)."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(entry["socket"])
    except OSError:
        return False
    try:
        listing = subprocess.run(
            [binary("ctr"), "--address", entry["socket"], "plugins", "ls", "id==cri"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.split()
    except subprocess.TimeoutExpired:
        return False
    if listing[-1:] != ["ok"]:
        raise LabError("the CRI plugin of %s did not load; log %s:\n%s" % (entry["name"], entry["log"], tail(entry)))
    return True
