# SPDX-License-Identifier: GPL-3.0-or-later
"""distribution/reference's test tables against ``_common.image_ref`` (mapping in upstream-vectors/containers/README.md)."""

from __future__ import annotations

import pytest
from vectors import check, json_cases, load_json, note_transcription_excluded

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    _DOMAIN_RE,
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import _lookup_names

SOURCE = "reference"
FILE = ("containers", "distribution_reference.json")
# reference.go NameTotalLengthMax, checked against the path since v0.6.0.
NAME_TOTAL_LENGTH_MAX = 255


def split_docker_domain(name: str) -> tuple:
    """Upstream's splitDockerDomain, applied to an expected raw name to get its normalised form."""
    first, sep, rest = name.partition("/")
    if not sep or ("." not in first and ":" not in first and first != "localhost" and first == first.lower()):
        first, rest = "docker.io", name
    if first == "index.docker.io":
        first = "docker.io"
    if first == "docker.io" and "/" not in rest:
        rest = "library/" + rest
    return first, rest


def expected_name(name: str):
    """The normalised (host, path) of an upstream raw name, or None when its path breaks the 255 limit."""
    parts = split_docker_domain(name)
    return parts if len(parts[1]) <= NAME_TOTAL_LENGTH_MAX else None


def _parse(text: str):
    try:
        return parse_image_ref(text, require_digest=False), None
    except ImageReferenceError as exc:
        return None, str(exc)


def _name_parts(ref) -> tuple:
    return (ref.registry, ref.repository) if ref else None


def compare(case: dict) -> tuple:
    kind, text, expect = case["kind"], case["input"], case["expect"]
    if kind == "domain_regexp":
        got = bool(_DOMAIN_RE.match(text))
        return got == expect["match"], f"domain regexp match {got}"
    ref, error = _parse(text)
    got = f"{ref!s} ({_name_parts(ref)})" if ref else f"error: {error}"
    if kind in ("parse", "reference_regexp"):
        valid = expect["valid"] if kind == "parse" else expect["match"]
        if not valid:
            return ref is None, got
        if kind == "parse":
            name, tag, digest = expect["name"], expect["tag"], expect["digest"]
        else:
            name, tag, digest = expect["subs"]
        if expected_name(name) is None:
            return ref is None, got
        want = (expected_name(name), tag or None, digest or None)
        return ref is not None and (_name_parts(ref), ref.tag, ref.digest) == want, got
    if kind in ("name_only", "name_regexp"):
        valid = expect["valid"] if kind == "name_only" else expect["match"]
        if not valid:
            return ref is None or bool(ref.tag or ref.digest), got
        if kind == "name_only":
            name = f"{expect['domain']}/{expect['path']}" if expect["domain"] else expect["path"]
        elif expect["subs"]:
            name = f"{expect['subs'][0]}/{expect['subs'][1]}" if expect["subs"][0] else expect["subs"][1]
        else:
            name = text  # upstream states the match, not its parts
        want = expected_name(name)
        if want is None:
            return ref is None, got
        return ref is not None and not (ref.tag or ref.digest) and _name_parts(ref) == want, got
    if kind == "canonical":
        return (ref is not None and str(ref) == text) == expect["canonical"], got
    if kind == "normalized_valid":
        return (ref is not None) == expect["valid"], got
    if kind == "repository_info":
        want = (expect["full_name"], expect["domain"], expect["remote_name"])
        return ref is not None and (ref.name, ref.registry, ref.repository) == want, got
    if kind == "normalized_string":
        return ref is not None and str(ref) == expect["string"], got
    if kind == "normalized_split":
        return _name_parts(ref) == (expect["domain"], expect["path"]), got
    if kind == "docker_ref":
        return ref is not None and _lookup_names(ref)[0] == expect["string"], got
    raise AssertionError(f"unknown vector kind {kind!r}")


@pytest.mark.parametrize("case", json_cases(*FILE))
def test_distribution_reference(case):
    note_transcription_excluded(SOURCE, load_json(*FILE))
    agrees, detail = compare(case)
    check(SOURCE, case["id"], agrees, f"{case['input']!r} expected {case['expect']}, got {detail}")
