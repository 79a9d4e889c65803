# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-node PinnedImageSet status (MachineConfigNode shape) kept in a Node annotation."""

from __future__ import annotations

import json

import pytest

from ansible_collections.pinned.images.plugins.module_utils._openshift.node_status import (
    DEGRADED_CONDITION,
    MAX_ANNOTATION_SIZE,
    MAX_ERROR_LENGTH,
    PROGRESSING_CONDITION,
    StatusError,
    desired_generation,
    image_list_hash,
    parse_status,
    read_status,
    render_status,
    set_failures,
    summarise,
    update_status,
)
from fixtures.image_refs import A, B, C

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def conditions(status):
    return {c["type"]: c for c in status["conditions"]}


def item(status, name):
    return next(i for i in status["pinnedImageSets"] if i["name"] == name)


def test_a_first_run_reads_as_progressing_then_current():
    sets = [{"name": "worker", "images": [A, B]}]
    started = update_status({}, sets, "progressing", T0)
    assert item(started, "worker") == {"name": "worker", "desiredGeneration": 1}
    cond = conditions(started)
    assert cond[PROGRESSING_CONDITION]["status"] == "True"
    assert cond[PROGRESSING_CONDITION]["reason"] == "ImagePrefetch"
    assert cond[DEGRADED_CONDITION]["status"] == "False"
    assert summarise(started) == "progressing"

    done = update_status(started, sets, "done", T1, failures={"worker": None})
    assert item(done, "worker") == {"name": "worker", "desiredGeneration": 1, "currentGeneration": 1}
    cond = conditions(done)
    assert cond[PROGRESSING_CONDITION]["status"] == "False"
    assert cond[DEGRADED_CONDITION]["status"] == "False"
    # Degraded did not change status: its transition time stays.
    assert cond[DEGRADED_CONDITION]["lastTransitionTime"] == T0
    assert cond[PROGRESSING_CONDITION]["lastTransitionTime"] == T1
    assert summarise(done) == "current"


def test_an_unchanged_rerun_writes_the_same_bytes():
    sets = [{"name": "worker", "images": [A, B]}]
    done = update_status(update_status({}, sets, "progressing", T0), sets, "done", T1, failures={"worker": None})
    again_started = update_status(done, sets, "progressing", T2)
    again_done = update_status(again_started, sets, "done", T2, failures={"worker": None})
    assert render_status(again_started) == render_status(done)
    assert render_status(again_done) == render_status(done)


def test_a_failure_is_recorded_and_a_retry_reads_as_progressing_not_as_an_error():
    sets = [{"name": "worker", "images": [A, B]}]
    started = update_status({}, sets, "progressing", T0)
    failed = update_status(started, sets, "done", T1, failures={"worker": f"{B}: manifest unknown"})
    entry = item(failed, "worker")
    assert entry["lastFailedGeneration"] == 1
    assert "manifest unknown" in entry["lastFailedGenerationError"]
    assert "currentGeneration" not in entry
    assert conditions(failed)[DEGRADED_CONDITION]["status"] == "True"
    assert conditions(failed)[DEGRADED_CONDITION]["reason"] == "PrefetchFailed"
    assert summarise(failed) == "degraded"

    retry = update_status(failed, sets, "progressing", T2)
    entry = item(retry, "worker")
    assert "lastFailedGeneration" not in entry and "lastFailedGenerationError" not in entry
    assert conditions(retry)[DEGRADED_CONDITION]["status"] == "False"
    assert conditions(retry)[PROGRESSING_CONDITION]["status"] == "True"


def test_changed_images_raise_the_generation_and_an_old_failure_keeps_an_empty_error():
    one = [{"name": "worker", "images": [A]}]
    two = [{"name": "worker", "images": [A, C]}]
    status = update_status(update_status({}, one, "progressing", T0), one, "done", T0, failures={"worker": "boom"})
    status = update_status(status, two, "progressing", T1)
    entry = item(status, "worker")
    assert entry["desiredGeneration"] == 2 and entry["lastFailedGeneration"] == 1
    status = update_status(status, two, "done", T2, failures={"worker": None})
    entry = item(status, "worker")
    assert entry == {
        "name": "worker",
        "desiredGeneration": 2,
        "currentGeneration": 2,
        "lastFailedGeneration": 1,
        "lastFailedGenerationError": "",
    }


