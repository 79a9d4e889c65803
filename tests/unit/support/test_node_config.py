# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's containerd config per snapshotter: the one named is enabled and used for CRI pulls and unpacks."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from support.errors import LabError
from support.node import containerd_config

BASE = Path("/lab/nodes/n")
OVERLAY = "io.containerd.snapshotter.v1.overlayfs"


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("snapshotter", ["native", "overlayfs"])
def test_the_named_snapshotter_is_enabled_and_used(version, snapshotter):
    config = tomllib.loads(
        containerd_config(BASE, BASE / "c.sock", 1, Path("/lab/cni"), version, snapshotter=snapshotter)
    )
    assert (OVERLAY in config["disabled_plugins"]) == (snapshotter == "native")
    plugins = config["plugins"]
    if version == 3:
        assert plugins["io.containerd.cri.v1.images"]["snapshotter"] == snapshotter
        assert [entry["snapshotter"] for entry in plugins["io.containerd.transfer.v1.local"]["unpack_config"]] == [
            snapshotter
        ]
    else:
        assert plugins["io.containerd.grpc.v1.cri"]["containerd"]["snapshotter"] == snapshotter


def test_an_unknown_snapshotter_is_refused():
    with pytest.raises(LabError, match="snapshotter 'zfs': the lab runs native or overlayfs"):
        containerd_config(BASE, BASE / "c.sock", 1, Path("/lab/cni"), 3, snapshotter="zfs")
