# SPDX-License-Identifier: GPL-3.0-or-later
"""PinnedImageSet / MachineConfigPool model: validation as the v1 CRDs do, loading, pool and node selection."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import unique_sorted_images
from ansible_collections.pinned.images.plugins.module_utils._sets import model as pis
from ansible_collections.pinned.images.plugins.module_utils._sets import pools as selection
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    ROLE_LABEL,
    PinnedImageSet,
    PinnedImageSetError,
    default_pool,
    validate_pool,
    validate_set,
)
from fixtures.openshift_objects import digest, img, make_pool, make_set
from fixtures.reference import OPENSHIFT_CRDS_PARTS, reference_path

# ----------------------------------------------------------------------------- validation


def test_valid_set_round_trips_and_matches_the_crd_schema():
    obj = make_set(
        labels={ROLE_LABEL: "worker"},
        images=(img(1), "registry.example.com:5000/app@" + digest(2), "docker.io/library/busybox@" + digest(3)),
    )
    result = validate_set(obj, source="x.yaml")
    assert result.name == "worker-set"
    assert result.images == tuple(e["name"] for e in obj["spec"]["pinnedImages"])
    assert result.labels == {ROLE_LABEL: "worker"}
    assert result.source == "x.yaml"
    rendered = result.to_dict()
    assert rendered == obj
    crd = yaml.safe_load(reference_path(*OPENSHIFT_CRDS_PARTS, "pinnedimagesets.crd.yaml").read_text())
    jsonschema.validate(rendered, crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def test_pool_selector_is_kept_only_on_request():
    selector = {"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}}
    result = validate_set(make_set(pool_selector=selector))
    assert result.pool_selector == selector
    assert "machineConfigPoolSelector" not in result.to_dict()["spec"]
    assert result.to_dict(include_pool_selector=True)["spec"]["machineConfigPoolSelector"] == selector


def test_every_problem_is_listed_in_one_error():
    images = [img(1), "quay.io/org/app:latest", img(1), "nginx@" + digest(5), "quay.io/a/b/c@" + digest(6)]
    images += [img(100 + n) for n in range(497)]  # 502 in all
    obj = make_set(name="Bad_Name", images=images)
    with pytest.raises(PinnedImageSetError) as info:
        validate_set(obj, source="sets/bad.yaml")
    problems = info.value.problems
    text = "\n".join(problems)
    assert all(p.startswith("sets/bad.yaml: PinnedImageSet 'Bad_Name': ") for p in problems)
    assert "metadata.name 'Bad_Name' is not a valid RFC 1123 subdomain" in text
    assert "spec.pinnedImages has 502 items; at most 500 are allowed" in text
    assert "spec.pinnedImages[1].name 'quay.io/org/app:latest' is a tag reference" in text
    assert f"spec.pinnedImages[2].name '{img(1)}' duplicates spec.pinnedImages[0]" in text
    assert "spec.pinnedImages[3].name" in text and "host[:port][/namespace]/name" in text
    assert "spec.pinnedImages[4].name" in text
    assert len(problems) == 6
    assert str(info.value).startswith("6 problems found:\n- ")


@pytest.mark.parametrize(
    "name, why",
    [
        ("quay.io/org/app@sha256:" + "A" * 64, "must end with a valid '@sha256:<digest>'"),
        ("quay.io/org/app@sha256:" + "a" * 63, "must end with a valid '@sha256:<digest>'"),
        ("quay.io/org/app@sha512:" + "a" * 128, "must end with a valid '@sha256:<digest>'"),
        ("quay.io/org/app", "must end with a valid '@sha256:<digest>'"),
        ("quay.io/org/app:v1@" + digest(1) + "@x", "must end with a valid"),
        ("", "is empty"),
        ("quay.io/" + "a" * 440 + "@" + digest(1), "at most 447 are allowed"),
        ("localhost:5000/app@" + digest(1), "host[:port][/namespace]/name"),
        ("quay.io/my.org/app@" + digest(1), "host[:port][/namespace]/name"),
        ("quay.io/Org/app@" + digest(1), "invalid path component"),
        (" quay.io/org/app@" + digest(1), "whitespace"),
    ],
)
def test_bad_image_names(name, why):
    with pytest.raises(PinnedImageSetError) as info:
        validate_set(make_set(images=(name,)))
    assert len(info.value.problems) == 1
    assert why in info.value.problems[0]
    assert "spec.pinnedImages[0]" in info.value.problems[0]


def test_tag_and_digest_together_is_refused_as_the_api_does():
    # The CRD's second CEL rule allows no ':' after the host part, so name:tag@digest is rejected.
    with pytest.raises(PinnedImageSetError, match="host"):
        validate_set(make_set(images=("quay.io/org/app:v1@" + digest(1),)))


@pytest.mark.parametrize(
    "mutate, why",
    [
        (lambda o: o.update(apiVersion="machineconfiguration.openshift.io/v1alpha1"), "apiVersion"),
        (lambda o: o.update(kind="Other"), "kind is 'Other'"),
        (lambda o: o.pop("metadata"), "metadata must be a mapping"),
        (lambda o: o["metadata"].update(name="a" * 254), "at most 253"),
        (lambda o: o["metadata"].update(name="-x"), "RFC 1123"),
        (lambda o: o["metadata"].update(labels={"a": True}), "must be a string"),
        (lambda o: o["metadata"].update(labels={"bad key!": "x"}), "not a valid label key"),
        (lambda o: o.pop("spec"), "spec must be a mapping"),
        (lambda o: o["spec"].update(pinnedImages=[]), "at least one image"),
        (lambda o: o["spec"].update(pinnedImages="x"), "must be a list"),
        (lambda o: o["spec"].update(pinnedImages=["quay.io/a@" + digest(1)]), "must be a mapping with a name"),
        (
            lambda o: o["spec"].update(
                machineConfigPoolSelector={"matchExpressions": [{"key": "a", "operator": "In"}]}
            ),
            "needs at least one value",
        ),
        (
            lambda o: o["spec"].update(
                machineConfigPoolSelector={"matchExpressions": [{"key": "a", "operator": "Is"}]}
            ),
            "is not one of",
        ),
    ],
)
def test_bad_objects(mutate, why):
    obj = make_set()
    mutate(obj)
    with pytest.raises(PinnedImageSetError) as info:
        validate_set(obj)
    assert any(why in p for p in info.value.problems), info.value.problems


def test_not_a_mapping():
    with pytest.raises(PinnedImageSetError, match="must be a mapping"):
        validate_set(["x"])


def test_pool_validation():
    pool = validate_pool(
        make_pool(
            "infra",
            {"matchLabels": {"node-role.kubernetes.io/infra": ""}},
            {"matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": ["worker", "infra"]}]},
            refs=("a", "b"),
        )
    )
    assert pool.pinned_image_sets == ("a", "b")
    with pytest.raises(PinnedImageSetError) as info:
        validate_pool(make_pool("x", {"matchLabels": "no"}, refs=("a", "a", "-bad-")))
    text = "\n".join(info.value.problems)
    assert "spec.nodeSelector.matchLabels must be a mapping" in text
    assert "listed twice" in text
    assert "'-bad-' is not a valid RFC 1123 subdomain" in text


# ----------------------------------------------------------------------------- loading


# ----------------------------------------------------------------------------- selectors


# ----------------------------------------------------------------------------- pools and nodes

WORKER = make_pool(
    "worker",
    {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
    {"matchLabels": {ROLE_LABEL: "worker"}},
    labels={"pools.operator.machineconfiguration.openshift.io/worker": ""},
)
MASTER = make_pool(
    "master",
    {"matchLabels": {"node-role.kubernetes.io/master": ""}},
    {"matchLabels": {ROLE_LABEL: "master"}},
    labels={"pools.operator.machineconfiguration.openshift.io/master": ""},
)
INFRA = make_pool(
    "infra",
    {"matchLabels": {"node-role.kubernetes.io/infra": ""}},
    {"matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": ["worker", "infra"]}]},
    refs=("explicit",),
)


def all_sets():
    return [
        validate_set(make_set("w", images=(1, 2), labels={ROLE_LABEL: "worker"})),
        validate_set(make_set("m", images=(3,), labels={ROLE_LABEL: "master"})),
        validate_set(
            make_set(
                "seed",
                images=(2, 4),
                pool_selector={"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}},
            )
        ),
        validate_set(make_set("explicit", images=(5,))),
        validate_set(make_set("i", images=(6,), labels={ROLE_LABEL: "infra"})),
        validate_set(make_set("everywhere", images=(7,), pool_selector={})),
        validate_set(make_set("nowhere", images=(8,))),
    ]


def test_sets_for_pool_by_selectors_only():
    sets = all_sets()
    assert [s.name for s in selection.sets_for_pool(WORKER, sets)] == ["w", "seed", "everywhere"]
    assert [s.name for s in selection.sets_for_pool(MASTER, sets)] == ["m", "everywhere"]
    # INFRA lists "explicit" in spec.pinnedImageSets, but its selector does not match it: the MCO's controller
    # replaces that list with the selector's result.
    assert [s.name for s in selection.sets_for_pool(INFRA, sets)] == ["w", "i", "everywhere"]
    assert selection.missing_set_refs(make_pool("p", refs=("explicit", "gone")), sets) == ["gone"]


@pytest.mark.parametrize("mc_selector", [{}, {"matchLabels": {}}, {"matchLabels": {}, "matchExpressions": []}, None])
def test_empty_or_missing_machine_config_selector_matches_no_set(mc_selector):
    # The controller skips such a pool; only the seed-side selector of "everywhere" still reaches it.
    pool = make_pool("p", mc_selector=mc_selector, refs=("w", "explicit"))
    assert [s.name for s in selection.sets_for_pool(pool, all_sets())] == ["everywhere"]


def test_default_pool_shape():
    pool = default_pool("worker")
    assert pool.machine_config_selector == {"matchLabels": {ROLE_LABEL: "worker"}}
    assert pool.node_selector == {"matchLabels": {"node-role.kubernetes.io/worker": ""}}
    assert [s.name for s in selection.sets_for_pool("worker", all_sets())] == ["w", "seed", "everywhere"]
    with pytest.raises(PinnedImageSetError):
        default_pool("Not A Name")


@pytest.mark.parametrize(
    "labels, expected",
    [
        ({"node-role.kubernetes.io/worker": ""}, ["worker"]),
        ({"node-role.kubernetes.io/master": ""}, ["master"]),
        ({"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}, ["master"]),
        ({"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/worker": ""}, ["infra", "worker"]),
        ({"node-role.kubernetes.io/infra": ""}, ["infra"]),
        ({"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/master": ""}, ["master"]),
        ({"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "windows"}, []),
        ({"other": "x"}, []),
    ],
)
def test_pools_for_node_follows_the_mco(labels, expected):
    pools = [WORKER, MASTER, INFRA, make_pool("empty", {}), make_pool("unset")]
    assert [p.name for p in selection.pools_for_node(labels, pools)] == expected


def test_two_custom_pools_is_an_error():
    other = make_pool("gpu", {"matchLabels": {"gpu": "true"}})
    with pytest.raises(PinnedImageSetError, match="2 custom pools"):
        selection.pools_for_node({"node-role.kubernetes.io/infra": "", "gpu": "true"}, [INFRA, other])


def test_images_for_node_is_the_sorted_union():
    sets = all_sets()
    labels = {"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/worker": ""}
    images, names = selection.images_for_node(labels, [WORKER, MASTER, INFRA], sets)
    assert names == ["w", "i", "everywhere", "seed"]
    assert images == sorted({img(n) for n in (1, 2, 4, 6, 7)})
    assert selection.images_for_node({"x": "y"}, [WORKER], sets) == ([], [])
    assert selection.images_for_pool(MASTER, sets) == (sorted([img(3), img(7)]), ["m", "everywhere"])


def test_unique_sorted_images_drops_blanks_like_the_mco():
    assert unique_sorted_images(["b", " ", "", "a", "b", None]) == ["a", "b"]
    # Blank as Go's strings.TrimSpace sees it: NEL, NBSP and U+3000 are space, the info separators are not.
    assert unique_sorted_images(["\x85", "\xa0 ", "\u3000", "\x1c", "x"]) == ["\x1c", "x"]


def test_sets_are_plain_data():
    s = PinnedImageSet(name="x", images=("a",))
    assert s.labels == {} and s.pool_selector is None
    assert pis.MAX_PINNED_IMAGES == 500 and pis.MAX_IMAGE_NAME_LENGTH == 447


# ----------------------------------------------------------------------------- bounded input
