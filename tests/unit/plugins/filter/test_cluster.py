# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster role's filters as a layer: registered and documented, and what they do to Jinja's values before the
plugin_utils functions (tested in tests/unit/plugins/plugin_utils/) get them: a survey's text for the phase order,
None for an unset option, the controller's environment and PATH."""

from __future__ import annotations

from fixtures.filter_docs import filters_of, registration_problems

F = filters_of("cluster")
PLAN = [
    {"host": "cp", "node": "cp", "added": False, "control_plane": True, "pools": [], "sets": None, "error": ""},
    {"host": "w", "node": "w", "added": False, "control_plane": False, "pools": [], "sets": None, "error": ""},
]


def test_every_filter_is_registered_and_documented():
    assert registration_problems("cluster") == []


def test_the_phase_order_may_be_a_surveys_text():
    order = "workers, control_plane"
    assert F["cluster_phase_order"](order) == ["workers", "control_plane"]
    assert [item["host"] for item in F["cluster_node_groups"](PLAN, order)] == ["cp", "w"]
    assert F["cluster_node_groups"](PLAN, order)[0]["groups"][-1] == "pinned_images_phase_2"
    assert F["cluster_plan_message"](PLAN, order).endswith("phases: workers then control_plane")
    # The five options of the phases, each to its kind of phase.
    assert F["cluster_phases"](order, 1, "25%", "0", 10) == [
        {"group": "workers", "serial": "25%", "max_fail_percentage": 10},
        {"group": "control_plane", "serial": 1, "max_fail_percentage": 0},
    ]
    assert F["cluster_phases"]("workers")[1] == {"group": "", "serial": 1, "max_fail_percentage": 100}


def test_unset_options_and_jinjas_truthy_values_are_taken_as_the_functions_want_them():
    info = {"sets": [], "nodes": [{"name": "extra", "pools": ["worker"], "sets": []}]}
    assert [item["host"] for item in F["cluster_plan"](["cp"], {"cp": {}}, ["cp"], info, 1, None)] == ["extra"]
    assert F["cluster_plan"](["cp"], {"cp": {}}, ["cp"], info, 0) == []
    assert F["cluster_results"](["cp"], {"cp": {"node_result": {"status": "ok"}}}, None)[0]["status"] == "ok"
    assert F["cluster_summary"]([], None)["excluded"] == []
    groups = {"cluster_control_plane_group": "control_plane"}
    sources = {"cluster_sets": [], "cluster_read_cluster": False, "inventory_groups": []}
    assert F["cluster_plan_problem"](PLAN, {}, groups, sources).startswith("nothing selects an image")
    assert F["cluster_plan_problem"](PLAN, {}, groups, sources, None, "yes") == ""
    run = F["cluster_run"]([], check_mode="")
    assert (run["phases"], run["pools"], run["forks"], run["check_mode"]) == ([], [], None, False)
    assert F["cluster_run"]([], forks="5", check_mode=1)["forks"] == 5
    assert F["cluster_report_lines"]([], F["cluster_summary"]([]), 1)[-1].startswith("check mode")


def test_pod_mode_reads_the_controllers_environment_and_path(monkeypatch, tmp_path):
    pods = [{"node": "cp-0", "name": "p", "namespace": "ns", "running": True, "reason": ""}]
    monkeypatch.delenv("K8S_AUTH_API_KEY", raising=False)
    monkeypatch.setenv("K8S_AUTH_HOST", "https://api:6443")
    variables = F["cluster_node_pods"](pods, [], None, "/host", "auto")[0]["vars"]
    assert variables["ansible_kubectl_host"] == "https://api:6443"
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "no kubectl on the controller's PATH" in F["cluster_pod_access_problem"]("kubectl")
    (tmp_path / "kubectl").write_text("#!/bin/sh\n")
    (tmp_path / "kubectl").chmod(0o755)
    assert "no kubectl on the controller's PATH" not in F["cluster_pod_access_problem"]("kubectl")


def test_the_report_page_hides_the_secrets_it_is_given():
    report = {"nodes": [{"host": "cp-0", "status": "failed", "error": "token s3cr3t-t0ken refused"}]}
    assert "s3cr3t-t0ken" in F["cluster_report_html"](report)
    assert "s3cr3t-t0ken" not in F["cluster_report_html"](report, None, {"api_key": "s3cr3t-t0ken"})
    assert "s3cr3t-t0ken" not in F["cluster_report_html"](report, secrets=["s3cr3t-t0ken"])
    assert F["cluster_report_html_path"]("/run/report.json") == "/run/report.html"
