# SPDX-License-Identifier: GPL-3.0-or-later
"""_openshift.mco_node: the signs that the machine-config-operator manages a node, with and without them, in a
directory of the test's own (the daemon's files written out as the MCO writes them)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.pinned.images.plugins.module_utils._openshift.mco_node import dropin_decision, mco_sign

ANNOTATION = "machineconfiguration.openshift.io/currentConfig"
# What storeCurrentConfigOnDisk writes: json.Marshal of the MachineConfig (no apiVersion/kind from a lister).
CURRENT_CONFIG = json.dumps(
    {
        "metadata": {"name": "rendered-worker-0a1b", "creationTimestamp": None},
        "spec": {"config": {"ignition": {"version": "3.5.0"}}, "osImageURL": ""},
    }
)
# What the Machine Config Server puts in the node's Ignition (getNodeAnnotation).
ANNOTATIONS = json.dumps(
    {
        ANNOTATION: "rendered-worker-0a1b",
        "machineconfiguration.openshift.io/desiredConfig": "rendered-worker-0a1b",
        "machineconfiguration.openshift.io/state": "Done",
    }
)


@pytest.mark.parametrize(
    "files, found",
    [
        ({"currentconfig": CURRENT_CONFIG}, "currentconfig holds MachineConfig rendered-worker-0a1b"),
        ({"node-annotations.json": ANNOTATIONS}, "node-annotations.json holds the node annotations"),
        # Renamed after the first boot: the MCO's own name, singular.
        ({"node-annotation.json.bak": ANNOTATIONS}, "node-annotation.json.bak holds"),
        ({"currentconfig": "", "node-annotation.json.bak": ANNOTATIONS}, "(currentConfig rendered-worker-0a1b)"),
    ],
)
def test_the_signs(tmp_path, files, found):
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    sign = mco_sign(str(tmp_path))
    assert sign is not None and found in sign and str(tmp_path) in sign


@pytest.mark.parametrize(
    "files",
    [
        {},
        # HyperShift nodes keep an empty currentconfig; a stray or foreign file is no sign either.
        {"currentconfig": ""},
        {"currentconfig": "not json"},
        {"currentconfig": json.dumps({"spec": {}})},
        {"currentconfig": json.dumps(["a"])},
        {"node-annotations.json": json.dumps({ANNOTATION: ""})},
        {"node-annotations.json": json.dumps({"other": "x"})},
        {"node-annotation.json": ANNOTATIONS},
    ],
)
def test_no_sign(tmp_path, files):
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    assert mco_sign(str(tmp_path)) is None
    assert mco_sign(str(tmp_path / "missing")) is None


def test_an_unreadable_path_is_no_sign(tmp_path):
    (tmp_path / "currentconfig").mkdir()
    assert mco_sign(str(tmp_path)) is None


def test_the_decision(tmp_path):
    assert dropin_decision(True, str(tmp_path)) == (True, None, [])
    (tmp_path / "currentconfig").write_text(CURRENT_CONFIG)
    write, sign, warnings = dropin_decision(True, str(tmp_path))
    assert not write and sign and warnings == []
    write, sign, warnings = dropin_decision(False, str(tmp_path))
    assert write and len(warnings) == 1 and sign in warnings[0] and "last writer wins" in warnings[0]
