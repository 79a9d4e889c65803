# SPDX-License-Identifier: GPL-3.0-or-later
"""The doctor playbook's filter as a layer: registered and documented, and a node the doctor could not ask as
Jinja hands it over (the report's logic is tested in tests/unit/plugins/plugin_utils/test_doctor.py)."""

from __future__ import annotations

from fixtures.filter_docs import filters_of, registration_problems

F = filters_of("doctor")


def test_every_filter_is_registered_and_documented():
    assert registration_problems("doctor") == []


def test_a_node_without_python_is_reported_from_an_unset_result():
    lines = F["doctor_report"](None, "n1", "")
    assert lines[0] == "n1: 1 error" and lines[1] == "  error no_python: n1 has no python3"
