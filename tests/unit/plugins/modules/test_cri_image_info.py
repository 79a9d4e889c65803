# SPDX-License-Identifier: GPL-3.0-or-later
"""cri_image_info main(): a runtime that is not there is named; without grpcio it fails, flagged for the role.
The module against real containerd runs in tests/functional/test_prefetch_lab.py and test_disk_guard_lab.py."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._node_python import deps
from ansible_collections.pinned.images.plugins.modules import cri_image_info
from fixtures.module_runner import run_module


def test_a_socket_without_a_runtime_fails_naming_it(tmp_path, capsys):
    socket = tmp_path / "none.sock"
    result = run_module(cri_image_info, dict(cri_socket=str(socket), cri_connect_timeout=0.5), capsys)
    assert result["rc"] == 1 and result["failed"]
    assert str(socket) in result["msg"] and result["problems"] == [result["msg"]]


def test_without_grpcio_it_fails_flagged_node_deps_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(deps, "HAS_NODE_DEPS", False)
    monkeypatch.setitem(deps.NODE_DEPS, "error", "cannot import grpc")
    monkeypatch.setenv(deps.ENV_DIR, str(tmp_path))
    result = run_module(cri_image_info, dict(cri_socket=str(tmp_path / "none.sock")), capsys)
    assert result["rc"] == 1 and result["failed"] and result["node_deps_missing"] is True
    assert result["msg"].startswith("grpcio and protobuf are missing for ")
    assert result["node_deps"]["problem"] == "cannot import grpc"
