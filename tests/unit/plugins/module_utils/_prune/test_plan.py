# SPDX-License-Identifier: GPL-3.0-or-later
"""_prune/plan: which images go, with plain data: CRI images, ListContainers entries, the record's names."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._prune.plan import (
    IN_USE,
    KEEP,
    KEEP_PATTERN,
    OTHER_NAMES,
    PINNED,
    REMOVE,
    WANTED,
    YOUNG,
    PruneInputError,
    decide,
    group_candidates,
    parse_duration,
    totals,
    validate_keep,
)

A = "quay.io/org/a@sha256:" + "a" * 64
B = "quay.io/org/b@sha256:" + "b" * 64
B_TAG = "quay.io/org/b:1.0"


def image(image_id, *digests, tags=(), size=100):
    return dict(id=image_id, repo_tags=list(tags), repo_digests=list(digests), size=size, pinned=False)


def candidates():
    # B is recorded under its tag and its digest: the decision names it by the first, B_TAG.
    b = image("sha256:2", B, tags=[B_TAG], size=20)
    return group_candidates({A: image("sha256:1", A, size=10), B: b, B_TAG: b})


def container(name, state, image="", image_ref="", image_id=""):
    return dict(id=name + "0" * 20, name=name, state=state, image=image, image_ref=image_ref, image_id=image_id)


def reasons(decisions):
    return {d["image"]: (d["action"], d["reason"]) for d in decisions}


def test_unused_recorded_images_are_removed_with_their_sizes():
    decisions = decide(candidates(), set(), [])
    assert reasons(decisions) == {A: (REMOVE, None), B_TAG: (REMOVE, None)}
    assert totals(decisions) == dict(removed=2, kept=0, freed_bytes=30)


def test_names_of_one_image_make_one_decision_and_an_absent_one_none():
    grouped = group_candidates({A: image("sha256:1", A), B: image("sha256:1", A, B), "quay.io/gone:1": None})
    assert [(c["id"], c["names"]) for c in grouped] == [("sha256:1", [A, B])]


@pytest.mark.parametrize("state", ["running", "exited", "created", "unknown"])
@pytest.mark.parametrize(
    "used",
    [dict(image="sha256:2"), dict(image_ref=B), dict(image_id="sha256:2"), dict(image=B_TAG)],
    ids=["spec-id", "image-ref-digest", "image-id", "tag"],
)
def test_a_container_in_any_state_keeps_its_image_by_any_name(state, used):
    decisions = decide(candidates(), set(), [container("web", state, **used)])
    assert reasons(decisions) == {A: (REMOVE, None), B_TAG: (KEEP, IN_USE)}
    assert decisions[1]["detail"] == f"used by container web ({state})"


def test_the_reasons_in_their_order():
    found = candidates()
    # Wanted under another name first, then keep, in use, pinned by others, young.
    assert reasons(decide(found, {"sha256:1"}, [], keep=["quay.io/org/a*"]))[A] == (KEEP, WANTED)
    assert reasons(decide(found, set(), [container("c", "running", image=A)], keep=["*/a@*"]))[A] == (
        KEEP,
        KEEP_PATTERN,
    )
    assert reasons(decide(found, set(), [], pinned_by_others={"sha256:1"}))[A] == (KEEP, PINNED)
    young = decide(found, set(), [], min_age=3600, ages={"sha256:1": 60.0, "sha256:2": 7200.0})
    assert reasons(young) == {A: (KEEP, YOUNG), B_TAG: (REMOVE, None)}
    assert young[0]["detail"] == "60s old, younger than min_age (3600s)"
    # An unknown age keeps nothing for its age.
    assert reasons(decide(found, set(), [], min_age=3600, ages={}))[A] == (REMOVE, None)


def test_keep_matches_tags_too():
    decisions = decide(candidates(), set(), [], keep=["quay.io/org/b:*"])
    assert reasons(decisions)[B_TAG] == (KEEP, KEEP_PATTERN)
    assert decisions[1]["detail"] == f"{B_TAG} matches keep pattern 'quay.io/org/b:*'"


@pytest.mark.parametrize(
    "text, seconds", [("0", 0), ("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1.5d", 129600)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-1h", "2w", "1h30m"])
def test_a_bad_duration_names_the_option_and_the_form(text):
    with pytest.raises(PruneInputError, match=r"^min_age: .* is not a duration; give a number with an optional unit"):
        parse_duration(text)


def test_bad_keep_patterns_are_named_together():
    assert validate_keep([" quay.io/*", "x"]) == ["quay.io/*", "x"]
    with pytest.raises(PruneInputError) as info:
        validate_keep(["ok", "", 3])
    assert [p.split(":")[0] for p in info.value.problems] == ["keep[1]", "keep[2]"]


def test_an_image_with_a_name_the_record_does_not_have_is_kept():
    # Recorded by digest; someone pulled the same image under a tag, or it carries another repository's digest.
    tagged = group_candidates({A: image("sha256:1", A, tags=["quay.io/org/a:by-hand"])})
    assert reasons(decide(tagged, set(), [])) == {A: (KEEP, OTHER_NAMES)}
    moved = group_candidates({A: image("sha256:1", A, "quay.io/other/a@sha256:" + "a" * 64)})
    assert reasons(decide(moved, set(), [])) == {A: (KEEP, OTHER_NAMES)}
    # A recorded tag implies its own repository's digest.
    own = group_candidates({B_TAG: image("sha256:2", B, tags=[B_TAG])})
    assert reasons(decide(own, set(), [])) == {B_TAG: (REMOVE, None)}


def test_ids_compare_with_or_without_sha256():
    hexid = "e" * 64
    crio = group_candidates({A: image(hexid, A)})
    assert reasons(decide(crio, set(), [container("c", "running", image_id="sha256:" + hexid)]))[A] == (KEEP, IN_USE)
    containerd = group_candidates({A: image("sha256:" + hexid, A)})
    assert reasons(decide(containerd, set(), [container("c", "running", image_ref=hexid)]))[A] == (KEEP, IN_USE)
    assert reasons(decide(containerd, {hexid}, []))[A] == (KEEP, WANTED)
    assert reasons(decide(crio, set(), [], pinned_by_others={"sha256:" + hexid}))[A] == (KEEP, PINNED)


def test_a_wanted_digest_under_another_repository_keeps_the_image():
    mirror = "mirror.example/org/a@sha256:" + "a" * 64
    decisions = decide(candidates(), set(), [], wanted_names=[mirror])
    assert reasons(decisions)[A] == (KEEP, WANTED) and reasons(decisions)[B_TAG] == (REMOVE, None)


def test_the_pause_image_is_in_use():
    decisions = decide(candidates(), set(), [], sandbox_ids={"2"})
    assert reasons(decisions)[B_TAG] == (KEEP, IN_USE)
