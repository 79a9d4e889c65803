# SPDX-License-Identifier: GPL-3.0-or-later
"""The variables check as a filter: registered and documented, hosts before hostvars as the playbooks write it, and
the names every role and playbook of the collection knows (the logic is tested in
tests/unit/plugins/plugin_utils/test_variables.py)."""

from __future__ import annotations

from fixtures.filter_docs import filters_of, registration_problems

F = filters_of("variables")


def test_every_filter_is_registered_and_documented():
    assert registration_problems("variables") == []


def test_the_collections_own_names_are_known():
    hostvars = {"localhost": {"cluster_sets": [], "cluster_set": [], "node_pin": "auto"}}
    assert F["unknown_variables"](["localhost"], hostvars) == {
        "errors": ["cluster_set (on localhost) is not a variable of pinned.images: did you mean cluster_sets?"],
        "warnings": [],
    }
