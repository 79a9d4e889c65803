# SPDX-License-Identifier: GPL-3.0-or-later
"""openshift/api's PinnedImageSet and MachineConfigPool suites, the MCO's test tables and its drop-in encoder's
outputs against ``_sets.model`` and ``_pins.crio_dropin`` (provenance in upstream-vectors/openshift/README.md).

Sources: ``openshift`` (API suites, the CRD's two CEL rules, MCO controller/daemon/node tables) and ``dropin``
(bytes of ``createCrioConfigFileBytes``, ``uniqueSortedImageNames``, the ``bytes.TrimSpace`` rewrite test).
"""

from __future__ import annotations

import copy

import pytest
import yaml
from vectors import check, load_json, load_yaml, vectors_path

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import unique_sorted_images
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import render_pinned_images, same_content
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    _CEL_DIGEST_RE,
    _CEL_NAME_RE,
    API_VERSION,
    MAX_IMAGE_NAME_LENGTH,
    PinnedImageSetError,
    validate_pool,
    validate_set,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.pools import pools_for_node, sets_for_pool
from fixtures.reference import UPSTREAM_VECTORS_PARTS, reference_available, reference_path

try:
    import tomllib as _toml
except ImportError:  # Python < 3.11
    import tomli as _toml

API_SUITES = (
    "v1-pinnedimagesets-AAA_ungated.yaml",
    "v1alpha1-pinnedimagesets-PinnedImages.yaml",
    "v1-machineconfigpools-PinnedImages.yaml",
)
MCO_TABLES = ("controller_sync", "daemon_add_set", "primary_pool", "nodes_for_pool")
ORACLE = ("openshift", "mco", "golden", "oracle.json")
VECTORS = ("openshift", "mco", "vectors.yaml")
# The rewrite test's inputs, named as the oracle names them: the rendered file plus what the name says.
TRIM_SUFFIX = {
    "exact": "",
    "extra-newlines": "\n\n\n",
    "trailing-nbsp": "\u00a0",
    "trailing-nel": "\u0085",
    "trailing-0x1c": "\x1c",
}


def _ids(kind: str) -> list:
    """Case ids of one kind, read when the module is collected; one placeholder when the files are absent."""
    if not reference_available(*UPSTREAM_VECTORS_PARTS, "openshift"):
        return ["reference-absent"]
    root = reference_path(*UPSTREAM_VECTORS_PARTS, "openshift")
    if kind == "api":
        ids = []
        for name in API_SUITES:
            suite = yaml.safe_load((root / "openshift-api" / name).read_text(encoding="utf-8"))
            for phase, tests in suite["tests"].items():
                ids += [f"{name.rsplit('.', 1)[0]}:{phase}#{i + 1}" for i in range(len(tests))]
        return ids
    if kind == "mco":
        tables = yaml.safe_load((root / "mco" / "vectors.yaml").read_text(encoding="utf-8"))
        return [f"{table}#{i + 1}" for table in MCO_TABLES for i in range(len(tables[table]))]
    oracle = load_json(*ORACLE)
    if kind == "cel":
        return [f"cel#{i + 1}" for i in range(len(oracle["cel_rules"]))]
    return [f"{kind}:{key}" for key in oracle[kind]]


def _api_case(case_id: str) -> dict:
    suite_name, rest = case_id.split(":", 1)
    phase, number = rest.split("#")
    suite = load_yaml("openshift", "openshift-api", suite_name + ".yaml")
    return suite["tests"][phase][int(number) - 1]


def _without_descriptions(schema):
    if isinstance(schema, dict):
        return {k: _without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_without_descriptions(v) for v in schema]
    return schema


def _spec_schema(name: str) -> dict:
    crd = load_yaml("openshift", "openshift-api", name)
    return _without_descriptions(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])


