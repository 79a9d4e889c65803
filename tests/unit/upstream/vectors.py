# SPDX-License-Identifier: GPL-3.0-or-later
"""Loading the upstream test tables (``upstream-vectors`` in the reference directory) and tallying the outcomes.

Each comparison returns ``(agrees, detail)``: what the collection answers beside what upstream expects. A case
listed in ``exclusions.DELIBERATE`` must still differ (else the entry is stale); one in ``exclusions.EXCLUDED``
is counted, not asserted. Upstream's own ``excluded`` lists (cases the transcription left out) are counted too.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import exclusions
import pytest
import yaml

from fixtures.reference import UPSTREAM_VECTORS_PARTS, reference_available, reference_path


def vectors_path(*parts: str) -> Path:
    """The file below ``upstream-vectors``; skips the test when it is absent."""
    return reference_path(*UPSTREAM_VECTORS_PARTS, *parts)


def load_json(*parts: str) -> dict:
    """A JSON table, parsed once per session (read-only: tests never change it)."""
    return _parsed(vectors_path(*parts), "json")


def load_yaml(*parts: str):
    """A YAML table, parsed once per session (read-only: tests never change it)."""
    return _parsed(vectors_path(*parts), "yaml")


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, kind: str):
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if kind == "json" else yaml.safe_load(text)


def json_cases(*parts: str) -> list:
    """Cases of a JSON table as pytest params; one placeholder, which the test skips, without the reference files."""
    if not reference_available(*UPSTREAM_VECTORS_PARTS, *parts):
        return [pytest.param(None, id="reference-absent")]
    document = json.loads(reference_path(*UPSTREAM_VECTORS_PARTS, *parts).read_text(encoding="utf-8"))
    return [pytest.param(case, id=case["id"]) for case in document["cases"]]


# (source, case id) -> "agree" | "deliberate" | "excluded" | "differs", for the summary conftest.py prints.
OUTCOMES: dict = {}
# Upstream case ids the transcription left out (its own "excluded" lists), per source.
TRANSCRIPTION_EXCLUDED: dict = {}


def check(source: str, case_id: str, agrees: bool, detail: str) -> None:
    """Assert the outcome the exclusion table promises for one case."""
    key = f"{source}:{case_id}"
    if key in exclusions.EXCLUDED:
        # Counted, not asserted: out of scope (the reason is in exclusions.EXCLUDED). Not a skip, since CI must
        # skip nothing; the collection's answer was still computed without an error.
        OUTCOMES[(source, case_id)] = "excluded"
        return
    if key in exclusions.DELIBERATE:
        OUTCOMES[(source, case_id)] = "deliberate" if not agrees else "differs"
        assert not agrees, f"{key} now agrees with upstream; remove it from exclusions.DELIBERATE ({detail})"
        return
    OUTCOMES[(source, case_id)] = "agree" if agrees else "differs"
    assert agrees, f"{key} differs from upstream: {detail}"


def note_transcription_excluded(source: str, document: dict) -> None:
    """Remember the cases a JSON table's transcription left out, for the summary."""
    TRANSCRIPTION_EXCLUDED[source] = {case["id"] for case in document.get("excluded", [])}
