# SPDX-License-Identifier: GPL-3.0-or-later
"""containerd_pinned_images main(): options, refusals that write nothing, check and diff mode, result shape.

A scripted containerd stands in for the runtime here; tests/functional/test_containerd_pins_lab.py runs the module
against real containerd 1.6 and 1.7.
"""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import OWNER_LABEL_KEY, PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._runs import containerd_pinned_images as containerd_run
from ansible_collections.pinned.images.plugins.modules import containerd_pinned_images as module
from fixtures.image_refs import A, B, C
from fixtures.module_runner import run_module
from fixtures.scripted_runtime import ScriptedRuntime

OWN = {PIN_LABEL_KEY: "pinned", OWNER_LABEL_KEY: "pinned.images"}


class ScriptedContainerd(ScriptedRuntime):
    """Images by name -> (image id, labels of each record); CRI reports pinned when any record is."""

    runtime_name = "containerd"
    report_pins = True

    def __init__(self, images, runtime_version="1.7.24"):
        self.runtime_version = runtime_version
        self.records = {}
        for name, labels in images.items():
            image_id = "sha256:" + name[-64:]
            for record in (name, image_id):
                self.records[record] = dict(
                    name=record, labels=dict(labels), target=dict(media_type="m", digest=name.split("@")[1], size=1)
                )
        self.updates = []

    def image_status(self, name):
        if name not in self.records:
            return None
        digest = self.records[name]["target"]["digest"]
        group = [r for r in self.records.values() if r["target"]["digest"] == digest]
        pinned = self.report_pins and any(r["labels"].get(PIN_LABEL_KEY) == "pinned" for r in group)
        names = sorted(r["name"] for r in group)
        return dict(
            id=names[-1] if names[-1].startswith("sha256:") else names[0],
            repo_tags=[],
            repo_digests=[n for n in names if "@" in n],
            size=1,
            pinned=pinned,
        )

    def list_records(self):
        return [dict(r, labels=dict(r["labels"])) for r in self.records.values()]

    def update_labels(self, record, labels, keys):
        self.updates.append((record["name"], dict(labels)))
        stored = self.records[record["name"]]["labels"]
        for key in keys:
            if key in labels:
                stored[key] = labels[key]
            else:
                stored.pop(key, None)
        return self.records[record["name"]]


@pytest.fixture
def runtime(monkeypatch):
    def install(images, version="1.7.24"):
        fake = ScriptedContainerd(images, version)
        monkeypatch.setattr(containerd_run, "containerd_client", lambda params: fake)
        return fake

    return install


def test_pins_every_record_and_reruns_unchanged(runtime, capsys):
    fake = runtime({A: {}, B: {}})
    result = run_module(module, dict(images=[B, A]), capsys)
    assert result["rc"] == 0, result
    assert (result["changed"], result["pinned"], result["unchanged"]) == (True, [A, B], [])
    assert sorted(result["records"]["pinned"]) == sorted([A, B, "sha256:" + "a" * 64, "sha256:" + "b" * 64])
    assert all(fake.records[n]["labels"] == OWN for n in result["records"]["pinned"])
    fake.updates.clear()

    result = run_module(module, dict(images=[A, B]), capsys)
    assert (result["changed"], result["pinned"], result["unchanged"]) == (False, [], [A, B])
    assert fake.updates == []


def test_check_mode_and_diff_write_nothing(runtime, capsys):
    fake = runtime({A: {}, B: dict(OWN)})
    result = run_module(module, dict(images=[A]), capsys, check_mode=True, diff=True)
    assert result["rc"] == 0, result
    assert (result["changed"], result["pinned"], result["unpinned"]) == (True, [A], [B])
    assert fake.updates == []
    assert B in result["diff"]["before"] and A not in result["diff"]["before"]
    assert A in result["diff"]["after"] and B not in result["diff"]["after"]


def test_only_own_pins_are_removed(runtime, capsys):
    fake = runtime({A: dict(OWN), B: {PIN_LABEL_KEY: "pinned"}})
    result = run_module(module, dict(state="absent"), capsys)
    assert result["rc"] == 0, result
    assert result["unpinned"] == [A]
    assert fake.records[A]["labels"] == {}
    assert fake.records[B]["labels"] == {PIN_LABEL_KEY: "pinned"}


