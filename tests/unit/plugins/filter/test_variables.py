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


def test_bad_values_are_found_with_hosts_before_hostvars():
    hostvars = {"localhost": {"node_prefetch_options": {"min_free": -1}}}
    assert F["variable_problems"](["localhost"], hostvars)["errors"] == [
        "node_prefetch_options.min_free: size '-1' is not understood; allowed are bytes (1073741824), binary units "
        "(500Mi, 16Gi, 1.5Gi), decimal units (1G, 500M) or a percent of the filesystem size (10%) (on localhost)"
    ]
