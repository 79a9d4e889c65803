# SPDX-License-Identifier: GPL-3.0-or-later
"""The check of the playbooks' variables against the roles' argument specs."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.plugin_utils._variables import known_variables, unknown_variables


def test_the_known_names_are_the_options_of_every_entry_point_and_the_documented_host_variables():
    known = known_variables()
    for name in (
        "cluster_sets",
        "cluster_render_dest",
        "node_pin",
        "node_allow_empty",
        "node_python_deps_state",
        "cluster_node_name",
        "cluster_node_labels",
        "node_deps_hosts",
    ):
        assert name in known, name
    # Facts and registered results of the roles and playbooks: an earlier play of the same run leaves them.
    for name in (
        "cluster_render_info",
        "cluster_plan",
        "cluster_node_error",
        "node_prefetch_plan",
        "node_result",
        "node_python_report",
        "cluster_unknown_variables",
    ):
        assert name in known, name
    assert "cluster_set" not in known and "name" not in known


def test_a_misspelt_name_is_an_error_naming_the_closest_valid_one_and_the_hosts():
    hostvars = {
        "localhost": {"cluster_set": ["sets/"], "cluster_sets": []},
        "cp-0": {"node_pinn": "auto", "node_pin": "auto"},
        "w-0": {"node_pinn": "auto"},
    }
    checked = unknown_variables(hostvars, ["localhost", "cp-0", "w-0", "gone"], known_variables())
    assert checked == {
        "errors": [
            "cluster_set (on localhost) is not a variable of pinned.images: did you mean cluster_sets?",
            "node_pinn (on cp-0, w-0) is not a variable of pinned.images: did you mean node_pin?",
        ],
        "warnings": [],
    }


def test_a_name_on_every_host_is_named_as_an_extra_or_all_variable():
    hostvars = {"localhost": {"cluster_set": []}, "cp-0": {"cluster_set": []}}
    assert unknown_variables(hostvars, ["localhost", "cp-0"], known_variables())["errors"] == [
        "cluster_set (on every host: an extra variable or one of the group all) is not a variable of pinned.images: "
        "did you mean cluster_sets?"
    ]


def test_another_roles_variable_is_only_a_warning_and_other_names_are_not_looked_at():
    hostvars = {"w-0": {"node_exporter_version": "1.8", "ansible_host": "10.0.0.1", "pinned_images_limit_hosts": []}}
    assert unknown_variables(hostvars, ["w-0"], known_variables()) == {
        "errors": [],
        "warnings": ["node_exporter_version (on w-0) is not a variable of pinned.images; ignored"],
    }
