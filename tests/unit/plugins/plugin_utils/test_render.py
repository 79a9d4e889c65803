# SPDX-License-Identifier: GPL-3.0-or-later
"""The render entry point: the API objects, why it must not write, the files it wrote, and the report (exact lists,
counts, per-pool images, errors told apart from drift)."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
from ansible_collections.pinned.images.plugins.plugin_utils._render import (
    display_path,
    merge_file_changes,
    render_changes,
    render_objects,
    render_problem,
    render_report,
    render_stale,
    render_written,
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


A = "quay.io/openshift/app-a@sha256:" + "a" * 64


B = "quay.io/openshift/app-b@sha256:" + "b" * 64


def test_render_objects_are_valid_api_objects_that_load_back_the_same():
    info = {
        "sets": [
            {
                "name": "worker-set",
                "labels": {"machineconfiguration.openshift.io/role": "worker"},
                "images": [B, A],
                "pool_selector": None,
            },
            {
                "name": "seed",
                "labels": {},
                "images": [A],
                "pool_selector": {"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}},
            },
        ],
        "pools": [
            {
                "name": "worker",
                "labels": {"pools.operator.machineconfiguration.openshift.io/worker": ""},
                "machine_config_selector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
                "node_selector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
                "pinned_image_sets": ["worker-set"],
            },
            {
                "name": "bare",
                "labels": {},
                "machine_config_selector": None,
                "node_selector": None,
                "pinned_image_sets": [],
            },
        ],
    }
    objects = render_objects(info)
    assert objects["sets"][0] == {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "PinnedImageSet",
        "metadata": {"name": "worker-set", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"pinnedImages": [{"name": B}, {"name": A}]},
    }
    assert objects["pools"][1]["spec"] == {"machineConfigSelector": {}, "nodeSelector": {}}
    sets, pools = load_sets(objects["sets"] + objects["pools"])
    assert [(s.name, list(s.images), s.pool_selector) for s in sets] == [
        (s["name"], s["images"], s["pool_selector"]) for s in info["sets"]
    ]
    assert [(p.name, list(p.pinned_image_sets)) for p in pools] == [("worker", ["worker-set"]), ("bare", [])]


OUT = "/repo/out"


SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}


SET_FILES = {
    "results": [
        {"path": f"{OUT}/pinnedimagesets/a.yaml", "file_changes": {"created": [f"{OUT}/pinnedimagesets/a.yaml"]}},
        {"path": f"{OUT}/pinnedimagesets/b.yaml", "file_changes": {"created": [], "changed": [], "removed": []}},
    ]
}


MACHINE_CONFIGS = {
    "files": [f"{OUT}/machineconfigs/99-worker-pinned-images.yaml"],
    "file_changes": {"changed": [f"{OUT}/machineconfigs/99-worker-pinned-images.yaml"]},
    "pools": [
        {
            "pool": "worker",
            "name": "99-worker-pinned-images",
            "image_count": 2,
            "set_names": ["a"],
            "added": ["x"],
            "removed": [],
        }
    ],
}


def found(*paths):
    return {"files": [{"path": path} for path in paths]}


def test_stale_files_are_those_found_and_not_written():
    everything = found(
        f"{OUT}/pinnedimagesets/z.yml",
        f"{OUT}/pinnedimagesets/a.yaml",
        f"{OUT}/machineconfigs/old.yaml",
        f"{OUT}/machineconfigs/99-worker-pinned-images.yaml",
        f"{OUT}/pinnedimagesets/b.yaml",
    )
    assert render_stale(everything, render_written(SET_FILES, MACHINE_CONFIGS)) == [
        f"{OUT}/machineconfigs/old.yaml",
        f"{OUT}/pinnedimagesets/z.yml",
    ]
    # Skipped tasks wrote nothing: every file found is stale.
    assert render_stale(found(f"{OUT}/pinnedimagesets/a.yaml"), render_written({"results": []}, SKIPPED)) == [
        f"{OUT}/pinnedimagesets/a.yaml"
    ]
    assert render_stale(found(), render_written(None, None)) == []


def test_changes_feed_the_report_with_every_kind():
    removed = {
        "results": [
            {"item": f"{OUT}/machineconfigs/old.yaml", "changed": True},
            {"item": f"{OUT}/machineconfigs/gone.yaml", "changed": False},
        ]
    }
    changes = render_changes(SET_FILES, MACHINE_CONFIGS, removed)
    report = render_report(changes, pools=MACHINE_CONFIGS["pools"], dest=OUT, check_mode=True)
    assert report["status"] == "drift"
    assert report["created"] == [f"{OUT}/pinnedimagesets/a.yaml"]
    assert report["changed"] == [f"{OUT}/machineconfigs/99-worker-pinned-images.yaml"]
    assert report["removed"] == [f"{OUT}/machineconfigs/old.yaml"]
    assert report["pools"] == [
        {
            "pool": "worker",
            "machine_config": "99-worker-pinned-images",
            "image_count": 2,
            "set_names": ["a"],
            "added": ["x"],
            "removed": [],
        }
    ]


def test_skipped_tasks_give_no_changes():
    changes = render_changes(SKIPPED, SKIPPED, {"results": []})
    assert render_report(changes, dest=OUT)["status"] == "clean"


def test_a_render_of_no_set_fails_naming_the_sources_unless_allowed():
    sources = {"cluster_sets": ["sets/"], "cluster_read_cluster": True}
    assert render_problem({"sets": [], "pools": []}, sources, "/out") == (
        "the sources hold no PinnedImageSet: looked at cluster_sets (sets/) and the cluster, so the render would "
        "remove every file of /out/pinnedimagesets and /out/machineconfigs; nothing was changed. Check the paths, "
        "or cluster_render_allow_empty=true to render the empty state"
    )
    assert render_problem({"sets": []}, sources, "/out", allow_empty=True) == ""
    assert render_problem({"sets": [{"name": "s"}]}, sources, "/out") == ""
