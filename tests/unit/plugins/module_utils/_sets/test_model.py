# SPDX-License-Identifier: GPL-3.0-or-later
"""PinnedImageSet / MachineConfigPool model: validation as the v1 CRDs do, loading, pool and node selection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from fixtures.openshift_objects import pinned_image_set
from fixtures.reference import OPENSHIFT_CRDS_PARTS, reference_path

from ansible_collections.pinned.images.plugins.module_utils._sets import model as pis
from ansible_collections.pinned.images.plugins.module_utils._sets import pools as selection
from ansible_collections.pinned.images.plugins.module_utils._sets import loading as _set_loading
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import unique_sorted_images
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import (
    LabelSelectorError,
    check_dns_subdomain,
    label_selector_matches,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    ROLE_LABEL,
    PinnedImageSet,
    PinnedImageSetError,
    default_pool,
    validate_pool,
    validate_set,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets


def digest(n: int) -> str:
    return "sha256:%064x" % n


def img(n: int, repo: str = "quay.io/org/app") -> str:
    return f"{repo}@{digest(n)}"


def make_set(name="worker-set", images=(1, 2), labels=None, pool_selector=None, **spec_extra):
    if pool_selector is not None:
        spec_extra["machineConfigPoolSelector"] = pool_selector
    return pinned_image_set(name, [i if isinstance(i, str) else img(i) for i in images], labels, **spec_extra)


def make_pool(name, node_selector=None, mc_selector=None, labels=None, refs=()):
    spec = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if mc_selector is not None:
        spec["machineConfigSelector"] = mc_selector
    if refs:
        spec["pinnedImageSets"] = [{"name": r} for r in refs]
    obj = {"apiVersion": API_VERSION, "kind": "MachineConfigPool", "metadata": {"name": name}, "spec": spec}
    if labels:
        obj["metadata"]["labels"] = labels
    return obj


# ----------------------------------------------------------------------------- validation


def test_valid_set_round_trips_and_matches_the_crd_schema():
    obj = make_set(labels={ROLE_LABEL: "worker"}, images=(img(1), "registry.example.com:5000/app@" + digest(2),
                                                          "docker.io/library/busybox@" + digest(3)))
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


@pytest.mark.parametrize("value", ["a", "worker", "99-worker-pinned-images", "a.b-c.d", "0", "x" * 253])
def test_rfc_1123_subdomains(value):
    assert check_dns_subdomain(value, "name") is None


@pytest.mark.parametrize("value, why", [
    ("name\n", "not a valid RFC 1123 subdomain"),
    ("\nname", "not a valid RFC 1123 subdomain"),
    ("Name", "not a valid RFC 1123 subdomain"),
    ("-name", "not a valid RFC 1123 subdomain"),
    ("name.", "not a valid RFC 1123 subdomain"),
    ("a..b", "not a valid RFC 1123 subdomain"),
    ("x" * 254, "254 characters long"),
    ("", "required"),
    (None, "required"),
])
def test_not_rfc_1123_subdomains(value, why):
    problem = check_dns_subdomain(value, "pool name")
    assert problem.startswith("pool name") and why in problem
    with pytest.raises(PinnedImageSetError, match=why):
        default_pool(value)


def test_longest_accepted_name():
    # distribution/reference caps the path (the host not counted) at 255 characters, below the CRD's 447.
    name = "quay.io/org/" + "a" * (255 - len("org/")) + "@" + digest(1)
    assert validate_set(make_set(images=(name,))).images == (name,)
    with pytest.raises(PinnedImageSetError, match="repository path of 256 characters; at most 255"):
        validate_set(make_set(images=("quay.io/org/a" + name[len("quay.io/org/"):],)))


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
        (lambda o: o["spec"].update(machineConfigPoolSelector={"matchExpressions": [{"key": "a", "operator": "In"}]}),
         "needs at least one value"),
        (lambda o: o["spec"].update(machineConfigPoolSelector={"matchExpressions": [{"key": "a", "operator": "Is"}]}),
         "is not one of"),
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
    pool = validate_pool(make_pool("infra", {"matchLabels": {"node-role.kubernetes.io/infra": ""}},
                                   {"matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": ["worker", "infra"]}]},
                                   refs=("a", "b")))
    assert pool.pinned_image_sets == ("a", "b")
    with pytest.raises(PinnedImageSetError) as info:
        validate_pool(make_pool("x", {"matchLabels": "no"}, refs=("a", "a", "-bad-")))
    text = "\n".join(info.value.problems)
    assert "spec.nodeSelector.matchLabels must be a mapping" in text
    assert "listed twice" in text
    assert "'-bad-' is not a valid RFC 1123 subdomain" in text


# ----------------------------------------------------------------------------- loading


def write(path: Path, *docs) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_load_from_files_directories_and_dicts(tmp_path):
    directory = tmp_path / "sets"
    directory.mkdir()
    write(directory / "b.yml", make_set("b", images=(3,)))
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}}
    write(directory / "a.yaml", make_set("a", images=(1,)), config_map,
          make_pool("worker", {"matchLabels": {"node-role.kubernetes.io/worker": ""}}))
    (directory / "notes.txt").write_text("not: [yaml")
    (directory / "sub.yaml").mkdir()
    listed = write(tmp_path / "list.yaml", {"apiVersion": "v1", "kind": "List", "items": [make_set("c", images=(4,))]})
    sets, pools = load_sets([str(directory), listed, make_set("d", images=(5,)), validate_set(make_set("e"))])
    assert [s.name for s in sets] == ["a", "b", "c", "d", "e"]
    assert [p.name for p in pools] == ["worker"]
    assert sets[0].source == f"{directory / 'a.yaml'} (document 1)"
    assert sets[1].source == str(directory / "b.yml")
    assert sets[2].source == f"{listed} items[0]"
    assert sets[3].source == "sets[2]"


def test_load_reports_every_problem_across_sources(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: [unclosed\n")
    bad = write(tmp_path / "bad.yaml", make_set("ok"), make_set("bad", images=("quay.io/a/b:v1",)))
    with pytest.raises(PinnedImageSetError) as info:
        load_sets([str(broken), str(bad), str(tmp_path / "missing.yaml"), {"kind": "Secret"}, "x" and 42,
                   make_set("ok", images=(9,))])
    text = "\n".join(info.value.problems)
    assert f"{broken}: not valid YAML" in text
    assert f"{bad} (document 2): PinnedImageSet 'bad': spec.pinnedImages[0].name 'quay.io/a/b:v1' is a tag" in text
    assert f"{tmp_path / 'missing.yaml'}: no such file or directory" in text
    assert "sets[3]: kind is 'Secret'" in text
    assert "sets[4]: expected a Kubernetes object (mapping), got number" in text
    assert "'ok' is also defined, differently" in text
    assert len(info.value.problems) == 6


def test_identical_repeats_are_dropped(tmp_path):
    path = write(tmp_path / "a.yaml", make_set("a"))
    sets, _pools = load_sets([str(path), str(path), make_set("a")])
    assert [s.name for s in sets] == ["a"]


def test_differing_pool_definitions_are_a_problem():
    one = make_pool("worker", {"matchLabels": {"a": "1"}})
    two = make_pool("worker", {"matchLabels": {"a": "2"}})
    assert [p.name for p in load_sets([one, one])[1]] == ["worker"]
    with pytest.raises(PinnedImageSetError, match="MachineConfigPool 'worker' is also defined, differently"):
        load_sets([one, two])


def test_load_accepts_a_single_source_and_none(tmp_path):
    assert load_sets(None) == ([], [])
    sets, _pools = load_sets(make_set("x"))
    assert sets[0].name == "x"


# ----------------------------------------------------------------------------- selectors


@pytest.mark.parametrize(
    "selector, labels, expected",
    [
        (None, {"a": "1"}, False),
        ({}, {}, True),
        ({"matchLabels": {}}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchLabels": {"a": ""}}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "x"}, False),
        ({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1"}, False),
    ],
)
def test_label_selector_matches(selector, labels, expected):
    assert label_selector_matches(selector, labels) is expected


def test_bad_selector_raises():
    with pytest.raises(LabelSelectorError, match="takes no values"):
        label_selector_matches({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, {})


# ----------------------------------------------------------------------------- pools and nodes

WORKER = make_pool("worker", {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
                   {"matchLabels": {ROLE_LABEL: "worker"}},
                   labels={"pools.operator.machineconfiguration.openshift.io/worker": ""})
MASTER = make_pool("master", {"matchLabels": {"node-role.kubernetes.io/master": ""}},
                   {"matchLabels": {ROLE_LABEL: "master"}},
                   labels={"pools.operator.machineconfiguration.openshift.io/master": ""})
INFRA = make_pool("infra", {"matchLabels": {"node-role.kubernetes.io/infra": ""}},
                  {"matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": ["worker", "infra"]}]},
                  refs=("explicit",))


def all_sets():
    return [
        validate_set(make_set("w", images=(1, 2), labels={ROLE_LABEL: "worker"})),
        validate_set(make_set("m", images=(3,), labels={ROLE_LABEL: "master"})),
        validate_set(make_set("seed", images=(2, 4), pool_selector={
            "matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}})),
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


def alias_bomb(levels: int, where: str) -> str:
    """A ~600-byte YAML set whose ``where`` (apiVersion or an image name) expands to 9**levels strings."""
    anchors = ['  a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    anchors += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    top = f"*a{levels - 1}"
    api_version = top if where == "apiVersion" else API_VERSION
    image = top if where == "image" else img(1)
    return ("x-anchors:\n" + "\n".join(anchors) + f"\napiVersion: {api_version}\nkind: PinnedImageSet\n"
            f"metadata: {{name: bomb}}\nspec: {{pinnedImages: [{{name: {image}}}]}}\n")


LOAD_UNDER_LIMITS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024, 512 * 1024 * 1024))
from ansible_collections.pinned.images.plugins.module_utils._sets.model import PinnedImageSetError
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
try:
    load_sets(sys.argv[1])
except PinnedImageSetError as exc:
    print(exc)
"""


