# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster role's filters: node plan, phases, statuses, report rows and render objects."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.pinned.images.plugins.filter.cluster import FilterModule
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets

F = FilterModule().filters()
A = "quay.io/openshift/app-a@sha256:" + "a" * 64
B = "quay.io/openshift/app-b@sha256:" + "b" * 64
CP_LABELS = {"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""}


def test_host_nodes_use_names_and_labels_or_the_role_defaults():
    hostvars = {"cp": {}, "w1": {"cluster_node_name": "worker-1"}, "w2": {"cluster_node_labels": {"gpu": ""}}}
    assert F["cluster_host_nodes"](["cp", "w1", "w2"], hostvars, ["cp"]) == [
        {"name": "cp", "labels": CP_LABELS},
        {"name": "worker-1", "labels": {"node-role.kubernetes.io/worker": ""}},
        {"name": "w2", "labels": {"gpu": ""}},
    ]


def test_plan_without_info_keeps_every_host_with_its_own_sets():
    plan = F["cluster_plan"](["cp", "w"], {"cp": {}, "w": {"cluster_node_name": "worker-0"}}, ["cp"])
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
    plan = F["cluster_plan"](["m", "worker-0", "odd"], hostvars, [], info=info)
    assert [(p["host"], p["node"], p["control_plane"], p["added"]) for p in plan] == [
        ("m", "master-0", True, False),
        ("worker-0", "worker-0", False, False),
        ("odd", "odd", False, False),
    ]
    assert plan[1]["sets"] == [{"name": "worker-set", "images": [A]}, {"name": "gone", "images": []}]
    assert plan[2]["error"] == "two custom pools select it"
    added = F["cluster_plan"](["m"], hostvars, [], info=info, add_hosts=True)
    assert [(p["host"], p["added"]) for p in added] == [
        ("m", False),
        ("worker-0", True),
        ("extra", True),
        ("odd", True),
    ]


def test_phases_follow_the_order_and_pad_to_two():
    phases = F["cluster_phases"](
        ["workers", "control_plane"],
        control_plane_serial=1,
        worker_serial="25%",
        control_plane_max_fail_percentage="0",
        worker_max_fail_percentage=10,
    )
    assert phases == [
        {"group": "workers", "serial": "25%", "max_fail_percentage": 10},
        {"group": "control_plane", "serial": 1, "max_fail_percentage": 0},
    ]
    padding = F["cluster_phases"](["workers"], worker_serial=2)[1]
    assert padding == {"group": "", "serial": 1, "max_fail_percentage": 100}


@pytest.mark.parametrize("serial", ["abc", [], [1, "x%"], True, "-1", 1.5])
def test_a_batch_size_serial_cannot_take_fails_naming_the_variable(serial):
    with pytest.raises(ValueError, match=r"^cluster_control_plane_serial must be a number \(1\), a percentage"):
        F["cluster_phases"](["control_plane", "workers"], control_plane_serial=serial)
    assert F["cluster_phases"](["workers"], worker_serial=[1, "5", "25%"])[0]["serial"] == [1, "5", "25%"]


@pytest.mark.parametrize("order", ["workers, control_plane", "workers,control_plane,", ["workers", "control_plane"]])
def test_phase_order_reads_a_list_or_a_survey_text(order):
    assert F["cluster_phase_order"](order) == ["workers", "control_plane"]
    assert [p["group"] for p in F["cluster_phases"](order)] == ["workers", "control_plane"]


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
    groups = F["cluster_node_groups"](PLAN, "workers,control_plane")
    assert [(g["host"], g["groups"]) for g in groups] == [
        ("cp", ["pinned_images_nodes", "pinned_images_control_plane", "pinned_images_phase_2"]),
        ("w", ["pinned_images_nodes", "pinned_images_workers", "pinned_images_phase_1"]),
        ("extra", ["pinned_images_nodes", "pinned_images_workers", "pinned_images_phase_1", "pinned_images_added"]),
    ]
    assert groups[0]["sets"] is None and groups[1]["sets"] == [{"name": "s", "images": [A]}]
    assert groups[1]["node"] == "worker-0" and groups[0]["control_plane"]
    # A phase left out of the order leaves its nodes out of every group.
    assert [g["host"] for g in F["cluster_node_groups"](PLAN, ["control_plane"])] == ["cp"]


def test_plan_message_counts_the_nodes_and_names_those_left_out():
    assert F["cluster_plan_message"](PLAN, ["control_plane", "workers"]) == (
        "1 control-plane and 3 worker nodes; phases: control_plane then workers; left out (pools ambiguous): odd"
    )
    assert F["cluster_plan_message"](PLAN[:1], "workers") == "1 control-plane and 0 worker nodes; phases: workers"


def test_report_nodes_drop_the_image_and_set_lists():
    results = [{"host": "w", "status": "ok", "images": [A], "sets": [{"name": "s"}], "pulled": 1}]
    assert F["cluster_report_nodes"](results) == [{"host": "w", "status": "ok", "pulled": 1}]
    assert results[0]["images"] == [A]


def test_node_set_list_adds_the_own_images_under_the_default_or_given_name():
    sets = [{"name": "s", "images": [A]}]
    assert F["node_set_list"](sets, []) == sets
    assert F["node_set_list"](sets, [B]) == sets + [{"name": "pinned-images", "images": [B]}]
    assert F["node_set_list"](sets, [B], "mine") == sets + [{"name": "mine", "images": [B]}]


def test_progressing_statuses_skip_unresolved_nodes_and_add_own_images():
    plan = [
        {"host": "a", "node": "node-a", "sets": None, "error": ""},
        {"host": "b", "node": "node-b", "sets": [{"name": "s", "images": [A]}], "error": ""},
        {"host": "c", "node": "node-c", "sets": [], "error": "ambiguous"},
    ]
    hostvars = {
        "a": {"node_sets": [{"name": "t", "images": [B]}], "node_images": [A], "node_images_set_name": "own"},
        "b": {},
        "c": {},
    }
    assert F["cluster_progressing"](plan, hostvars) == [
        {
            "name": "node-a",
            "state": "progressing",
            "sets": [{"name": "t", "images": [B]}, {"name": "own", "images": [A]}],
        },
        {"name": "node-b", "state": "progressing", "sets": [{"name": "s", "images": [A]}]},
    ]


def _result(**kwargs):
    base = {
        "node": "n",
        "status": "ok",
        "error": "",
        "node_error": "",
        "requested": 2,
        "present": 1,
        "pulled": 1,
        "failed": 0,
        "would_pull": 0,
        "bytes": 3 * 1048576,
        "seconds": 1.25,
        "changed": True,
        "pinned": 2,
        "pin_method": "dropin",
        "sets": [{"name": "s", "images": [A, B]}],
        "images": [{"image": A}],
    }
    return dict(base, **kwargs)


def test_results_mark_nodes_without_a_result_and_unresolved_nodes():
    hostvars = {
        "a": {"node_result": _result(node="a")},
        "b": {"node_sets": [{"name": "s", "images": [A]}], "node_control_plane": True},
        "c": {"cluster_node_name": "node-c", "cluster_node_error": "ambiguous"},
    }
    results = F["cluster_results"](["a", "b"], hostvars, ["c"])
    assert [(r["host"], r["node_name"], r["status"]) for r in results] == [
        ("a", "a", "ok"),
        ("b", "b", "not_run"),
        ("c", "node-c", "failed"),
    ]
    assert results[1]["error"].startswith("not attempted") and results[1]["sets"] == [{"name": "s", "images": [A]}]
    assert results[2]["error"] == results[2]["node_error"] == "ambiguous"
    # The report page puts nodes without a result in their phase.
    assert (results[1]["control_plane"], results[2]["control_plane"]) == (True, False)
    summary = F["cluster_summary"](results)
    assert summary == {
        "nodes": 3,
        "ok": 1,
        "failed": 1,
        "not_run": 1,
        "pulled": 1,
        "would_pull": 0,
        "present": 1,
        "failed_images": 0,
        "bytes": 3 * 1048576,
        "pruned": 0,
        "freed_bytes": 0,
        "node_seconds": 1.25,
        "failed_nodes": ["b", "c"],
        "excluded": [],
    }


def test_a_prune_adds_the_freed_bytes_per_node_and_in_total():
    results = [
        dict(_result(), host="a", node_name="a", pruned=2, prune_kept=1, freed_bytes=3 * 1048576),
        dict(_result(), host="b", node_name="b", pruned=0, prune_kept=0, freed_bytes=0),
        dict(_result(), host="c", node_name="c", pruned=None, freed_bytes=0),
    ]
    totals = F["cluster_summary"](results)
    assert (totals["pruned"], totals["freed_bytes"]) == (2, 3 * 1048576)
    lines = F["cluster_report_lines"](results, totals, True)
    assert lines[0].split()[-2:] == ["freed", "pinned"]
    assert [line[-22:-10].strip() for line in lines[1:4]] == ["3.0 MiB", "0 B", "-"]
    assert (
        lines[4].rstrip().endswith("3.8     3.0 MiB")
        and 'nothing was pruned; "freed" counts the bytes the prune would free' in lines[-1]
    )
    # Without a prune the table is as before.
    assert "freed" not in F["cluster_report_lines"]([results[2]], F["cluster_summary"]([results[2]]))[0]


def test_report_lines_show_rows_totals_check_note_and_errors():
    results = [
        dict(_result(), host="a", node_name="a"),
        dict(
            _result(status="failed", error="boom", pinned=None, pulled=0, would_pull=1, bytes=0, seconds=0.0),
            host="b",
            node_name="b",
        ),
        dict(
            _result(pinned=None, pin_method="none", pin_reason="containerd 1.6.20 will not honour the pin"),
            host="c",
            node_name="c",
        ),
    ]
    lines = F["cluster_report_lines"](results, F["cluster_summary"](results), check_mode=True)
    assert lines[0].split() == ["node", "status", "pulled", "present", "failed", "bytes", "seconds", "pinned"]
    assert lines[1].split() == ["a", "ok", "1", "1", "0", "3.0", "MiB", "1.2", "dropin", "2"]
    assert lines[2].split() == ["b", "failed", "1", "1", "0", "0", "B", "0.0", "-"]
    assert lines[3].split() == ["c", "ok", "1", "1", "0", "3.0", "MiB", "1.2", "not", "pinned"]
    assert lines[4].split() == ["total", "(3", "nodes)", "2", "ok", "3", "3", "0", "6.0", "MiB", "2.5"]
    assert lines[5].startswith("check mode") and lines[6:] == ["b: boom"]
    lines = F["cluster_report_lines"](results, F["cluster_summary"](results))
    assert not any(line.startswith("check mode") for line in lines)


def test_run_parameters_gather_phases_sets_pools_and_the_time_span():
    results = [
        dict(_result(started=10.0, finished=14.0), host="a"),
        dict(
            _result(
                sets=[{"name": "s", "images": [A, B]}, {"name": "own", "images": [A]}], started=15.0, finished=16.5
            ),
            host="b",
        ),
        dict(_result(status="not_run", sets=[]), host="c"),
    ]
    phases = F["cluster_phases"](["control_plane"], 1, "100%", 100, 100)
    plan = [{"host": "a", "pools": ["master"]}, {"host": "b", "pools": ["master", "infra"]}, {"host": "c", "pools": []}]
    run = F["cluster_run"](results, phases, plan, forks="5", check_mode="")
    assert run == {
        "phases": [{"group": "control_plane", "serial": 1, "max_fail_percentage": 100}],
        "forks": 5,
        "check_mode": False,
        "sets": [{"name": "own", "images": 1, "nodes": 1}, {"name": "s", "images": 2, "nodes": 2}],
        "pools": [{"name": "infra", "nodes": 1}, {"name": "master", "nodes": 2}],
        "started": 10.0,
        "finished": 16.5,
    }
    # The report entry point on its own: no plan, no phases, no times.
    assert F["cluster_run"]([dict(_result(), host="a")]) == {
        "phases": [],
        "forks": None,
        "check_mode": False,
        "sets": [{"name": "s", "images": 2, "nodes": 1}],
        "pools": [],
        "started": None,
        "finished": None,
    }


def test_done_statuses_carry_sets_images_and_errors():
    results = [dict(_result(node_error="boom"), node_name="node-a"), dict(_result(sets=None), node_name="node-b")]
    done = F["cluster_done"](results)
    assert done[0] == {
        "name": "node-a",
        "state": "done",
        "sets": [{"name": "s", "images": [A, B]}],
        "images": [{"image": A}],
        "error": "boom",
    }
    assert done[1]["sets"] == [] and done[1]["error"] == ""


def test_render_objects_are_valid_api_objects_that_load_back_the_same():
    info = {
        "sets": [
            {
                "name": "worker-set",
                "labels": {"machineconfiguration.openshift.io/role": "worker"},
                "images": [B, A],
                "pool_selector": None,
            },
            {
                "name": "seed",
                "labels": {},
                "images": [A],
                "pool_selector": {"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}},
            },
        ],
        "pools": [
            {
                "name": "worker",
                "labels": {"pools.operator.machineconfiguration.openshift.io/worker": ""},
                "machine_config_selector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
                "node_selector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
                "pinned_image_sets": ["worker-set"],
            },
            {
                "name": "bare",
                "labels": {},
                "machine_config_selector": None,
                "node_selector": None,
                "pinned_image_sets": [],
            },
        ],
    }
    objects = F["render_objects"](info)
    assert objects["sets"][0] == {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "PinnedImageSet",
        "metadata": {"name": "worker-set", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"pinnedImages": [{"name": B}, {"name": A}]},
    }
    assert objects["pools"][1]["spec"] == {"machineConfigSelector": {}, "nodeSelector": {}}
    sets, pools = load_sets(objects["sets"] + objects["pools"])
    assert [(s.name, list(s.images), s.pool_selector) for s in sets] == [
        (s["name"], s["images"], s["pool_selector"]) for s in info["sets"]
    ]
    assert [(p.name, list(p.pinned_image_sets)) for p in pools] == [("worker", ["worker-set"]), ("bare", [])]


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
    assert F["release_plan_message"](release) == head + "size not estimated"
    estimate = {"required": "2.0 MiB", "compressed_bytes": 1048576, "expansion_factor": 2.0, "unreadable": {}}
    assert (
        F["release_plan_message"](dict(release, estimate=estimate))
        == head + "each node needs up to 2.0 MiB for them (1048576 compressed bytes x2)"
    )
    assert F["release_plan_message"](dict(release, estimate=dict(estimate, expansion_factor=2.5))).endswith(
        "(1048576 compressed bytes x2.5)"
    )
    estimate["unreadable"] = {A: "404"}
    assert F["release_plan_message"](dict(release, estimate=estimate)).endswith(", 1 manifests unreadable")


@pytest.mark.parametrize(
    "statuses, limit, stopped",
    [
        (["ok", "failed"], 50, False),
        (["ok", "failed", "failed"], 50, True),
        (["failed"], 0, True),
        (["ok"], 0, False),
        (["failed"], 99, True),
        (["failed"], 100, False),
        ([None, "ok"], 49, True),
        ([None, "ok"], "50", False),
    ],
)
def test_a_batch_stops_the_phase_above_its_failure_limit(statuses, limit, stopped):
    hosts = [f"h{index}" for index in range(len(statuses))]
    hostvars = {
        host: ({} if status is None else {"node_result": {"status": status}}) for host, status in zip(hosts, statuses)
    }
    assert F["cluster_batch_stopped"](hosts, hostvars, limit) is stopped


def test_a_host_with_an_empty_result_is_not_counted_as_failed():
    assert F["cluster_batch_stopped"](["a"], {"a": {"node_result": {}}}, 0) is False


GROUPS = {"cluster_control_plane_group": "control_plane", "cluster_worker_group": "workers"}
NO_SOURCE = {
    "cluster_sets": [],
    "cluster_pools": [],
    "cluster_read_cluster": False,
    "inventory_groups": ["all", "ungrouped", "nodes"],
    "excluded": [],
}


def test_a_plan_of_no_node_fails_naming_the_group_variables_and_the_inventorys_groups():
    problem = F["cluster_plan_problem"]([], {}, GROUPS, NO_SOURCE)
    assert problem.startswith(
        "no inventory host is in the groups control_plane (cluster_control_plane_group), "
        "workers (cluster_worker_group), so nothing would run; the inventory has the groups: "
        "nodes. Put the nodes in those groups, or name yours"
    )
    limited = F["cluster_plan_problem"]([], {}, GROUPS, dict(NO_SOURCE, excluded=["cp-0", "w-0"]))
    assert limited.startswith("the --limit leaves out every node of the groups") and "-l 'localhost,cp-0'" in limited


def test_a_plan_that_selects_no_image_fails_unless_allowed():
    plan = F["cluster_plan"](["cp", "w"], {"cp": {}, "w": {}}, ["cp"])
    problem = F["cluster_plan_problem"](plan, {"cp": {}, "w": {}}, GROUPS, NO_SOURCE)
    assert problem.startswith(
        "nothing selects an image: cluster_sets and cluster_pools are empty, "
        "cluster_read_cluster is false and no host has node_images"
    )
    assert F["cluster_plan_problem"](plan, {"cp": {}, "w": {}}, GROUPS, NO_SOURCE, allow_empty=True) == ""
    # A host's own images are a selection.
    assert F["cluster_plan_problem"](plan, {"cp": {"node_images": [A]}, "w": {}}, GROUPS, NO_SOURCE) == ""


def test_sources_that_hold_no_set_fail_naming_them():
    sources = dict(NO_SOURCE, cluster_sets=["sets/"])
    info = {"sets": [], "pools": [], "nodes": [{"name": "cp", "pools": ["master"], "sets": []}]}
    plan = F["cluster_plan"](["cp"], {"cp": {}}, ["cp"], info=info)
    assert F["cluster_plan_problem"](plan, {"cp": {}}, GROUPS, sources, info).startswith(
        "the sources hold no PinnedImageSet: looked at cluster_sets (sets/), so every node's sets would be empty"
    )
    with_sets = dict(info, sets=[{"name": "s", "images": [A]}])
    assert F["cluster_plan_problem"](plan, {"cp": {}}, GROUPS, sources, with_sets) == ""


def test_nodes_a_limit_excludes_are_listed_and_not_counted():
    results = [
        dict(
            node="cp",
            host="cp",
            status="ok",
            pulled=1,
            present=0,
            failed=0,
            bytes=10,
            seconds=1.0,
            pinned=1,
            pin_method="dropin",
            error="",
        )
    ]
    totals = F["cluster_summary"](results, ["w-1", "w-2"])
    assert totals["nodes"] == 1 and totals["not_run"] == 0 and totals["excluded"] == ["w-1", "w-2"]
    lines = F["cluster_report_lines"](results, totals)
    assert "excluded by --limit, not run and not counted: w-1, w-2" in lines


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
    plan = F["cluster_plan"](["cp"], hostvars, ["cp"], info=info, add_hosts=True, excluded=["w1"])
    assert [item["host"] for item in plan] == ["cp"]


_EMPTY_KUBECTL = {
    "ansible_kubectl_token": "",
    "ansible_kubectl_password": "",
    "ansible_kubectl_username": "",
    "ansible_kubectl_verify_ssl": "",
    "ansible_kubectl_kubeconfig": "",
    "ansible_kubectl_context": "",
    "ansible_kubectl_host": "",
    "ansible_kubectl_ca_cert": "",
    "ansible_kubectl_cert_file": "",
    "ansible_kubectl_key_file": "",
    "ansible_kubectl_extra_args": "",
}


def _kubeconfig_file(tmp_path):
    path = tmp_path / "kube" / "config"
    path.parent.mkdir()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://api:6443", "certificate-authority": "ca.crt"}},
                    {"name": "other", "cluster": {"server": "https://other:6443"}},
                ],
                "users": [{"name": "u", "user": {"token": "old-token", "client-key": "/abs/key"}}],
                "contexts": [
                    {"name": "admin", "context": {"cluster": "c", "user": "u", "namespace": "ns"}},
                    {"name": "x", "context": {"cluster": "other", "user": "u"}},
                ],
                "current-context": "x",
            }
        )
    )
    return path


