# SPDX-License-Identifier: GPL-3.0-or-later
"""containers/image ``sysregistriesv2`` test tables against ``_registry.registries_conf``.

The upstream testdata files are embedded in the table (``files``); each test writes the ones it needs under
``tmp_path``. The mapping is in upstream-vectors/containers/README.md.
"""

from __future__ import annotations

import pytest
from vectors import check, json_cases, load_json, note_transcription_excluded

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    RegistriesConf,
    RegistriesConfError,
    _check_location,
    _matching_prefix_length,
    load_registries_conf,
    registries_from_list,
)

SOURCE = "registries"
FILE = ("containers", "sysregistriesv2.json")


def _write_files(files: dict, root) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _load(case: dict, root):
    """(RegistriesConf, None) or (None, error text) for the case's conf and drop-in directory."""
    conf = str(root / case["conf"]) if case["conf"] else None
    conf_d = str(root / case["conf_d"]) if case.get("conf_d") else None
    try:
        # An unset conf means upstream's default path, absent in its test: a default path that does not exist.
        return load_registries_conf(
            conf, conf_d=conf_d, default_path=str(root / "absent.conf"), default_conf_d=str(root / "absent.d")
        ), None
    except RegistriesConfError as exc:
        return None, str(exc)


def compare(case: dict, root) -> tuple:
    kind, expect = case["kind"], case["expect"]
    if kind == "parse_location":
        try:
            got, error = _check_location(case["input"], "location", "location"), None
        except RegistriesConfError as exc:
            got, error = None, str(exc)
        if expect["error"]:
            return error is not None and expect["error_substring"] in error, f"error {error!r}, value {got!r}"
        return got == expect["location"], f"value {got!r}, error {error!r}"
    if kind == "ref_matching":
        got = _matching_prefix_length(case["ref"], case["prefix"])
        return got == expect["length"], f"length {got}"
    if kind == "rewrite":
        try:
            ref = parse_image_ref(case["ref"], require_digest=False)
            conf = RegistriesConf(registries_from_list([{"prefix": case["prefix"], "location": case["location"]}]))
            # No matching entry means nothing was rewritten; else the last pull source is the rewritten primary.
            got = str(conf.pull_sources(ref)[-1].reference) if conf.find_registry(ref) else None
        except (RegistriesConfError, ImageReferenceError) as exc:
            got = f"error: {exc}"
        if expect["rewritten"]:
            return got == expect["reference"], f"rewritten to {got!r}"
        return got is None or got.startswith("error: "), f"rewritten to {got!r}"
    conf, error = _load(case, root)
    if kind == "load":
        if expect["error"]:
            return error is not None, f"error {error!r} (upstream: {expect.get('error_substring')!r})"
        if conf is None:
            return False, f"error {error!r}"
        agrees = len(conf.registries) == expect["count"]
        if "locations" in expect:
            agrees = agrees and sorted(r.location for r in conf.registries) == sorted(expect["locations"])
        return agrees, f"{len(conf.registries)} entries: {[r.location for r in conf.registries]}"
    if conf is None:
        return False, f"error {error!r}"
    if kind == "find_registry":
        # Upstream FindRegistry takes the text as it is: a reference, a host or a namespace.
        reg = conf.find_registry(case["ref"])
        if not expect["found"]:
            return reg is None, f"found {reg}"
        if reg is None:
            return False, "found nothing"
        got = {
            "prefix": reg.prefix,
            "location": reg.location,
            "blocked": reg.blocked,
            "mirrors": [[m.location, m.insecure] for m in reg.mirrors],
        }
        return all(got[key] == value for key, value in expect.items() if key != "found"), f"found {got}"
    if kind == "pull_sources":
        try:
            sources = conf.pull_sources(parse_image_ref(case["ref"], require_digest=False))
        except RegistriesConfError as exc:
            return False, f"error {exc}"
        got = [[str(s.reference), s.insecure] for s in sources]
        return got == expect["sources"], f"sources {got}"
    raise AssertionError(f"unknown vector kind {kind!r}")


@pytest.fixture(scope="module")
def conf_root(tmp_path_factory):
    """The upstream testdata files, written once for the module (read-only for the tests)."""
    root = tmp_path_factory.mktemp("sysregistriesv2")
    document = load_json(*FILE)
    note_transcription_excluded(SOURCE, document)
    _write_files(document["files"], root)
    return root


@pytest.mark.parametrize("case", json_cases(*FILE))
def test_sysregistriesv2(case, conf_root):
    agrees, detail = compare(case, conf_root)
    check(SOURCE, case["id"], agrees, f"expected {case['expect']}, got {detail}")