def test_an_empty_list_unpins_nothing_unless_allowed(runtime, capsys):
    fake = runtime({A: dict(OWN)})
    refused = run_module(module, dict(images=[]), capsys)
    assert refused["rc"] == 1 and refused["msg"].startswith(
        "images is empty: that would unpin every image pinned.images pinned; nothing was changed."
    )
    assert fake.updates == [] and fake.records[A]["labels"] == OWN
    allowed = run_module(module, dict(images=[], allow_empty=True), capsys)
    assert allowed["rc"] == 0 and allowed["unpinned"] == [A]


def test_missing_images_are_refused_and_nothing_is_written(runtime, capsys):
    fake = runtime({A: {}})
    result = run_module(module, dict(images=[A, C]), capsys)
    assert result["rc"] == 1
    assert result["missing"] == [C] and C in result["msg"] and "force" in result["msg"]
    assert fake.updates == []

    result = run_module(module, dict(images=[A, C], force=True), capsys)
    assert result["rc"] == 0, result
    assert (result["images"], result["pinned"], result["missing"]) == ([A], [A], [C])


def test_old_containerd_fails_or_warns(runtime, capsys):
    fake = runtime({A: {}}, version="1.6.20~ds1")
    result = run_module(module, dict(images=[A]), capsys)
    assert result["rc"] == 1
    assert "containerd 1.6.20~ds1 will not honour the pin" in result["msg"]
    assert fake.updates == []

    result = run_module(module, dict(images=[A], old_containerd="warn"), capsys)
    assert result["rc"] == 0, result
    assert "will not honour the pin" in str(result["warnings"])
    assert result["pinned"] == [A]


def test_the_former_name_old_runtime_still_works(runtime, capsys):
    fake = runtime({A: {}}, version="1.6.20~ds1")
    result = run_module(module, dict(images=[A], old_runtime="warn"), capsys)
    assert result["rc"] == 0 and result["pinned"] == [A] and fake.updates, result
    assert "labels set anyway (old_containerd=warn)" in str(result["warnings"])


def test_a_pin_cri_never_reports_fails_after_the_settle_timeout(runtime, capsys, monkeypatch):
    runtime({A: {}})
    monkeypatch.setattr(ScriptedContainerd, "report_pins", False)
    result = run_module(module, dict(images=[A], settle_timeout=0.2), capsys)
    assert result["rc"] == 1
    assert result["msg"].startswith("cannot pin on containerd: the labels are written")
    assert f"CRI still reports {A} as not pinned" in result["msg"]
    # The labels were written: the failure says so.
    assert result["changed"] and result["images"] == [A] and A in result["records"]["pinned"]


@pytest.mark.parametrize(
    "images, problem",
    [
        (["quay.io/org/*"], "is a pattern"),
        (["quay.io/org/a:v1"], "not pinned by digest"),
    ],
)
def test_bad_images_fail_before_the_runtime_is_asked(runtime, capsys, images, problem):
    fake = runtime({A: {}})
    result = run_module(module, dict(images=images, require_digest=False if "*" in images[0] else True), capsys)
    assert result["rc"] == 1
    assert problem in result["msg"]
    assert fake.updates == []


def test_sets_select_the_images(runtime, capsys):
    runtime({A: {}, B: {}})
    worker = dict(
        apiVersion="machineconfiguration.openshift.io/v1",
        kind="PinnedImageSet",
        metadata=dict(name="worker-set", labels={"machineconfiguration.openshift.io/role": "worker"}),
        spec=dict(pinnedImages=[dict(name=A)]),
    )
    master = dict(
        worker,
        metadata=dict(name="master-set", labels={"machineconfiguration.openshift.io/role": "master"}),
        spec=dict(pinnedImages=[dict(name=B)]),
    )
    result = run_module(module, dict(sets=[worker, master], pools=["worker"]), capsys)
    assert result["rc"] == 0, result
    assert (result["images"], result["set_names"]) == ([A], ["worker-set"])
