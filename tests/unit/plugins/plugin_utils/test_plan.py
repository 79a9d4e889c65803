# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster role's plan: the nodes of the hosts, what each gets, the phases, the groups and why a plan must not run."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.plugin_utils._plan import (
    host_nodes,
    node_groups,
    node_plan,
    node_set_list,
    phase_order,
    phases,
    plan_message,
    plan_problem,
    release_message,
)

A = "quay.io/openshift/app-a@sha256:" + "a" * 64


B = "quay.io/openshift/app-b@sha256:" + "b" * 64


CP_LABELS = {"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""}


def test_host_nodes_use_names_and_labels_or_the_role_defaults():
    hostvars = {"cp": {}, "w1": {"cluster_node_name": "worker-1"}, "w2": {"cluster_node_labels": {"gpu": ""}}}
    assert host_nodes(["cp", "w1", "w2"], hostvars, ["cp"]) == [
        {"name": "cp", "labels": CP_LABELS},
        {"name": "worker-1", "labels": {"node-role.kubernetes.io/worker": ""}},
        {"name": "w2", "labels": {"gpu": ""}},
    ]


def test_plan_without_info_keeps_every_host_with_its_own_sets():
    plan = node_plan(["cp", "w"], {"cp": {}, "w": {"cluster_node_name": "worker-0"}}, ["cp"])
    assert plan == [
        {"host": "cp", "node": "cp", "added": False, "control_plane": True, "pools": [], "sets": None, "error": ""},
        {
            "host": "w",
            "node": "worker-0",
            "added": False,
            "control_plane": False,
            "pools": [],
            "sets": None,
            "error": "",
        },
    ]


def test_plan_maps_cluster_nodes_to_hosts_and_adds_or_leaves_out_the_others():
    info = {
        "sets": [{"name": "worker-set", "images": [A]}, {"name": "master-set", "images": [B]}],
        "nodes": [
            {"name": "master-0", "pools": ["master"], "sets": ["master-set"], "images": [B]},
            {"name": "worker-0", "pools": ["worker"], "sets": ["worker-set", "gone"], "images": [A]},
            {"name": "extra", "pools": ["worker"], "sets": ["worker-set"], "images": [A]},
            {"name": "odd", "pools": [], "sets": [], "images": [], "error": "two custom pools select it"},
        ],
    }
    hostvars = {"m": {"cluster_node_name": "master-0"}, "worker-0": {}, "odd": {}}
    plan = node_plan(["m", "worker-0", "odd"], hostvars, [], info=info)
    assert [(p["host"], p["node"], p["control_plane"], p["added"]) for p in plan] == [
        ("m", "master-0", True, False),
        ("worker-0", "worker-0", False, False),
        ("odd", "odd", False, False),
    ]
    assert plan[1]["sets"] == [{"name": "worker-set", "images": [A]}, {"name": "gone", "images": []}]
    assert plan[2]["error"] == "two custom pools select it"
    added = node_plan(["m"], hostvars, [], info=info, add_hosts=True)
    assert [(p["host"], p["added"]) for p in added] == [
        ("m", False),
        ("worker-0", True),
        ("extra", True),
        ("odd", True),
    ]


def test_phases_follow_the_order_and_pad_to_two():
    assert phases(["workers", "control_plane"], (1, "0"), ("25%", 10)) == [
        {"group": "workers", "serial": "25%", "max_fail_percentage": 10},
        {"group": "control_plane", "serial": 1, "max_fail_percentage": 0},
    ]
    padding = phases(["workers"], (1, 0), (2, 0))[1]
    assert padding == {"group": "", "serial": 1, "max_fail_percentage": 100}


@pytest.mark.parametrize("serial", ["abc", [], [1, "x%"], True, "-1", 1.5])
def test_a_batch_size_serial_cannot_take_fails_naming_the_variable(serial):
    with pytest.raises(ValueError, match=r"^cluster_control_plane_serial must be a number \(1\), a percentage"):
        phases(["control_plane", "workers"], (serial, 0), (1, 0))
    assert phases(["workers"], (1, 0), ([1, "5", "25%"], 0))[0]["serial"] == [1, "5", "25%"]


@pytest.mark.parametrize("order", ["workers, control_plane", "workers,control_plane,", ["workers", "control_plane"]])
def test_phase_order_reads_a_list_or_a_survey_text(order):
    assert phase_order(order) == ["workers", "control_plane"]


PLAN = [
    {
        "host": "cp",
        "node": "master-0",
        "added": False,
        "control_plane": True,
        "pools": ["master"],
        "sets": None,
        "error": "",
    },
    {
        "host": "w",
        "node": "worker-0",
        "added": False,
        "control_plane": False,
        "pools": ["worker"],
        "sets": [{"name": "s", "images": [A]}],
        "error": "",
    },
    {
        "host": "extra",
        "node": "extra",
        "added": True,
        "control_plane": False,
        "pools": ["worker"],
        "sets": [],
        "error": "",
    },
    {
        "host": "odd",
        "node": "odd",
        "added": False,
        "control_plane": False,
        "pools": [],
        "sets": [],
        "error": "two custom pools",
    },
]


def test_node_groups_follow_the_kind_the_phase_and_the_added_hosts():
    groups = node_groups(PLAN, ["workers", "control_plane"])
    assert [(g["host"], g["groups"]) for g in groups] == [
        ("cp", ["pinned_images_nodes", "pinned_images_control_plane", "pinned_images_phase_2"]),
        ("w", ["pinned_images_nodes", "pinned_images_workers", "pinned_images_phase_1"]),
        ("extra", ["pinned_images_nodes", "pinned_images_workers", "pinned_images_phase_1", "pinned_images_added"]),
    ]
    assert groups[0]["sets"] is None and groups[1]["sets"] == [{"name": "s", "images": [A]}]
    assert groups[1]["node"] == "worker-0" and groups[0]["control_plane"]
    # A phase left out of the order leaves its nodes out of every group.
    assert [g["host"] for g in node_groups(PLAN, ["control_plane"])] == ["cp"]


def test_plan_message_counts_the_nodes_and_names_those_left_out():
    assert plan_message(PLAN, ["control_plane", "workers"]) == (
        "1 control-plane and 3 worker nodes; phases: control_plane then workers; left out (pools ambiguous): odd"
    )
    assert plan_message(PLAN[:1], ["workers"]) == "1 control-plane and 0 worker nodes; phases: workers"


def test_node_set_list_adds_the_own_images_under_the_default_or_given_name():
    sets = [{"name": "s", "images": [A]}]
    assert node_set_list(sets, []) == sets
    assert node_set_list(sets, [B]) == sets + [{"name": "pinned-images", "images": [B]}]
    assert node_set_list(sets, [B], "mine") == sets + [{"name": "mine", "images": [B]}]


GROUPS = {"cluster_control_plane_group": "control_plane", "cluster_worker_group": "workers"}


NO_SOURCE = {
    "cluster_sets": [],
    "cluster_pools": [],
    "cluster_read_cluster": False,
    "inventory_groups": ["all", "ungrouped", "nodes"],
    "excluded": [],
}


def test_a_plan_of_no_node_fails_naming_the_group_variables_and_the_inventorys_groups():
    problem = plan_problem([], {}, GROUPS, NO_SOURCE, None)
    assert problem.startswith(
        "no inventory host is in the groups control_plane (cluster_control_plane_group), "
        "workers (cluster_worker_group), so nothing would run; the inventory has the groups: "
        "nodes. Put the nodes in those groups, or name yours"
    )
    limited = plan_problem([], {}, GROUPS, dict(NO_SOURCE, excluded=["cp-0", "w-0"]), None)
    assert limited.startswith("the --limit leaves out every node of the groups") and "-l 'localhost,cp-0'" in limited


def test_a_plan_that_selects_no_image_fails_unless_allowed():
    plan = node_plan(["cp", "w"], {"cp": {}, "w": {}}, ["cp"])
    problem = plan_problem(plan, {"cp": {}, "w": {}}, GROUPS, NO_SOURCE, None)
    assert problem.startswith(
        "nothing selects an image: cluster_sets and cluster_pools are empty, "
        "cluster_read_cluster is false and no host has node_images"
    )
    assert plan_problem(plan, {"cp": {}, "w": {}}, GROUPS, NO_SOURCE, None, allow_empty=True) == ""
    # A host's own images are a selection.
    assert plan_problem(plan, {"cp": {"node_images": [A]}, "w": {}}, GROUPS, NO_SOURCE, None) == ""


def test_sources_that_hold_no_set_fail_naming_them():
    sources = dict(NO_SOURCE, cluster_sets=["sets/"])
    info = {"sets": [], "pools": [], "nodes": [{"name": "cp", "pools": ["master"], "sets": []}]}
    plan = node_plan(["cp"], {"cp": {}}, ["cp"], info=info)
    assert plan_problem(plan, {"cp": {}}, GROUPS, sources, info).startswith(
        "the sources hold no PinnedImageSet: looked at cluster_sets (sets/), so every node's sets would be empty"
    )
    with_sets = dict(info, sets=[{"name": "s", "images": [A]}])
    assert plan_problem(plan, {"cp": {}}, GROUPS, sources, with_sets) == ""


def test_a_node_whose_host_a_limit_excludes_is_neither_planned_nor_added():
    info = {
        "sets": [],
        "pools": [],
        "nodes": [
            {"name": "cp", "pools": ["master"], "sets": []},
            {"name": "worker-1", "pools": ["worker"], "sets": []},
        ],
    }
    hostvars = {"cp": {}, "w1": {"cluster_node_name": "worker-1"}}
    plan = node_plan(["cp"], hostvars, ["cp"], info=info, add_hosts=True, excluded=["w1"])
    assert [item["host"] for item in plan] == ["cp"]


def test_release_plan_message_gives_the_estimate_or_says_there_is_none():
    release = {
        "version": "4.99.1",
        "release_image": "quay.io/ocp/release@sha256:" + "1" * 64,
        "images": [A, B],
        "sets": [{"metadata": {"name": "release-4.99.1-master"}}, {"metadata": {"name": "release-4.99.1-worker"}}],
    }
    head = (
        f"Release 4.99.1 (quay.io/ocp/release@sha256:{'1' * 64}): 2 images in sets release-4.99.1-master, "
        "release-4.99.1-worker; "
    )
    assert release_message(release) == head + "size not estimated"
    estimate = {"required": "2.0 MiB", "compressed_bytes": 1048576, "expansion_factor": 2.0, "unreadable": {}}
    assert (
        release_message(dict(release, estimate=estimate))
        == head + "each node needs up to 2.0 MiB for them (1048576 compressed bytes x2)"
    )
    assert release_message(dict(release, estimate=dict(estimate, expansion_factor=2.5))).endswith(
        "(1048576 compressed bytes x2.5)"
    )
    estimate["unreadable"] = {A: "404"}
    assert release_message(dict(release, estimate=estimate)).endswith(", 1 manifests unreadable")
