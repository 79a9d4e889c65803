# SPDX-License-Identifier: GPL-3.0-or-later
"""node_python_deps main(): report, unpack, check mode, refusals, removal."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.pinned.images.plugins.modules import node_python_deps
from fixtures.module_runner import run_module
from fixtures.wheels import make_wheel


def test_node_python_deps_module_reports_unpacks_and_removes(tmp_path, capsys):
    base = tmp_path / "python"
    info = run_module(node_python_deps, dict(path=str(base)), capsys)
    tag = info["interpreter"]["tag"]
    assert info["rc"] == 0 and not info["changed"] and info["importable"] is True
    assert info["pythonpath"] == str(base / tag / "site")

    (base / tag / "wheels").mkdir(parents=True)
    wheel = make_wheel(base / tag / "wheels")
    args = dict(path=str(base), state="present", wheels=[dict(name=Path(wheel["path"]).name, sha256=wheel["sha256"])])
    assert run_module(node_python_deps, args, capsys, check_mode=True)["changed"]
    assert not (base / tag / "site").exists()
    result = run_module(node_python_deps, args, capsys)
    assert result["changed"] and result["files"] >= 3
    assert not run_module(node_python_deps, args, capsys)["changed"]

    bad = dict(args, wheels=[dict(args["wheels"][0], sha256="0" * 64)])
    result = run_module(node_python_deps, bad, capsys)
    assert result["rc"] == 1 and "the wheelhouse has 000" in result["msg"]

    result = run_module(node_python_deps, dict(path=str(base), state="absent"), capsys)
    assert result["changed"] and not base.exists()
    assert run_module(node_python_deps, dict(path="relative"), capsys)["rc"] == 1