def test_pod_mode_hosts_reach_their_pod_with_the_cluster_connection_and_no_token_on_kubectls_command_line(
    tmp_path, monkeypatch
):
    for variable in ("K8S_AUTH_API_KEY", "K8S_AUTH_HOST", "K8S_AUTH_VERIFY_SSL", "K8S_AUTH_KUBECONFIG"):
        monkeypatch.delenv(variable, raising=False)
    kubeconfig = _kubeconfig_file(tmp_path)
    pods = [
        {"node": "cp-0", "name": "pinned-images-cp-0-1", "namespace": "ns", "running": True, "reason": ""},
        {"node": "w-0", "name": "pinned-images-w-0-2", "namespace": "ns", "running": False, "reason": "ErrImagePull"},
    ]
    auth = {
        "kubeconfig": str(kubeconfig),
        "context": "admin",
        "api_key": "t0ken",
        "ssl_ca_cert": "/ca",
        "validate_certs": False,
        "proxy": "http://proxy:3128",
        "host": "",
        "request_timeout": 30,
    }
    hosts = F["cluster_node_pods"](pods, [{"node": "cp-0", "host": "master-a"}], auth, "/host", "/usr/bin/python3")
    assert [(item["node"], item["host"]) for item in hosts] == [("cp-0", "master-a"), ("w-0", "w-0")]
    # The token only inside a kubeconfig dict (the plugin writes it to a 0600 file for each exec), with the
    # context's cluster (its relative CA made absolute) and user; validation off through kubectl's own flag.
    assert hosts[0]["vars"] == dict(
        _EMPTY_KUBECTL,
        ansible_connection="kubernetes.core.kubectl",
        ansible_become=False,
        ansible_kubectl_kubeconfig={
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "pinned-images",
                    "cluster": {
                        "server": "https://api:6443",
                        "certificate-authority": str(kubeconfig.parent / "ca.crt"),
                    },
                }
            ],
            "users": [{"name": "pinned-images", "user": {"token": "t0ken", "client-key": "/abs/key"}}],
            "contexts": [
                {
                    "name": "pinned-images",
                    "context": {"cluster": "pinned-images", "user": "pinned-images", "namespace": "ns"},
                }
            ],
            "current-context": "pinned-images",
        },
        ansible_kubectl_extra_args="--insecure-skip-tls-verify=true",
        ansible_kubectl_local_env_vars={"HTTPS_PROXY": "http://proxy:3128", "HTTP_PROXY": "http://proxy:3128"},
        ansible_kubectl_pod="pinned-images-cp-0-1",
        ansible_kubectl_namespace="ns",
        ansible_python_interpreter="/usr/bin/python3",
        node_host_root="/host",
        node_access_error="",
    )
    assert hosts[1]["vars"]["node_access_error"] == "ErrImagePull"
    assert F["cluster_node_pods"](pods[:1], [], None, "/host", "auto")[0]["vars"]["ansible_connection"] == (
        "kubernetes.core.kubectl"
    )


