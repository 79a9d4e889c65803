# SPDX-License-Identifier: GPL-3.0-or-later
"""The check of the playbooks' variables against the roles' argument specs."""

from __future__ import annotations

import re

from ansible_collections.pinned.images.plugins.plugin_utils._variables import (
    known_variables,
    unknown_variables,
    variable_problems,
)


def ansible_neutral(line):
    """Ansible's own conversion message, whose wording differs between ansible-core versions, in one form."""
    return re.sub(
        r"is of type .* and we were unable to convert to (\w+): .* (\(on [^)]*\))$",
        r"cannot be converted to \1 \2",
        line,
    )


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


EVERY = "every host: an extra variable or one of the group all"


def test_a_bad_value_given_to_every_host_is_one_line_naming_the_variable_and_what_is_allowed():
    hostvars = {host: {"node_prefetch_options": {"min_free": -1}} for host in ("localhost", "cp-0", "w-0")}
    assert variable_problems(hostvars, ["localhost", "cp-0", "w-0"]) == {
        "errors": [
            "node_prefetch_options.min_free: size '-1' is not understood; allowed are bytes (1073741824), binary "
            "units (500Mi, 16Gi, 1.5Gi), decimal units (1G, 500M) or a percent of the filesystem size (10%) "
            f"(on {EVERY})"
        ],
        "warnings": [],
    }


def test_every_problem_of_every_kind_is_listed_at_once():
    hostvars = {
        "localhost": {"cluster_sets": ["sets/"]},
        "cp-0": {
            "node_pin": "maybe",
            "node_retries": "abc",
            "node_worker_concurrency": 0,
            "node_control_plane_pull_pause": -1,
            "node_prune_min_age": "3 weeks",
            "node_pace_path": "var/lib/etcd",
            "node_cri_socket": "unix://run/containerd.sock",
            "node_crio_reload": "restart",
            "node_prune": "perhaps",
        },
    }
    errors = variable_problems(hostvars, ["localhost", "cp-0"])["errors"]
    assert sorted(ansible_neutral(line) for line in errors if "node_prune'" not in line) == sorted(
        [
            "value of node_pin must be one of: auto, true, false, label, got: maybe (on cp-0)",
            "argument 'node_retries' cannot be converted to int (on cp-0)",
            "node_worker_concurrency must be at least 1, got 0 (on cp-0)",
            "node_control_plane_pull_pause must be at least 0, got -1.0 (on cp-0)",
            "node_prune_min_age: '3 weeks' is not a duration; give a number with an optional unit s, m, h or d "
            "(90s, 30m, 2h, 7d) (on cp-0)",
            "node_pace_path must be an absolute path on the node, got 'var/lib/etcd' (on cp-0)",
            "node_cri_socket must be an absolute path or unix:// URL of the node's CRI socket, got "
            "'unix://run/containerd.sock' (on cp-0)",
            "value of node_crio_reload must be one of: systemd, signal, none, got: restart (on cp-0)",
        ]
    )
    # Ansible lists the valid booleans in no fixed order.
    (boolean,) = [line for line in errors if "node_prune'" in line]
    assert ansible_neutral(boolean) == "argument 'node_prune' cannot be converted to bool (on cp-0)"


def test_node_prefetch_options_takes_only_the_modules_options_with_their_types_and_bounds():
    options = {"min_fre": "1Gi", "retries": "x", "pace_percentile": 200, "concurrency": 0, "throttle": 1.5}
    errors = variable_problems({"cp-0": {"node_prefetch_options": options}}, ["cp-0"])["errors"]
    assert [ansible_neutral(line) for line in errors] == [
        "node_prefetch_options.min_fre is not an option of pinned.images.prefetch: did you mean min_free? (on cp-0)",
        "node_prefetch_options: argument 'retries' cannot be converted to int (on cp-0)",
        "node_prefetch_options.concurrency must be at least 1, got 0 (on cp-0)",
        "node_prefetch_options.pace_percentile must be above 0 and at most 100, got 200.0 (on cp-0)",
    ]


def test_a_reserve_under_a_mebibyte_without_its_unit_warns_and_suggests_the_unit():
    for value in (16, "16"):
        checked = variable_problems({"w-0": {"node_prefetch_options": {"min_free": value}}}, ["w-0"])
        assert checked == {
            "errors": [],
            "warnings": [
                "node_prefetch_options.min_free: 16 has no unit, so it means 16 bytes, which keeps almost nothing "
                "free; did you mean 16Gi? Give the unit (16Gi, 500Mi), or 0 for no reserve (on w-0)"
            ],
        }
    for value in (0, "0", "16Gi", 2**20, "10%"):
        assert variable_problems({"w-0": {"node_prefetch_options": {"min_free": value}}}, ["w-0"]) == {
            "errors": [],
            "warnings": [],
        }


def test_good_values_and_values_made_for_the_node_pass():
    class NodeFacts(dict):
        """A host whose variable is a template of the node's facts: it cannot be resolved on the controller."""

        def __getitem__(self, name):
            if name == "node_cri_socket":
                raise KeyError("ansible_facts is undefined")
            return super().__getitem__(name)

    hostvars = {
        "localhost": {"cluster_sets": ["sets/"], "cluster_worker_serial": "100%"},
        "cp-0": NodeFacts(
            node_pin="auto",
            node_retries="3",
            node_prune="yes",
            node_prune_min_age="7d",
            node_cri_socket="{{ ansible_facts.x }}",
            node_pace_path="/var/lib/etcd",
            node_prefetch_options={"min_free": "10%", "disk_guard": "off", "old_runtime": "warn"},
            node_exporter_version="1.0",
        ),
    }
    assert variable_problems(hostvars, ["localhost", "cp-0", "gone"]) == {"errors": [], "warnings": []}
