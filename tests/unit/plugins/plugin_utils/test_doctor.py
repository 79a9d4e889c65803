# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/_doctor: the doctor playbook's lines of a node, from the module's result."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.filter.doctor import FilterModule
from ansible_collections.pinned.images.plugins.module_utils._doctor.checks import check_old_containerd
from ansible_collections.pinned.images.plugins.plugin_utils._doctor import report_lines

RUNTIME = dict(runtime_name="containerd", runtime_version="1.6.36", endpoint="/run/containerd/containerd.sock")


def test_the_runtime_then_each_finding_with_its_meaning_and_fix():
    findings = check_old_containerd("containerd", "1.6.36")
    lines = report_lines(
        dict(runtime=RUNTIME, checks=findings, notes=["kubelet config /x not read: y"]), "w1", "/usr/bin/python3"
    )
    assert lines[0] == "w1: containerd 1.6.36 at /run/containerd/containerd.sock: 1 error"
    assert lines[1] == "  error old_containerd: containerd 1.6.36"
    assert lines[2].startswith("    means: containerd before 1.7.3") and lines[3].startswith("    fix: upgrade")
    assert lines[4] == "  note: kubelet config /x not read: y"


def test_a_healthy_node_a_node_without_python_and_a_failed_call():
    healthy = report_lines(dict(runtime=RUNTIME, checks=[], notes=[]), "w1", "/usr/bin/python3")
    assert healthy == ["w1: containerd 1.6.36 at /run/containerd/containerd.sock: nothing voids a pin or a prefetch"]
    bare = report_lines(dict(skipped=True), "talos-1", "")
    assert bare[0] == "talos-1: 1 error" and bare[1] == "  error no_python: talos-1 has no python3"
    assert "cluster_node_access=pod" in bare[3]
    failed = report_lines(dict(failed=True, msg="no CRI socket found"), "w2", "/usr/bin/python3")
    assert failed == ["w2: the doctor could not ask the runtime: no CRI socket found"]


def test_the_filter_is_the_function():
    assert FilterModule().filters()["doctor_report"](dict(skipped=True), "h", "/usr/bin/python3") == [
        "h: the doctor did not run"
    ]
