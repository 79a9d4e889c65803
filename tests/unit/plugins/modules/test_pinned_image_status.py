# SPDX-License-Identifier: GPL-3.0-or-later
"""pinned_image_status main() against the fake API server: the Node annotation write is conditional on the
resourceVersion read, so a concurrent writer causes a 409 and a fresh read, never a lost update."""

from __future__ import annotations

import json

import pytest

from ansible_collections.pinned.images.plugins.modules import pinned_image_status as module
from fixtures.module_runner import run_module

ANNOTATION = "pinned.images/pinned-image-sets"
IMAGE = "quay.io/openshift/app-a@sha256:" + "a" * 64
NODES = [
    {
        "name": "n1",
        "state": "done",
        "sets": [{"name": "s", "images": [IMAGE]}],
        "images": [{"image": IMAGE, "status": "pulled"}],
    }
]


def other_writer_status(generation):
    """What another run wrote meanwhile: set s at desiredGeneration ``generation`` for the same images."""
    from ansible_collections.pinned.images.plugins.module_utils._openshift.node_status import image_list_hash

    return json.dumps(
        {
            "pinnedImageSets": [{"name": "s", "desiredGeneration": generation}],
            "conditions": [],
            "imageListHashes": {"s": image_list_hash([IMAGE])},
        }
    )


@pytest.fixture
def cluster(fake_apiserver):
    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    return {"host": fake_apiserver.url, "api_key": fake_apiserver.token, "cluster_generations": False}


def bump_node_on_patch(fake, times):
    """Before each of the first ``times`` PATCHes of n1, change its annotation as another writer would."""
    seen = []

    def hook(record):
        if record.method == "PATCH" and record.path == "/api/v1/nodes/n1" and len(seen) < times:
            seen.append(record.body["metadata"]["resourceVersion"])
            node = fake.objects[("Node", "n1")]
            node["metadata"].setdefault("annotations", {})[ANNOTATION] = other_writer_status(5 + len(seen))
            node["metadata"]["resourceVersion"] = fake._next_rv()

    fake.on_request(hook)
    return seen


def test_a_concurrent_write_is_read_again_not_overwritten(fake_apiserver, cluster, capsys):
    seen = bump_node_on_patch(fake_apiserver, 1)
    result = run_module(module, dict(cluster, nodes=NODES), capsys)
    assert result["rc"] == 0, result
    patches = [r for r in fake_apiserver.requests if r.method == "PATCH"]
    assert [r.status for r in patches] == [409, 200]
    assert patches[1].body["metadata"]["resourceVersion"] != seen[0]
    written = json.loads(fake_apiserver.get("Node", "n1")["metadata"]["annotations"][ANNOTATION])
    # Computed from the other writer's status: its generation counter (6) is kept, not restarted at 1.
    assert written["pinnedImageSets"] == [{"name": "s", "desiredGeneration": 6, "currentGeneration": 6}]


def test_a_writer_that_never_stops_fails_the_task_clearly(fake_apiserver, cluster, capsys):
    bump_node_on_patch(fake_apiserver, 99)
    result = run_module(module, dict(cluster, nodes=NODES), capsys)
    assert result["rc"] == 1
    assert result["msg"] == (
        "node n1: its status annotation changed 3 times while this task wrote it; is another run writing it too?"
    )
    assert [r.status for r in fake_apiserver.requests if r.method == "PATCH"] == [409, 409, 409]


def test_a_node_deleted_during_the_write_is_reported_missing(fake_apiserver, cluster, capsys):
    def delete_n1(record):
        if record.method == "PATCH" and ("Node", "n1") in fake_apiserver.objects:
            fake_apiserver.objects[("Node", "n1")]["metadata"]["resourceVersion"] = fake_apiserver._next_rv()
            fake_apiserver.on_request(lambda r: fake_apiserver.objects.pop(("Node", "n1"), None))

    fake_apiserver.on_request(delete_n1)
    result = run_module(module, dict(cluster, nodes=NODES), capsys)
    assert result["rc"] == 0, result
    assert result["missing"] == ["n1"] and result["nodes"] == []


def test_a_plain_write_needs_one_patch_and_a_rerun_none(fake_apiserver, cluster, capsys):
    first = run_module(module, dict(cluster, nodes=NODES), capsys)
    assert first["changed"] is True
    again = run_module(module, dict(cluster, nodes=NODES), capsys)
    assert again["changed"] is False
    assert len([r for r in fake_apiserver.requests if r.method == "PATCH"]) == 1


def test_an_unreadable_annotation_is_a_warning_not_a_silent_reset(fake_apiserver, cluster, capsys):
    fake_apiserver.objects[("Node", "n1")]["metadata"]["annotations"] = {ANNOTATION: "{not json"}
    result = run_module(module, dict(cluster, nodes=NODES), capsys)
    assert result["rc"] == 0, result
    assert any(
        "node n1: the status annotation is not JSON; its generation counters start again" in str(w)
        for w in result.get("warnings", [])
    )
    written = json.loads(fake_apiserver.get("Node", "n1")["metadata"]["annotations"][ANNOTATION])
    assert written["pinnedImageSets"] == [{"name": "s", "desiredGeneration": 1, "currentGeneration": 1}]


def test_a_failure_keeps_the_result_so_far_and_the_warnings(fake_apiserver, cluster, capsys):
    fake_apiserver.objects[("Node", "n1")]["metadata"]["annotations"] = {ANNOTATION: "{not json"}
    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
    nodes = NODES + [dict(NODES[0], name="n2", sets=[{"name": "s", "images": [IMAGE]}, {"name": "s", "images": []}])]
    result = run_module(module, dict(cluster, nodes=nodes), capsys)
    assert result["rc"] == 1
    assert result["msg"] == "node n2: set 's' is listed twice" and result["problems"] == [result["msg"]]
    assert [node["name"] for node in result["nodes"]] == ["n1"] and result["changed"] is True
    assert any("node n1: the status annotation is not JSON" in str(w) for w in result.get("warnings", []))