@pytest.mark.parametrize("case_id", _ids("api"))
def test_api_suites(case_id):
    vectors_path("openshift")  # skips the test without the reference files
    case = _api_case(case_id)
    obj = yaml.safe_load(case.get("updated") or case["initial"])
    if obj["apiVersion"].endswith("/v1alpha1"):
        # The v1alpha1 suite runs against the v1 rules: both CRDs' spec schemas are the same but for descriptions.
        assert _spec_schema("v1alpha1-pinnedimagesets.crd.yaml") == _spec_schema("v1-pinnedimagesets.crd.yaml")
        obj["apiVersion"] = API_VERSION
    # The suite's runner names the object when the test does not.
    obj.setdefault("metadata", {}).setdefault("name", "test")
    accepted = "expectedError" not in case and "expectedStatusError" not in case
    validate = validate_set if obj["kind"] == "PinnedImageSet" else validate_pool
    try:
        validate(obj)
        got = "accepted"
    except PinnedImageSetError as exc:
        got = f"refused: {exc}"
    check(
        "openshift",
        f"api:{case_id}",
        (got == "accepted") == accepted,
        f"{case['name']!r}: upstream {'accepts' if accepted else 'refuses'}, the collection {got}",
    )


def _pool(vectors: dict, key: str) -> dict:
    spec = {}
    pool = vectors["pools"][key]
    for field in ("machineConfigSelector", "nodeSelector"):
        if field in pool:
            spec[field] = copy.deepcopy(pool[field])
    if pool.get("pinnedImageSets"):
        spec["pinnedImageSets"] = [{"name": name} for name in pool["pinnedImageSets"]]
    return {
        "apiVersion": API_VERSION,
        "kind": "MachineConfigPool",
        "metadata": {"name": pool["name"], "labels": dict(pool["labels"])},
        "spec": spec,
    }


def _set(vectors: dict, key: str):
    item = vectors["sets"][key]
    digest = "@sha256:" + "0" * 64
    return validate_set(
        {
            "apiVersion": API_VERSION,
            "kind": "PinnedImageSet",
            "metadata": {"name": item["name"], "labels": dict(item["labels"])},
            "spec": {"pinnedImages": [{"name": f"quay.io/test/{i}{digest}"} for i in item["images"]]},
        }
    )


def _primary(labels: dict, pools: list):
    """The node's primary pool name, None for no pool, or "error"."""
    try:
        found = pools_for_node(labels, pools)
    except PinnedImageSetError:
        return "error"
    return found[0].name if found else None


def compare_mco(table: str, row: dict, vectors: dict) -> tuple:
    if table == "controller_sync":
        got = [s.name for s in sets_for_pool(_pool(vectors, row["pool"]), [_set(vectors, k) for k in row["sets"]])]
        return got == row["expected_refs"], f"sets {got}"
    if table == "daemon_add_set":
        # The daemon enqueues each of the node's pools whose spec.pinnedImageSets names the set.
        image_set = _set(vectors, row["set"])
        pools = pools_for_node(row["node_labels"], [_pool(vectors, k) for k in row["pools"]])
        got = sum(1 for pool in pools if image_set.name in pool.pinned_image_sets)
        return got == row["expected_enqueued"], f"{got} pools enqueued"
    if table == "primary_pool":
        got = _primary(row["node_labels"], [_pool(vectors, k) for k in row["pools"]])
        agrees = got == row["expected"] or (row["err"] and got in ("error", None))
        return agrees, f"primary pool {got!r}"
    # nodes_for_pool: only the pool under test is known to the lister.
    pools = [_pool(vectors, row["pool"])]
    name = vectors["pools"][row["pool"]]["name"]
    got = sum(count for count, labels in row["nodes"] if _primary(labels, pools) == name)
    return got == row["expected"], f"{got} nodes"


@pytest.mark.parametrize("case_id", _ids("mco"))
def test_mco_tables(case_id):
    vectors_path("openshift")  # skips the test without the reference files
    vectors = load_yaml(*VECTORS)
    table, number = case_id.split("#")
    row = vectors[table][int(number) - 1]
    agrees, detail = compare_mco(table, row, vectors)
    check("openshift", f"mco:{case_id}", agrees, f"{row['name']!r}: expected {row}, got {detail}")