def test_cluster_generation_is_used_when_the_images_match():
    sets = [{"name": "worker", "images": [B, A]}]
    generations = {"worker": (7, image_list_hash([A, B]))}
    status = update_status({}, sets, "progressing", T0, cluster_generations=generations)
    assert item(status, "worker")["desiredGeneration"] == 7
    other = {"worker": (9, image_list_hash([C]))}
    status = update_status({}, sets, "progressing", T0, cluster_generations=other)
    assert item(status, "worker")["desiredGeneration"] == 1
    assert (
        update_status({}, [dict(sets[0], generation=4)], "progressing", T0)["pinnedImageSets"][0]["desiredGeneration"]
        == 4
    )


def test_generations_never_go_down():
    previous = {"name": "worker", "desiredGeneration": 5}
    assert desired_generation(previous, image_list_hash([A]), [A], cluster_generation=2) == 5
    assert desired_generation(previous, image_list_hash([A]), [B], cluster_generation=2) == 6
    assert desired_generation(None, None, [A]) == 1


def test_sets_that_left_the_node_are_dropped_and_names_are_checked():
    both = [{"name": "a", "images": [A]}, {"name": "b", "images": [B]}]
    status = update_status({}, both, "done", T0, failures={})
    assert [i["name"] for i in status["pinnedImageSets"]] == ["a", "b"]
    status = update_status(status, both[1:], "done", T1, failures={})
    assert [i["name"] for i in status["pinnedImageSets"]] == ["b"]
    assert list(status["imageListHashes"]) == ["b"]
    with pytest.raises(StatusError):
        update_status({}, [both[0], both[0]], "done", T0)
    with pytest.raises(StatusError):
        update_status({}, both, "finished", T0)


def test_set_failures_match_images_by_normalised_name():
    sets = [{"name": "a", "images": [A]}, {"name": "b", "images": [B, C]}]
    images = [
        {"image": A, "status": "present"},
        {"image": B, "status": "pulled"},
        {"image": C, "status": "failed", "error": "manifest unknown"},
    ]
    assert set_failures(sets, images, None) == {"a": None, "b": f"{C}: manifest unknown"}
    assert set_failures(sets, images, "runtime unreachable") == {"a": "runtime unreachable", "b": "runtime unreachable"}
    # A failure no set claims fails every set: nothing can be called done.
    stray = [{"image": "docker.io/library/busybox@sha256:" + "d" * 64, "status": "skipped", "error": "disk full"}]
    assert set(set_failures(sets, stray, None).values()) == {f"{stray[0]['image']}: disk full"}
    hub = [{"image": "docker.io/library/busybox@sha256:" + "d" * 64, "status": "failed", "error": "x"}]
    short = [{"name": "s", "images": ["busybox@sha256:" + "d" * 64]}, {"name": "t", "images": [A]}]
    assert set_failures(short, hub, None) == {"s": hub[0]["image"] + ": x", "t": None}


def test_errors_are_truncated_and_bad_annotations_are_ignored():
    sets = [{"name": "a", "images": [A]}]
    status = update_status({}, sets, "done", T0, failures={"a": "x" * (MAX_ERROR_LENGTH + 10)})
    assert len(item(status, "a")["lastFailedGenerationError"]) == MAX_ERROR_LENGTH
    oversized = json.dumps({"pinnedImageSets": [{"name": "a"}], "pad": "x" * MAX_ANNOTATION_SIZE})
    nested = "[" * 100_000 + "]" * 100_000
    for value in (None, "", "not json", "[1, 2]", json.dumps({"pinnedImageSets": [{"nope": 1}]}), oversized, nested):
        assert parse_status(value).get("pinnedImageSets", []) == []
    assert read_status(None) == ({}, None)
    for value, reason in (("not json", "not JSON"), ("[1, 2]", "not a JSON object"), (oversized, "bigger than")):
        status, problem = read_status(value)
        assert status == {} and reason in problem
    assert render_status(status) == json.dumps(status, sort_keys=True, separators=(",", ":"))


def test_a_node_error_without_sets_still_reads_as_degraded():
    status = update_status({}, [], "done", T0, failures={}, node_error="two custom pools select this node")
    assert status["pinnedImageSets"] == []
    degraded = conditions(status)[DEGRADED_CONDITION]
    assert degraded["status"] == "True" and "two custom pools" in degraded["message"]
