# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the cluster role: node plan, phases, statuses, report, report page and render objects (documented in
the .yml files; the logic is in ``plugin_utils``: ``_plan.py``, ``_results.py``, ``_pod_access.py``,
``_report_html.py`` and ``_render.py``)."""

from __future__ import annotations

import os
import shutil
from typing import Any, Callable, Container, Dict, List, Mapping, Optional, Sequence, Union

from ansible_collections.pinned.images.plugins.plugin_utils import (
    _audit,
    _hostvars,
    _plan,
    _pod_access,
    _render,
    _report_html,
    _results,
)


def cluster_host_nodes(
    hosts: Sequence[str], hostvars: _hostvars.HostVars, control_plane_hosts: Container[str]
) -> List[Dict[str, Any]]:
    """The inventory hosts as nodes (name, labels)."""
    return _plan.host_nodes(hosts, hostvars, control_plane_hosts)


def cluster_plan(
    hosts: Sequence[str],
    hostvars: _hostvars.HostVars,
    control_plane_hosts: Container[str],
    info: Optional[Mapping[str, Any]] = None,
    add_hosts: Any = False,
    excluded: Optional[Sequence[str]] = None,
) -> List[Dict[str, Any]]:
    """What each node gets."""
    return _plan.node_plan(
        hosts, hostvars, control_plane_hosts, info=info, add_hosts=bool(add_hosts), excluded=excluded or []
    )


def cluster_phase_order(order: Any) -> List[str]:
    """The order of the phases as a list."""
    return _plan.phase_order(order)


def cluster_node_groups(plan: List[Dict[str, Any]], order: Any) -> List[Dict[str, Any]]:
    """The groups and variables of each node of the plan."""
    return _plan.node_groups(plan, _plan.phase_order(order))


def cluster_node_pods(
    pods: Sequence[Mapping[str, Any]],
    node_groups: Sequence[Mapping[str, Any]],
    k8s_auth: Optional[Mapping[str, Any]],
    host_root: str,
    python: str,
) -> List[Dict[str, Any]]:
    """The inventory host and host variables of each node reached through its pod (the ``K8S_AUTH_*`` variables
    of the controller's environment, as the cluster modules read them, where ``k8s_auth`` leaves an option out)."""
    return _pod_access.node_pods(pods, node_groups, k8s_auth or {}, host_root, python, os.environ)


def cluster_pod_access_problem(kubectl: str) -> str:
    """Why pod mode cannot run on this controller, "" when it can."""
    from ansible.plugins.loader import connection_loader  # pylint: disable=import-outside-toplevel

    return _pod_access.pod_access_problem(
        kubectl, shutil.which, lambda name: connection_loader.find_plugin(name) is not None
    )


def cluster_plan_message(plan: List[Dict[str, Any]], order: Any) -> str:
    """The summary of the plan."""
    return _plan.plan_message(plan, _plan.phase_order(order))


def cluster_phases(
    order: Any,
    control_plane_serial: Any = 1,
    worker_serial: Any = 1,
    control_plane_max_fail_percentage: Any = 0,
    worker_max_fail_percentage: Any = 0,
) -> List[Dict[str, Any]]:
    """The phases of the prefetch playbook."""
    return _plan.phases(
        _plan.phase_order(order),
        (control_plane_serial, control_plane_max_fail_percentage),
        (worker_serial, worker_max_fail_percentage),
    )


def node_set_list(sets: Optional[Sequence[Any]], images: Sequence[str], name: Optional[str] = None) -> List[Any]:
    """The sets of a node, its own images as one more set."""
    return _plan.node_set_list(sets, images, name)


def cluster_progressing(plan: Sequence[Mapping[str, Any]], hostvars: _hostvars.HostVars) -> List[Dict[str, Any]]:
    """The progressing status of the nodes of the plan."""
    return _results.progressing_statuses(plan, hostvars)


def cluster_results(
    hosts: Sequence[str], hostvars: _hostvars.HostVars, unresolved_hosts: Optional[Sequence[str]] = None
) -> List[Dict[str, Any]]:
    """The result of each node."""
    return _results.node_results(hosts, hostvars, unresolved_hosts or [])


def cluster_batch_stopped(batch: Sequence[str], hostvars: _hostvars.HostVars, max_fail_percentage: Any) -> bool:
    """Whether too many hosts of the batch failed."""
    return _results.batch_stopped(batch, hostvars, max_fail_percentage)


def cluster_summary(results: Sequence[Mapping[str, Any]], excluded: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """The totals of the results, and the nodes a --limit excluded."""
    return _results.summary(results, excluded or [])


def cluster_plan_problem(
    plan: Sequence[Mapping[str, Any]],
    hostvars: _hostvars.HostVars,
    groups: Mapping[str, Sequence[str]],
    sources: Mapping[str, Any],
    info: Optional[Mapping[str, Any]] = None,
    allow_empty: Any = False,
) -> str:
    """Why the plan must not run, or ""."""
    return _plan.plan_problem(plan, hostvars, groups, sources, info, bool(allow_empty))


def cluster_report_lines(
    results: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    check_mode: Any = False,
    result_format: str = "json",
) -> Union[List[str], str]:
    """The report table, as lines or (``result_format=yaml``) one string."""
    return _results.report_message(_results.report_lines(results, summary, check_mode=bool(check_mode)), result_format)


def cluster_done(results: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The done status of each node."""
    return _results.done_statuses(results)


def cluster_report_nodes(results: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The results without their image and set lists."""
    return _results.report_nodes(results)


def cluster_run(
    results: Sequence[Mapping[str, Any]],
    phases: Optional[Sequence[Mapping[str, Any]]] = None,
    plan: Optional[Sequence[Mapping[str, Any]]] = None,
    forks: Any = None,
    check_mode: Any = False,
    run_id: str = "",
) -> Dict[str, Any]:
    """The run's parameters for the report."""
    return _results.run_parameters(results, phases, plan, forks=forks, check_mode=bool(check_mode), run_id=run_id)


def cluster_report_paths(report_file: str, run_id: str, per_run: Any = True) -> Dict[str, Optional[str]]:
    """The run's report file and page, and the links to the latest."""
    return _results.report_paths(report_file, run_id, per_run=bool(per_run))


def cluster_report_html(
    report: Mapping[str, Any],
    hostvars: Optional[_hostvars.HostVars] = None,
    k8s_auth: Optional[Mapping[str, Any]] = None,
    secrets: Optional[Sequence[str]] = None,
) -> str:
    """The report page (HTML), without the run's secrets."""
    return _report_html.render_page(report, _report_html.page_secrets(report, hostvars, k8s_auth, secrets or ()))


def cluster_report_html_path(report_file: str) -> str:
    """The report page's path beside the JSON report file."""
    return _report_html.page_path(report_file)


def render_objects(info: Mapping[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """The sets and pools of a pinned_image_set_info result as API objects."""
    return _render.render_objects(info)


def release_plan_message(release: Mapping[str, Any]) -> str:
    """The plan of a release_image_set result in one line."""
    return _plan.release_message(release)


def cluster_audit_results(
    hosts: Sequence[str], hostvars: _hostvars.HostVars, unresolved_hosts: Optional[Sequence[str]] = None
) -> List[Dict[str, Any]]:
    """The audit row of each node."""
    return _audit.audit_results(hosts, hostvars, unresolved_hosts or [])


def cluster_audit_summary(
    results: Sequence[Mapping[str, Any]], excluded: Optional[Sequence[str]] = None
) -> Dict[str, Any]:
    """The totals of the audit, and the nodes that drifted."""
    return _audit.audit_summary(results, excluded or [])


def cluster_audit_lines(results: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> List[str]:
    """The audit table and each drift."""
    return _audit.audit_lines(results, summary)


def cluster_report_junit(results: Sequence[Mapping[str, Any]], kind: str = "prefetch") -> str:
    """JUnit XML of the run: a testcase per node."""
    return _audit.junit_xml(results, kind)


def cluster_report_metrics(results: Sequence[Mapping[str, Any]], kind: str = "prefetch") -> str:
    """The run's per-node gauges for node_exporter's textfile collector."""
    return _audit.metrics_text(results, kind)


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {
            "cluster_host_nodes": cluster_host_nodes,
            "cluster_plan": cluster_plan,
            "cluster_phase_order": cluster_phase_order,
            "cluster_node_groups": cluster_node_groups,
            "cluster_plan_message": cluster_plan_message,
            "cluster_node_pods": cluster_node_pods,
            "cluster_pod_access_problem": cluster_pod_access_problem,
            "cluster_phases": cluster_phases,
            "node_set_list": node_set_list,
            "cluster_progressing": cluster_progressing,
            "cluster_results": cluster_results,
            "cluster_batch_stopped": cluster_batch_stopped,
            "cluster_summary": cluster_summary,
            "cluster_plan_problem": cluster_plan_problem,
            "cluster_report_lines": cluster_report_lines,
            "cluster_done": cluster_done,
            "cluster_report_nodes": cluster_report_nodes,
            "cluster_run": cluster_run,
            "cluster_report_html": cluster_report_html,
            "cluster_report_html_path": cluster_report_html_path,
            "cluster_audit_results": cluster_audit_results,
            "cluster_audit_summary": cluster_audit_summary,
            "cluster_audit_lines": cluster_audit_lines,
            "cluster_report_junit": cluster_report_junit,
            "cluster_report_metrics": cluster_report_metrics,
            "cluster_report_paths": cluster_report_paths,
            "render_objects": render_objects,
            "release_plan_message": release_plan_message,
        }
