# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints, after a run of these tests, the per-source count: cases, agree, deliberate differences, excluded."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

# The tests import the shared helpers of this folder by name (pytest runs with --import-mode=importlib, which adds
# no test folder to sys.path); one module object, so that every test records into the same OUTCOMES.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import vectors  # noqa: E402

SOURCES = ("reference", "registries", "auth", "openshift", "dropin", "containerd")


def pytest_terminal_summary(terminalreporter):
    if not vectors.OUTCOMES:
        return
    counts = collections.defaultdict(collections.Counter)
    for (source, _case_id), outcome in vectors.OUTCOMES.items():
        counts[source][outcome] += 1
    terminalreporter.section("upstream test tables")
    terminalreporter.write_line(
        f"{'source':<11}{'cases':>6}{'agree':>7}{'deliberate':>11}{'excluded':>9}{'differs':>8}"
        f"{'  (+ left out by the transcription)'}"
    )
    for source in SOURCES:
        if source not in counts:
            continue
        c = counts[source]
        left_out = len(vectors.TRANSCRIPTION_EXCLUDED.get(source, ()))
        terminalreporter.write_line(
            f"{source:<11}{sum(c.values()):>6}{c['agree']:>7}{c['deliberate']:>11}{c['excluded']:>9}"
            f"{c['differs']:>8}  (+ {left_out})"
        )