def test_pod_mode_reads_the_k8s_auth_environment_as_the_modules_do(monkeypatch):
    pods = [{"node": "cp-0", "name": "p", "namespace": "ns", "running": True, "reason": ""}]
    monkeypatch.setenv("K8S_AUTH_API_KEY", "env-t0ken")
    monkeypatch.setenv("K8S_AUTH_HOST", "https://api:6443")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "yes")
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    variables = F["cluster_node_pods"](pods, [], {"ca_cert": "/ca"}, "/host", "auto")[0]["vars"]
    assert variables["ansible_kubectl_token"] == ""
    assert variables["ansible_kubectl_verify_ssl"] == ""
    assert variables["ansible_kubectl_host"] == "https://api:6443"
    assert variables["ansible_kubectl_ca_cert"] == "/ca"
    assert variables["ansible_kubectl_extra_args"] == "--insecure-skip-tls-verify=false"
    assert variables["ansible_kubectl_kubeconfig"]["users"] == [
        {"name": "pinned-images", "user": {"token": "env-t0ken"}}
    ]
    assert variables["ansible_kubectl_kubeconfig"]["clusters"] == [{"name": "pinned-images", "cluster": {}}]
    # Without a token, a kubeconfig path stays a path.
    monkeypatch.delenv("K8S_AUTH_API_KEY")
    variables = F["cluster_node_pods"](pods, [], {"kubeconfig": "/k", "context": "c"}, "/host", "auto")[0]["vars"]
    assert (variables["ansible_kubectl_kubeconfig"], variables["ansible_kubectl_context"]) == ("/k", "c")


