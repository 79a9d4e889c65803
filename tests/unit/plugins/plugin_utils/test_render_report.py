# SPDX-License-Identifier: GPL-3.0-or-later
"""The render report: exact lists, counts, per-pool images, and errors told apart from drift."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.plugin_utils._render import (
    display_path,
    merge_file_changes,
    render_report,
)

BASE = "/repo"
MC = "/repo/out/machineconfigs"


def test_merge_keeps_each_path_once_and_sorts():
    merged = merge_file_changes(
        [
            {"created": [], "changed": [f"{MC}/b.yaml"], "removed": []},
            None,
            {"created": [f"{MC}/c.yaml", f"{MC}/a.yaml"], "changed": [], "removed": []},
            {"removed": [f"{MC}/stray.yml"]},
            {"changed": [f"{MC}/b.yaml"]},
        ]
    )
    assert merged == {
        "created": [f"{MC}/a.yaml", f"{MC}/c.yaml"],
        "changed": [f"{MC}/b.yaml"],
        "removed": [f"{MC}/stray.yml"],
    }


@pytest.mark.parametrize(
    "path, shown",
    [
        ("/repo/out/x.yaml", "out/x.yaml"),
        ("/repo", "."),
        ("/repository/x.yaml", "/repository/x.yaml"),
        ("/elsewhere/x.yaml", "/elsewhere/x.yaml"),
        ("out/x.yaml", "out/x.yaml"),
    ],
)
def test_paths_are_shown_relative_to_the_checkout(path, shown):
    assert display_path(path, BASE) == shown


def test_drift_in_check_mode_lists_each_kind_with_counts():
    pools = [
        {
            "pool": "worker",
            "name": "99-worker-pinned-images",
            "image_count": 2,
            "added": ["c"],
            "removed": ["b"],
            "set_names": ["w"],
        }
    ]
    report = render_report(
        [
            {"changed": [f"{MC}/99-worker-pinned-images.yaml"]},
            {"created": ["/repo/out/pinnedimagesets/w.yaml"]},
            {"removed": [f"{MC}/stray.yml"]},
        ],
        pools=pools,
        dest="/repo/out",
        check_mode=True,
        base=BASE,
    )
    assert report["status"] == "drift" and report["error"] is None and report["version"] == 1
    assert report["counts"] == {"created": 1, "changed": 1, "removed": 1}
    assert report["changed"] == ["out/machineconfigs/99-worker-pinned-images.yaml"]
    assert report["created"] == ["out/pinnedimagesets/w.yaml"]
    assert report["removed"] == ["out/machineconfigs/stray.yml"]
    assert report["pools"] == [
        {
            "pool": "worker",
            "machine_config": "99-worker-pinned-images",
            "image_count": 2,
            "set_names": ["w"],
            "added": ["c"],
            "removed": ["b"],
        }
    ]
    assert report["message"].startswith("out differs from what the render writes")
    assert "1 changed, 1 created, 1 removed" in report["message"]


@pytest.mark.parametrize("check_mode, status", [(True, "clean"), (False, "clean")])
def test_nothing_differs_is_clean(check_mode, status):
    report = render_report(
        [{"created": [], "changed": [], "removed": []}], dest="/repo/out", check_mode=check_mode, base=BASE
    )
    assert report["status"] == status and report["counts"] == {"created": 0, "changed": 0, "removed": 0}
    assert "no drift" in report["message"]


def test_a_real_run_that_writes_is_updated_not_drift():
    report = render_report([{"created": [f"{MC}/a.yaml"]}], dest="/repo/out", check_mode=False, base=BASE)
    assert report["status"] == "updated" and report["created"] == ["out/machineconfigs/a.yaml"]


def test_an_error_is_not_drift_and_keeps_the_problems():
    failed = {
        "failed": True,
        "msg": "2 problems found",
        "task": "Read the PinnedImageSets and the pools",
        "problems": ["/repo/sets/bad.yaml: metadata.name 'Bad' is not valid", "/repo/sets/bad.yaml: tag"],
    }
    report = render_report([], dest="/repo/out", check_mode=True, error=failed, base=BASE)
    assert report["status"] == "error" and report["counts"] == {"created": 0, "changed": 0, "removed": 0}
    assert report["error"] == {
        "msg": "2 problems found",
        "problems": failed["problems"],
        "task": "Read the PinnedImageSets and the pools",
    }
    assert "not drift" in report["message"] and "/repo/sets/bad.yaml: tag" in report["message"]
    assert render_report([], error="boom")["error"] == {"msg": "boom", "problems": [], "task": None}
