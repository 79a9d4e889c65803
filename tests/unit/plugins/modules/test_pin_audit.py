# SPDX-License-Identifier: GPL-3.0-or-later
"""pin_audit main(): a runtime that is not there is named; check mode is the same read. The module against real
runtimes: tests/functional/test_audit_lab.py."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.modules import pin_audit
from fixtures.module_runner import run_module

A = f"registry.example:5000/a@sha256:{'a' * 64}"


def test_a_socket_without_a_runtime_fails_naming_it(tmp_path, capsys):
    socket = tmp_path / "none.sock"
    args = dict(images=[A], cri_socket=str(socket), cri_connect_timeout=0.5, _ansible_check_mode=True)
    result = run_module(pin_audit, args, capsys)
    assert result["rc"] == 1 and result["failed"] and str(socket) in result["msg"]