def test_pod_mode_names_a_missing_kubeconfig(monkeypatch, tmp_path):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    pods = [{"node": "cp-0", "name": "p", "namespace": "ns", "running": True, "reason": ""}]
    with pytest.raises(ValueError, match=f"kubeconfig {tmp_path}/none does not exist"):
        F["cluster_node_pods"](pods, [], {"kubeconfig": str(tmp_path / "none"), "api_key": "t"}, "/host", "auto")


class _StrictHostvars(dict):
    """ansible-core 2.19's hostvars: a missing host is not a KeyError."""

    def __getitem__(self, host):
        if host not in self:
            raise RuntimeError(f"hostvars[{host!r}] is undefined")
        return dict.__getitem__(self, host)


def test_a_plan_with_hosts_to_add_reads_no_variable_of_a_missing_host():
    from ansible_collections.pinned.images.plugins.plugin_utils._hostvars import host_var

    hostvars = _StrictHostvars(cp={"node_images": ["x"]})
    assert host_var(hostvars, "cp", "node_images") == ["x"]
    assert host_var(hostvars, "w-9", "node_images", []) == []


def test_pod_mode_names_a_missing_kubectl_or_kubernetes_core_before_any_pod(monkeypatch, tmp_path):
    from ansible_collections.pinned.images.plugins.plugin_utils._pod_access import pod_access_problem

    assert pod_access_problem("kubectl", lambda _name: "/usr/bin/kubectl", lambda _name: True) == ""
    problem = pod_access_problem("kubectl", lambda _name: None, lambda _name: False)
    assert problem.startswith("cluster_node_access=pod needs kubectl and kubernetes.core on the controller: ")
    assert "no kubectl on the controller's PATH" in problem
    assert "no connection plugin kubernetes.core.kubectl: install the collection kubernetes.core" in problem
    assert problem.endswith("; no pod was created")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "no kubectl on the controller's PATH" in F["cluster_pod_access_problem"]("kubectl")
