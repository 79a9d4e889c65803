# SPDX-License-Identifier: GPL-3.0-or-later
"""_containerd_pins: version rules and input checks (the label sync itself runs on real containerd in
tests/functional/test_containerd_pins_lab.py)."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import (
    parse_version,
    runtime_problem,
    validate_images,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import PinnedImagesError

A = "quay.io/org/a@sha256:" + "a" * 64


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("1.7.24~ds1", (1, 7, 24)),
        ("v1.7.3", (1, 7, 3)),
        ("1.6.20~ds1", (1, 6, 20)),
        ("2.0.0-rc.1", (2, 0, 0)),
        ("", None),
        ("devel", None),
    ],
)
def test_parse_version(text, parsed):
    assert parse_version(text) == parsed


@pytest.mark.parametrize(
    "version, honoured", [("1.7.3", True), ("v1.7.24", True), ("2.1.0", True), ("1.7.2", False), ("1.6.20~ds1", False)]
)
def test_only_containerd_173_and_later_honours_the_label(version, honoured):
    problem = runtime_problem(dict(runtime_name="containerd", runtime_version=version))
    assert (problem is None) is honoured
    if not honoured:
        assert "will not honour the pin" in problem and version in problem and "1.7.3" in problem


def test_other_runtimes_and_unreadable_versions_are_named():
    crio = runtime_problem(dict(runtime_name="cri-o", runtime_version="1.30.0"))
    assert "not containerd" in crio
    # Both ways to pin on CRI-O: the module, and the prefetch's (and the node role's) drop-in pin.
    assert "pinned.images.crio_pinned_images" in crio and "pin=dropin or pin=auto" in crio and "node_pin" in crio
    assert "cannot read the containerd version 'devel'" in runtime_problem(
        dict(runtime_name="containerd", runtime_version="devel")
    )


def test_images_are_checked_and_patterns_refused():
    assert validate_images([A, A, ""]) == [A]
    with pytest.raises(PinnedImagesError, match="is a pattern"):
        validate_images(["quay.io/org/*"], require_digest=False)
    with pytest.raises(PinnedImagesError, match="not pinned by digest"):
        validate_images(["quay.io/org/a:v1"])
