# SPDX-License-Identifier: GPL-3.0-or-later
"""node_wheelhouse main(): check mode downloads nothing; the wheels and checksums of each target."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.pinned.images.plugins.modules import node_wheelhouse
from fixtures.module_runner import run_module

LINES = (Path(__file__).resolve().parents[4] / "requirements-node.txt").read_text().splitlines()


def test_node_wheelhouse_module_check_mode_downloads_nothing(tmp_path, fake_pip, capsys):
    pip, log = fake_pip
    args = dict(path=str(tmp_path / "wh"), targets=["cp311-manylinux-x86_64"], requirements=LINES, pip=pip)
    result = run_module(node_wheelhouse, args, capsys, check_mode=True)
    assert result["rc"] == 0 and result["changed"] and not log.exists()
    assert result["targets"]["cp311-manylinux-x86_64"]["unmet"]

    result = run_module(node_wheelhouse, args, capsys)
    target = result["targets"]["cp311-manylinux-x86_64"]
    assert result["changed"] and result["bytes"] == 0 and len(target["checksums"]) == 3
    assert set(target["checksums"][0]) == {"name", "sha256"}

    result = run_module(node_wheelhouse, dict(args, targets=["cp311-linux"]), capsys)
    assert result["rc"] == 1 and "not a node tag" in result["msg"]