@pytest.mark.parametrize("levels, where", [(6, "apiVersion"), (10, "apiVersion"), (10, "image")])
def test_alias_bombs_are_refused_without_expanding(tmp_path, levels, where):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(levels, where))
    assert path.stat().st_size < 1000
    # Bounds, not a benchmark: the refusal must come in a process that may not grow past 512 MiB.
    done = subprocess.run([sys.executable, "-c", LOAD_UNDER_LIMITS, str(path)], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True)
    assert f"{path}: expands to more than {_set_loading.MAX_EXPANDED_NODES} values once its YAML aliases" in done.stdout
    assert len(done.stdout) < 500


def test_small_aliases_and_self_references(tmp_path):
    shared = tmp_path / "shared.yaml"
    shared.write_text(f"metadata: {{name: a, labels: &l {{team: x}}}}\napiVersion: {API_VERSION}\n"
                      f"kind: PinnedImageSet\nspec: {{pinnedImages: [{{name: '{img(1)}'}}], x: *l}}\n")
    assert load_sets(str(shared))[0][0].labels == {"team": "x"}
    loop = tmp_path / "loop.yaml"
    loop.write_text("kind: PinnedImageSet\nspec: &s {pinnedImages: *s}\n")
    with pytest.raises(PinnedImageSetError, match="refers to itself"):
        load_sets(str(loop))
    nested = [make_set("a")]
    for _level in range(12):
        nested = [nested] * 9
    with pytest.raises(PinnedImageSetError, match=r"sets\[0\]: expands to more than"):
        load_sets([nested])


def test_a_big_set_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.yaml"
    line = f"  - name: {img(1)}\n"
    with path.open("w") as handle:
        handle.write(f"apiVersion: {API_VERSION}\nkind: PinnedImageSet\nmetadata: {{name: big}}\nspec:\n  pinnedImages:\n")
        handle.write(line * (50 * 1024 * 1024 // len(line)))
    done = subprocess.run([sys.executable, "-c", LOAD_UNDER_LIMITS, str(path)], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True)
    assert done.stdout.strip() == f"set file {path} is larger than {_set_loading.MAX_SET_FILE_SIZE} bytes"


def test_error_values_are_cut_short():
    deep = ["x" * 1000]
    for _level in range(40):
        deep = [deep] * 9
    bad = make_set("a")
    bad["apiVersion"] = deep
    bad["spec"]["pinnedImages"] = [{"name": {"k": "v" * 10_000}}]
    with pytest.raises(PinnedImageSetError) as info:
        validate_set(bad)
    assert all(len(problem) < 400 for problem in info.value.problems)
