# SPDX-License-Identifier: GPL-3.0-or-later
"""The render entry point's filters: the files written, the stale files and the changes for the report."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.filter.render import FilterModule

F = FilterModule().filters()
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
    assert F["render_stale"](everything, SET_FILES, MACHINE_CONFIGS) == [
        f"{OUT}/machineconfigs/old.yaml",
        f"{OUT}/pinnedimagesets/z.yml",
    ]
    # Skipped tasks wrote nothing: every file found is stale.
    assert F["render_stale"](found(f"{OUT}/pinnedimagesets/a.yaml"), {"results": []}, SKIPPED) == [
        f"{OUT}/pinnedimagesets/a.yaml"
    ]
    assert F["render_stale"](found()) == []


def test_changes_feed_the_report_with_every_kind():
    removed = {
        "results": [
            {"item": f"{OUT}/machineconfigs/old.yaml", "changed": True},
            {"item": f"{OUT}/machineconfigs/gone.yaml", "changed": False},
        ]
    }
    changes = F["render_changes"](SET_FILES, MACHINE_CONFIGS, removed)
    report = F["render_report"](changes, pools=MACHINE_CONFIGS["pools"], dest=OUT, check_mode=True)
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
    changes = F["render_changes"](SKIPPED, SKIPPED, {"results": []})
    assert F["render_report"](changes, dest=OUT)["status"] == "clean"


def test_a_render_of_no_set_fails_naming_the_sources_unless_allowed():
    problem = F["render_problem"]
    sources = {"cluster_sets": ["sets/"], "cluster_read_cluster": True}
    assert problem({"sets": [], "pools": []}, sources, "/out") == (
        "the sources hold no PinnedImageSet: looked at cluster_sets (sets/) and the cluster, so the render would "
        "remove every file of /out/pinnedimagesets and /out/machineconfigs; nothing was changed. Check the paths, "
        "or cluster_render_allow_empty=true to render the empty state"
    )
    assert problem({"sets": []}, sources, "/out", allow_empty=True) == ""
    assert problem({"sets": [{"name": "s"}]}, sources, "/out") == ""
