# SPDX-License-Identifier: GPL-3.0-or-later
"""The render entry point: the API objects, why it must not write, the files it wrote, and the report (exact lists,
counts, per-pool images, errors told apart from drift)."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import rendered_text
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import dump_yaml
from ansible_collections.pinned.images.plugins.module_utils._openshift import disruption_policy
from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import render_machine_config
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
from ansible_collections.pinned.images.plugins.module_utils._sets.model import PinnedImageSet
from ansible_collections.pinned.images.plugins.plugin_utils._render import (
    display_path,
    merge_file_changes,
    render_changes,
    render_leftovers,
    render_objects,
    render_problem,
    render_report,
    render_written,
)
from fixtures.openshift_objects import USER_MACHINE_CONFIG

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
IMAGE = "quay.io/org/app@sha256:" + "a" * 64


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


def test_stale_files_are_those_found_and_not_written_that_the_render_owns(tmp_path):
    out = tmp_path / "out"
    (out / "pinnedimagesets").mkdir(parents=True)
    (out / "machineconfigs").mkdir()
    set_object = PinnedImageSet(name="old-images", labels={}, images=(IMAGE,)).to_dict()
    policy = disruption_policy.policy_file_object()
    machine_config = render_machine_config("infra", [IMAGE])
    files = {
        # Marked by a render: stale.
        "pinnedimagesets/old-images.yaml": rendered_text(set_object),
        "machineconfigs/99-infra-pinned-images.yaml": rendered_text(machine_config),
        # Unmarked, the exact bytes the version before the mark wrote: stale too.
        "pinnedimagesets/older-images.yaml": dump_yaml(dict(set_object, metadata={"name": "older-images"})),
        "machineconfigs/99-old-pinned-images.yaml": dump_yaml(render_machine_config("old", [IMAGE])),
        "machineconfigs/" + disruption_policy.POLICY_FILE_NAME: dump_yaml(policy),
        # The user's: a MachineConfig of their own (even as canonical YAML), plain YAML, a set under another name.
        "machineconfigs/99-master-ssh.yaml": USER_MACHINE_CONFIG,
        "machineconfigs/99-master-ssh-canonical.yaml": dump_yaml(
            dict(yaml.safe_load(USER_MACHINE_CONFIG), metadata={"name": "99-master-ssh-canonical"})
        ),
        "machineconfigs/keep.yml": "keep: true\n",
        "pinnedimagesets/keep.yml": "keep: true\n",
        "pinnedimagesets/renamed.yaml": dump_yaml(set_object),
        "pinnedimagesets/with-status.yaml": dump_yaml(dict(set_object, metadata={"name": "with-status"}, status={})),
    }
    for name, text in files.items():
        (out / name).write_text(text)
    written = render_written({"results": [{"path": str(out / "pinnedimagesets/a.yaml")}]}, SKIPPED)
    (out / "pinnedimagesets/a.yaml").write_text(rendered_text(set_object))
    found = {"files": [{"path": str(out / name)} for name in [*files, "pinnedimagesets/a.yaml"]]}
    assert render_leftovers(found, written) == {
        "stale": sorted(
            str(out / name)
            for name in (
                "pinnedimagesets/old-images.yaml",
                "machineconfigs/99-infra-pinned-images.yaml",
                "pinnedimagesets/older-images.yaml",
                "machineconfigs/99-old-pinned-images.yaml",
                "machineconfigs/" + disruption_policy.POLICY_FILE_NAME,
            )
        ),
        "not_ours": sorted(
            str(out / name)
            for name in (
                "machineconfigs/99-master-ssh.yaml",
                "machineconfigs/99-master-ssh-canonical.yaml",
                "machineconfigs/keep.yml",
                "pinnedimagesets/keep.yml",
                "pinnedimagesets/renamed.yaml",
                "pinnedimagesets/with-status.yaml",
            )
        ),
    }
    assert render_leftovers({"files": []}, written) == render_leftovers(None, []) == {"stale": [], "not_ours": []}


def test_the_users_files_are_named_in_the_report_and_message_and_are_never_drift():
    mine = [f"{OUT}/machineconfigs/99-master-ssh.yaml", f"{OUT}/pinnedimagesets/keep.yml"]
    check = render_report([], dest=f"{OUT}", check_mode=True, base=BASE, not_ours=mine)
    assert check["status"] == "clean" and check["not_ours"] == [
        "out/machineconfigs/99-master-ssh.yaml",
        "out/pinnedimagesets/keep.yml",
    ]
    assert check["message"] == (
        "out matches what the render writes: no drift; not ours, left: out/machineconfigs/99-master-ssh.yaml, "
        "out/pinnedimagesets/keep.yml"
    )
    updated = render_report([MACHINE_CONFIGS["file_changes"]], dest=OUT, not_ours=mine[:1])
    assert updated["message"].endswith(f"; not ours, left: {OUT}/machineconfigs/99-master-ssh.yaml")
    assert render_report([], dest=OUT)["not_ours"] == []


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
        "remove every file it wrote in /out/pinnedimagesets and /out/machineconfigs; nothing was changed. Check the paths, "
        "or cluster_render_allow_empty=true to render the empty state"
    )
    assert render_problem({"sets": []}, sources, "/out", allow_empty=True) == ""
    assert render_problem({"sets": [{"name": "s"}]}, sources, "/out") == ""