@pytest.mark.parametrize("case_id", _ids("cel"))
def test_cel_rules(case_id):
    """The CRD's two CEL rules on PinnedImageRef.name, as Go's regexp evaluated them, plus maxLength."""
    vectors_path("openshift")  # skips the test without the reference files
    rule = load_json(*ORACLE)["cel_rules"][int(case_id.split("#")[1]) - 1]
    parts = rule["input"].split("@")
    rule1 = len(parts) == 2 and bool(_CEL_DIGEST_RE.fullmatch(parts[1]))
    rule2 = bool(_CEL_NAME_RE.fullmatch(parts[0]))
    api_accepts = rule["rule1"] and rule["rule2"] and 1 <= rule["runes"] <= MAX_IMAGE_NAME_LENGTH
    try:
        validate_set(
            {
                "apiVersion": API_VERSION,
                "kind": "PinnedImageSet",
                "metadata": {"name": "s"},
                "spec": {"pinnedImages": [{"name": rule["input"]}]},
            }
        )
        got = "accepted"
    except PinnedImageSetError as exc:
        got = f"refused: {exc}"
    agrees = (rule1, rule2) == (rule["rule1"], rule["rule2"]) and (got == "accepted") == api_accepts
    check(
        "openshift",
        case_id,
        agrees,
        f"{rule['input']!r}: rules {(rule1, rule2)} vs Go {(rule['rule1'], rule['rule2'])}; API "
        f"{'accepts' if api_accepts else 'refuses'}, the collection {got}",
    )


def _dropin_input(key: str, oracle: dict, vectors: dict) -> list:
    name = key.split(":sorted")[0]
    if name in vectors["dropin_lists"]:
        images = list(vectors["dropin_lists"][name])
    elif name in vectors["dropin_repeat"]:
        images = [vectors["dropin_repeat"][name]["image"]] * vectors["dropin_repeat"][name]["count"]
    elif name in oracle["unique"]:
        # A probe list is given only by its result; feed it reversed and doubled so sorting and dropping matter.
        images = list(reversed(oracle["unique"][name])) * 2
    else:
        # An unsorted probe is given only by its bytes: the list they encode is its input.
        images = _toml.loads(oracle["dropin"][key]).get("crio", {}).get("image", {}).get("pinned_images", [])
    return unique_sorted_images(images) if key.endswith(":sorted") else images


@pytest.mark.parametrize("key", _ids("dropin"))
def test_dropin_bytes(key):
    vectors_path("openshift")  # skips the test without the reference files
    oracle, vectors = load_json(*ORACLE), load_yaml(*VECTORS)
    key = key.split(":", 1)[1]
    got = render_pinned_images(_dropin_input(key, oracle, vectors))
    # The golden files hold the same bytes as oracle.json, where a golden file exists (not for the probes).
    name = key.replace(":sorted", ".sorted") + ".toml"
    if reference_available(*UPSTREAM_VECTORS_PARTS, "openshift", "mco", "golden", name):
        golden = vectors_path("openshift", "mco", "golden", name).read_bytes()
        assert golden == oracle["dropin"][key].encode("utf-8"), f"{name} and oracle.json disagree"
    check(
        "dropin",
        f"dropin:{key}",
        got.encode("utf-8") == oracle["dropin"][key].encode("utf-8"),
        f"rendered {got!r}, the MCO wrote {oracle['dropin'][key]!r}",
    )


@pytest.mark.parametrize("key", _ids("unique"))
def test_unique_sorted(key):
    vectors_path("openshift")  # skips the test without the reference files
    oracle, vectors = load_json(*ORACLE), load_yaml(*VECTORS)
    key = key.split(":", 1)[1]
    got = _dropin_input(key + ":sorted", oracle, vectors)
    check("dropin", f"unique:{key}", got == oracle["unique"][key], f"{got!r}, the MCO: {oracle['unique'][key]!r}")


@pytest.mark.parametrize("key", _ids("trim_equal"))
def test_rewrite_check(key):
    vectors_path("openshift")  # skips the test without the reference files
    oracle, vectors = load_json(*ORACLE), load_yaml(*VECTORS)
    key = key.split(":", 1)[1]
    new = render_pinned_images(vectors["dropin_lists"]["ensure-3"])
    old = render_pinned_images(vectors["dropin_lists"]["ensure-4"]) if key == "different" else new + TRIM_SUFFIX[key]
    got = same_content(old.encode("utf-8"), new.encode("utf-8"))
    check("dropin", f"trim_equal:{key}", got == oracle["trim_equal"][key], f"same_content {got}")
