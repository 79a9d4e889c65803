# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The controller-side logic of the ``pinned.images.cluster`` role, exposed as filters by ``plugins/filter/cluster.py``.

``hostvars`` is Ansible's ``hostvars`` (or, in tests, a dict of dicts): only ``hostvars[host].get(name)`` is used.

Public API
----------
``host_var(hostvars, host, name, default)``: a host variable, ``default`` when the host or the variable is undefined.
``DEFAULT_SET_NAME``: the name of the set that holds a node's own images (``node_images``).
``node_set_list(sets, images, name)``: the sets a node gets, its own images as one more set.
``host_nodes(hosts, hostvars, control_plane_hosts)``: inventory hosts described as nodes (name, labels).
``node_plan(hosts, hostvars, control_plane_hosts, info, add_hosts)``: what each node gets.
``render_problem(info, sources, dest, allow_empty)``: why the render of no set must not write, else "".
``phase_order(order)``: the order of the phases, from a list or a survey's comma-separated text.
``phases(order, control_plane, workers)``: the two phases of the prefetch playbook.
``node_groups(plan, order)``: the inventory groups and variables of each resolved node of the plan.
``plan_message(plan, order)``: the one-line summary of the plan.
``node_pods(pods, node_groups, k8s_auth, host_root, python)``: the connection variables of each node reached through its pod
(pod mode), from the ``node_access_pod`` result and the cluster connection options.
``plan_problem(plan, hostvars, groups, sources, info, allow_empty)``: why a plan would do nothing, or touch pins
no input asked for (a failure), else "".
``progressing_statuses(plan, hostvars)``, ``done_statuses(results)``: the ``nodes`` of ``pinned_image_status``.
``node_results(hosts, hostvars, unresolved_hosts)``, ``summary(results)``, ``report_lines(results, summary,
check_mode)``: the report of a run.
``report_nodes(results)``: the results without their image and set lists (for ``set_stats``).
``run_parameters(results, phases, plan, forks, check_mode)``: the run's phases, forks, sets and pools (the report's
``run``).
``render_objects(info)``: the sets and pools of a ``pinned_image_set_info`` result as API objects.
``release_message(release)``: the one-line plan of a ``release_image_set`` result (the stage_release playbook).
``render_written(set_files, machine_configs)``, ``render_stale(found, written)``, ``render_changes(set_files,
machine_configs, removed)``: the files of the render entry point, from the registered task results.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Container, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import human_size
from ansible_collections.pinned.images.plugins.module_utils._sets.model import MachineConfigPool, PinnedImageSet
from ansible_collections.pinned.images.plugins.plugin_utils._node import pin_text

DEFAULT_SET_NAME = "pinned-images"
CONTROL_PLANE = "control_plane"
WORKERS = "workers"
# The groups the cluster role builds for the prefetch plays (see playbooks/prefetch.yml).
NODES_GROUP = "pinned_images_nodes"
CONTROL_PLANE_GROUP = "pinned_images_control_plane"
WORKERS_GROUP = "pinned_images_workers"
ADDED_GROUP = "pinned_images_added"
PHASE_GROUP_PREFIX = "pinned_images_phase_"
_CONTROL_PLANE_LABELS = {"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""}
_WORKER_LABELS = {"node-role.kubernetes.io/worker": ""}
_NOT_RUN = "not attempted: the run stopped before this node (failure percentage) or the node was unreachable"
_ROW = "%-24s %-8s %7s %8s %7s %11s %8s  %s"
# With a prune: the bytes it freed, before ``pinned``.
_PRUNE_ROW = "%-24s %-8s %7s %8s %7s %11s %8s %11s  %s"
_COUNTERS: Dict[str, Any] = {
    "requested": 0,
    "present": 0,
    "pulled": 0,
    "failed": 0,
    "would_pull": 0,
    "bytes": 0,
    "seconds": 0.0,
}
# Ansible's hostvars (a Mapping of host name to its variables) or, in tests, a dict of dicts.
HostVars = Mapping[str, Any]


def host_var(hostvars: HostVars, host: str, name: str, default: Any = None) -> Any:
    """A host variable, ``default`` when the host or the variable is undefined."""
    # Looked up first: ansible-core 2.19's hostvars answers a missing host with an undefined value that raises
    # its own error (cluster_add_hosts plans hosts the inventory does not have yet).
    if host not in hostvars:
        return default
    try:
        return hostvars[host].get(name, default)
    except KeyError:
        return default


def _node_name(hostvars: HostVars, host: str) -> str:
    name: str = host_var(hostvars, host, "cluster_node_name", host)
    return name


def node_set_list(sets: Optional[Sequence[Any]], images: Sequence[str], name: Optional[str] = None) -> List[Any]:
    """``sets`` plus, when ``images`` is not empty, a set ``name`` (default ``DEFAULT_SET_NAME``) holding them."""
    own = [{"name": name or DEFAULT_SET_NAME, "images": list(images)}] if images else []
    return list(sets or []) + own


def host_nodes(hosts: Sequence[str], hostvars: HostVars, control_plane_hosts: Container[str]) -> List[Dict[str, Any]]:
    """``[{name, labels}]`` of the inventory hosts: ``cluster_node_name`` and ``cluster_node_labels`` when set, else
    the host name and the labels OpenShift gives a control-plane or a worker node."""
    out = []
    for host in hosts:
        labels = _CONTROL_PLANE_LABELS if host in control_plane_hosts else _WORKER_LABELS
        labels = host_var(hostvars, host, "cluster_node_labels", dict(labels))
        out.append({"name": _node_name(hostvars, host), "labels": labels})
    return out


def node_plan(
    hosts: Sequence[str],
    hostvars: HostVars,
    control_plane_hosts: Container[str],
    info: Optional[Mapping[str, Any]] = None,
    add_hosts: bool = False,
    excluded: Sequence[str] = (),
) -> List[Dict[str, Any]]:
    """One entry per node (``host``, ``node``, ``added``, ``control_plane``, ``pools``, ``sets``, ``error``).

    Without ``info`` (nothing to resolve) every inventory host is a node whose ``sets`` is None (its own variables
    decide). With ``info`` (the ``pinned_image_set_info`` result) the nodes are ``info['nodes']``, mapped to the
    inventory hosts by node name; the others are added under their node name with ``add_hosts``, else left out.
    The nodes of the ``excluded`` hosts (left out by a --limit) are never added.
    """
    if info is None:
        return [
            {
                "host": host,
                "node": _node_name(hostvars, host),
                "added": False,
                "control_plane": host in control_plane_hosts,
                "pools": [],
                "sets": None,
                "error": "",
            }
            for host in hosts
        ]
    by_node = {_node_name(hostvars, host): host for host in list(hosts) + list(excluded)}
    images_of = {image_set["name"]: image_set["images"] for image_set in info.get("sets", [])}
    plan: List[Dict[str, Any]] = []
    for node in info.get("nodes", []):
        host = by_node.get(node["name"]) or (node["name"] if add_hosts else "")
        if not host or host in excluded:
            continue
        plan.append(
            {
                "host": host,
                "node": node["name"],
                "added": node["name"] not in by_node,
                "control_plane": "master" in node["pools"] or host in control_plane_hosts,
                "pools": node["pools"],
                "sets": [{"name": name, "images": images_of.get(name, [])} for name in node["sets"]],
                "error": node.get("error", ""),
            }
        )
    return plan


def phase_order(order: Any) -> List[str]:
    """``order`` as a list of phase names; a survey answer arrives as text, ``"workers, control_plane"``."""
    if isinstance(order, str):
        return [phase.strip() for phase in order.split(",") if phase.strip()]
    return list(order)


def _phase(item: Mapping[str, Any]) -> str:
    return CONTROL_PLANE if item["control_plane"] else WORKERS


def node_groups(plan: List[Dict[str, Any]], order: List[str]) -> List[Dict[str, Any]]:
    """For each resolved node of ``plan`` whose phase is in ``order``: ``host``, ``node``, ``control_plane``,
    ``sets`` (None: the host's own variables decide) and ``groups``, the groups of the prefetch plays (every node,
    its kind, its phase, and the added hosts)."""
    out = []
    for item in plan:
        if item["error"] or _phase(item) not in order:
            continue
        groups = [
            NODES_GROUP,
            CONTROL_PLANE_GROUP if item["control_plane"] else WORKERS_GROUP,
            f"{PHASE_GROUP_PREFIX}{order.index(_phase(item)) + 1}",
        ]
        if item["added"]:
            groups.append(ADDED_GROUP)
        out.append(
            {
                "host": item["host"],
                "node": item["node"],
                "control_plane": item["control_plane"],
                "sets": item["sets"],
                "groups": groups,
            }
        )
    return out


def plan_message(plan: List[Dict[str, Any]], order: List[str]) -> str:
    """``"N control-plane and M worker nodes; phases: a then b"``, and the hosts left out for ambiguous pools."""
    control_plane = sum(1 for item in plan if item["control_plane"])
    left_out = [item["host"] for item in plan if item["error"]]
    message = (
        f"{control_plane} control-plane and {len(plan) - control_plane} worker nodes; phases: {' then '.join(order)}"
    )
    return message + (f"; left out (pools ambiguous): {', '.join(left_out)}" if left_out else "")


def plan_problem(
    plan: Sequence[Mapping[str, Any]],
    hostvars: HostVars,
    groups: Mapping[str, Sequence[str]],
    sources: Mapping[str, Any],
    info: Optional[Mapping[str, Any]],
    allow_empty: bool = False,
) -> str:
    """Why the plan must not run, naming what was looked at and the fix; "" when it may.

    ``groups`` maps the role's group variables (cluster_control_plane_group, cluster_worker_group) to the group
    names; ``sources`` holds cluster_sets, cluster_pools, cluster_read_cluster, ``inventory_groups`` (the
    inventory's groups) and ``excluded`` (the nodes a --limit left out). No node, no source and no node_images, or
    sources that hold no PinnedImageSet: the node role would remove the pins of every node, so only ``allow_empty``
    (node_allow_empty) lets such a plan run."""
    named = ", ".join(f"{group} ({variable})" for variable, group in groups.items())
    excluded: List[str] = list(sources.get("excluded") or [])
    if not plan and excluded:
        return (
            f"the --limit leaves out every node of the groups {named} ({', '.join(excluded)}); "
            f"name the nodes to run next to localhost, for example -l 'localhost,{excluded[0]}'"
        )
    if not plan:
        if info is not None and sources.get("cluster_read_cluster") and info.get("nodes"):
            return (
                f"no inventory host of the groups {named} is a node of the cluster; map them with the host "
                "variable cluster_node_name, or cluster_add_hosts=true to add the cluster's nodes"
            )
        inventory = ", ".join(name for name in sources.get("inventory_groups", []) if name not in ("all", "ungrouped"))
        return (
            f"no inventory host is in the groups {named}, so nothing would run; the inventory has the groups: "
            f"{inventory or 'none'}. Put the nodes in those groups, or name yours, for example "
            '-e \'{"cluster_control_plane_group": "masters", "cluster_worker_group": "nodes"}\''
        )
    if allow_empty:
        return ""
    own_images = [item["host"] for item in plan if host_var(hostvars, item["host"], "node_images")]
    if info is None and not own_images:
        return (
            "nothing selects an image: cluster_sets and cluster_pools are empty, cluster_read_cluster is false "
            "and no host has node_images, so every node would lose its pins; nothing was changed. Give the sets "
            '(-e \'{"cluster_sets": ["sets/"]}\'), or node_allow_empty=true to remove the pins'
        )
    if info is not None and not info.get("sets"):
        return (
            f"{_no_sets(sources)}, so every node's sets would be empty and lose their pins; nothing was changed. "
            "Check the paths, or node_allow_empty=true to remove the pins"
        )
    return ""


def _no_sets(sources: Mapping[str, Any]) -> str:
    """ "the sources hold no PinnedImageSet: looked at ..." for cluster_sets and cluster_read_cluster."""
    looked = ", ".join(
        str(source if isinstance(source, str) else "a set object") for source in sources.get("cluster_sets") or []
    )
    where = "cluster_sets (%s)" % (looked or "empty")
    if sources.get("cluster_read_cluster"):
        where += " and the cluster"
    return f"the sources hold no PinnedImageSet: looked at {where}"


def render_problem(info: Mapping[str, Any], sources: Mapping[str, Any], dest: str, allow_empty: bool = False) -> str:
    """Why the render must not write (it would remove every set file and MachineConfig of ``dest``), or ""."""
    if info.get("sets") or allow_empty:
        return ""
    return (
        f"{_no_sets(sources)}, so the render would remove every file of {dest}/pinnedimagesets and "
        f"{dest}/machineconfigs; nothing was changed. Check the paths, or cluster_render_allow_empty=true to "
        "render the empty state"
    )


def _check_serial(name: str, value: Any) -> None:
    """A ValueError naming ``name`` unless ``value`` is what the play keyword ``serial`` takes (ansible-core ends
    in a traceback on anything else): a number, a percentage, or a non-empty list of them."""
    for batch in value if isinstance(value, list) and value else [value]:
        text = str(batch).strip()
        number = text[:-1] if text.endswith("%") else text
        if isinstance(batch, bool) or not number.isdigit():
            raise ValueError(
                f'{name} must be a number (1), a percentage ("25%") or a list of them ([1, 5, "25%"]), got {value!r}'
            )


def phases(order: Sequence[str], control_plane: Tuple[Any, Any], workers: Tuple[Any, Any]) -> List[Dict[str, Any]]:
    """``[{group, serial, max_fail_percentage}]`` for each phase of ``order``, padded with empty phases to two;
    ``control_plane`` and ``workers`` are the ``(serial, max_fail_percentage)`` of the two kinds of phase."""
    out = []
    for phase in order:
        serial, max_fail_percentage = control_plane if phase == CONTROL_PLANE else workers
        _check_serial(f"cluster_{'control_plane' if phase == CONTROL_PLANE else 'worker'}_serial", serial)
        out.append({"group": phase, "serial": serial, "max_fail_percentage": int(max_fail_percentage)})
    return out + [{"group": "", "serial": 1, "max_fail_percentage": 100} for _index in range(2 - len(out))]


def progressing_statuses(plan: Sequence[Mapping[str, Any]], hostvars: HostVars) -> List[Dict[str, Any]]:
    """The ``progressing`` status of each resolved node of ``plan``, with the sets the node role will pin."""
    out = []
    for item in plan:
        if item["error"]:
            continue
        sets = item["sets"] if item["sets"] is not None else host_var(hostvars, item["host"], "node_sets", [])
        sets = node_set_list(
            sets,
            host_var(hostvars, item["host"], "node_images", []),
            host_var(hostvars, item["host"], "node_images_set_name"),
        )
        out.append({"name": item["node"], "state": "progressing", "sets": sets})
    return out


def _not_run(host: str, hostvars: HostVars) -> Dict[str, Any]:
    return dict(
        _COUNTERS,
        node=host,
        status="not_run",
        node_error=_NOT_RUN,
        error=_NOT_RUN,
        changed=False,
        pinned=None,
        sets=host_var(hostvars, host, "node_sets", []),
        images=[],
        control_plane=bool(host_var(hostvars, host, "node_control_plane", False)),
    )


def node_results(hosts: Sequence[str], hostvars: HostVars, unresolved_hosts: Sequence[str]) -> List[Dict[str, Any]]:
    """The ``node_result`` of each host of ``hosts`` (``not_run`` when it has none), then a failed result for each
    host of ``unresolved_hosts``; each with ``host`` and ``node_name``."""
    out = []
    for host in hosts:
        result = host_var(hostvars, host, "node_result") or _not_run(host, hostvars)
        out.append(dict(result, host=host, node_name=_node_name(hostvars, host)))
    for host in unresolved_hosts:
        error = host_var(hostvars, host, "cluster_node_error", "")
        out.append(
            dict(
                _COUNTERS,
                host=host,
                node=host,
                node_name=_node_name(hostvars, host),
                status="failed",
                error=error,
                node_error=error,
                changed=False,
                pinned=None,
                sets=[],
                images=[],
                control_plane=bool(host_var(hostvars, host, "node_control_plane", False)),
            )
        )
    return out


def run_parameters(
    results: Sequence[Mapping[str, Any]],
    phases_planned: Optional[Sequence[Mapping[str, Any]]],
    plan: Optional[Sequence[Mapping[str, Any]]],
    forks: Any = None,
    check_mode: bool = False,
) -> Dict[str, Any]:
    """The parameters of the run for the report: its ``phases`` (group, serial, max_fail_percentage, in the order
    they ran), ``forks``, ``check_mode``, the ``sets`` (name, images, nodes) of the results, the ``pools`` (name,
    nodes) of the plan, and when the first node started and the last one finished (None without any)."""
    sets: Dict[str, Dict[str, Any]] = {}
    for result in results:
        for image_set in result.get("sets") or []:
            entry = sets.setdefault(image_set["name"], {"name": image_set["name"], "images": 0, "nodes": 0})
            entry["images"] = max(entry["images"], len(image_set.get("images") or []))
            entry["nodes"] += 1
    pools: Dict[str, int] = {}
    for item in plan or []:
        for pool in item.get("pools") or []:
            pools[pool] = pools.get(pool, 0) + 1
    started = [float(r["started"]) for r in results if r.get("started") is not None]
    finished = [float(r["finished"]) for r in results if r.get("finished") is not None]
    return {
        "phases": [dict(phase) for phase in phases_planned or [] if phase.get("group")],
        "forks": int(forks) if forks else None,
        "check_mode": bool(check_mode),
        "sets": [sets[name] for name in sorted(sets)],
        "pools": [{"name": name, "nodes": pools[name]} for name in sorted(pools)],
        "started": min(started) if started else None,
        "finished": max(finished) if finished else None,
    }


def batch_stopped(batch: Sequence[str], hostvars: HostVars, max_fail_percentage: Any) -> bool:
    """Whether a phase stops after ``batch``: more than ``max_fail_percentage`` of its hosts failed (a host without
    a ``node_result`` failed too). 100 never stops; Ansible's own rule would stop a one-node batch at once."""
    limit = int(max_fail_percentage)
    if limit >= 100 or not batch:
        return False
    failed = sum(
        1
        for host in batch
        if (host_var(hostvars, host, "node_result", {"status": "failed"}) or {}).get("status") == "failed"
    )
    return failed * 100 > limit * len(batch)


def summary(results: Sequence[Mapping[str, Any]], excluded: Sequence[str] = ()) -> Dict[str, Any]:
    """Counts and sums of ``results``; ``failed_nodes`` are the hosts that failed or did not run; ``excluded`` the
    nodes a --limit left out (neither run nor counted)."""

    def total(key: str, kind: Callable[[Any], float] = int) -> float:
        return sum(kind(result.get(key) or 0) for result in results)

    return {
        "nodes": len(results),
        "ok": sum(1 for r in results if r["status"] in ("ok", "check")),
        "failed": sum(1 for r in results if r["status"] == "failed"),
        "not_run": sum(1 for r in results if r["status"] == "not_run"),
        "pulled": total("pulled"),
        "would_pull": total("would_pull"),
        "present": total("present"),
        "failed_images": total("failed"),
        "bytes": total("bytes"),
        "pruned": total("pruned"),
        "freed_bytes": total("freed_bytes"),
        "node_seconds": round(total("seconds", float), 3),
        "failed_nodes": [r["host"] for r in results if r["status"] in ("failed", "not_run")],
        "excluded": list(excluded),
    }


def report_lines(
    results: Sequence[Mapping[str, Any]], totals: Mapping[str, Any], check_mode: bool = False
) -> List[str]:
    """The report table: a row per node (``pinned`` is how and how many images CRI reports pinned, ``not pinned``
    where the runtime cannot pin, ``-`` when the pin did not run; ``freed``, when a node pruned, the bytes its
    prune freed), the totals, then each node's error."""
    pruned = any(r.get("pruned") is not None for r in results)

    def row(values: Sequence[Any], freed: str) -> str:
        return _PRUNE_ROW % (*values[:-1], freed, values[-1]) if pruned else _ROW % tuple(values)

    lines = [row(("node", "status", "pulled", "present", "failed", "bytes", "seconds", "pinned"), "freed")]
    for r in results:
        values = (
            r["host"],
            r["status"],
            int(r["pulled"]) + int(r.get("would_pull") or 0),
            r["present"],
            r["failed"],
            human_size(int(r["bytes"])),
            "%.1f" % float(r["seconds"]),
            pin_text(r),
        )
        lines.append(row(values, human_size(int(r.get("freed_bytes") or 0)) if r.get("pruned") is not None else "-"))
    total_values = (
        "total (%d nodes)" % totals["nodes"],
        "%d ok" % totals["ok"],
        totals["pulled"] + totals["would_pull"],
        totals["present"],
        totals["failed_images"],
        human_size(totals["bytes"]),
        "%.1f" % totals["node_seconds"],
        "",
    )
    lines.append(row(total_values, human_size(int(totals.get("freed_bytes") or 0))))
    if check_mode:
        lines.append('check mode: nothing was pulled; "pulled" counts the images that would be')
        if pruned:
            lines.append('check mode: nothing was pruned; "freed" counts the bytes the prune would free')
    if totals.get("excluded"):
        lines.append("excluded by --limit, not run and not counted: " + ", ".join(totals["excluded"]))
    lines.extend(f"{r['host']}: {r['error']}" for r in results if r.get("error"))
    return lines


def done_statuses(results: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The ``done`` status of each node of ``results``."""
    return [
        {
            "name": r["node_name"],
            "state": "done",
            "sets": r.get("sets") or [],
            "images": r.get("images") or [],
            "error": r.get("node_error") or "",
        }
        for r in results
    ]


def report_nodes(results: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The results without their ``images`` and ``sets`` lists, which can be long."""
    return [{key: value for key, value in result.items() if key not in ("images", "sets")} for result in results]


def render_objects(info: Mapping[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """``{sets, pools}``: the sets (with their pool selector) and pools of a ``pinned_image_set_info`` result as
    ``machineconfiguration.openshift.io/v1`` objects."""
    sets = [
        PinnedImageSet(
            name=s["name"],
            labels=s["labels"] or {},
            images=tuple(s["images"]),
            pool_selector=s.get("pool_selector") or None,
        ).to_dict(include_pool_selector=True)
        for s in info.get("sets", [])
    ]
    pools = [
        MachineConfigPool(
            name=p["name"],
            labels=p["labels"] or {},
            machine_config_selector=p.get("machine_config_selector"),
            node_selector=p.get("node_selector"),
            pinned_image_sets=tuple(p.get("pinned_image_sets") or ()),
        ).to_dict()
        for p in info.get("pools", [])
    ]
    return {"sets": sets, "pools": pools}


def release_message(release: Mapping[str, Any]) -> str:
    """``"Release V (IMAGE): N images in sets A, B; each node needs up to X for them (...)"``."""
    sets = ", ".join(image_set["metadata"]["name"] for image_set in release.get("sets") or [])
    message = (
        f"Release {release.get('version')} ({release.get('release_image')}): "
        f"{len(release.get('images') or [])} images in sets {sets}; "
    )
    estimate = release.get("estimate")
    if not estimate:
        return message + "size not estimated"
    unreadable = len(estimate.get("unreadable") or {})
    return (
        message + f"each node needs up to {estimate['required']} for them ({estimate['compressed_bytes']} "
        f"compressed bytes x{estimate['expansion_factor']:g})"
        + (f", {unreadable} manifests unreadable" if unreadable else "")
    )


def _loop_results(registered: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The items of a registered loop result; [] when the task was skipped or not run."""
    return list((registered or {}).get("results") or [])


def render_written(set_files: Optional[Mapping[str, Any]], machine_configs: Optional[Mapping[str, Any]]) -> List[str]:
    """The paths the render wrote (or found up to date): each set's file and the MachineConfig files."""
    paths = [result["path"] for result in _loop_results(set_files) if result.get("path")]
    return paths + list((machine_configs or {}).get("files") or [])


def render_stale(found: Optional[Mapping[str, Any]], written: List[str]) -> List[str]:
    """The files ``ansible.builtin.find`` found (``found``) that the render did not write, sorted."""
    keep = set(written)
    return sorted(item["path"] for item in (found or {}).get("files") or [] if item["path"] not in keep)


def render_changes(
    set_files: Optional[Mapping[str, Any]],
    machine_configs: Optional[Mapping[str, Any]],
    removed: Optional[Mapping[str, Any]],
) -> List[Optional[Dict[str, Any]]]:
    """The ``file_changes`` of the set files and the MachineConfigs, and the stale files removed (the ``file``
    loop's changed items), for the ``render_report`` filter."""
    changes: List[Optional[Dict[str, Any]]] = [result.get("file_changes") for result in _loop_results(set_files)]
    changes.append((machine_configs or {}).get("file_changes"))
    changes.append({"removed": [result["item"] for result in _loop_results(removed) if result.get("changed")]})
    return changes


# The cluster modules' connection options: kubernetes.core's names, their aliases, and the K8S_AUTH_* variables
# the modules fall back to (K8S_AUTH_ARG_SPEC of _runs/options), resolved here the same way for kubectl.
_K8S_AUTH_OPTIONS = {
    "kubeconfig": ((), "K8S_AUTH_KUBECONFIG"),
    "context": ((), "K8S_AUTH_CONTEXT"),
    "host": ((), "K8S_AUTH_HOST"),
    "api_key": ((), "K8S_AUTH_API_KEY"),
    "validate_certs": (("verify_ssl",), "K8S_AUTH_VERIFY_SSL"),
    "ca_cert": (("ssl_ca_cert",), "K8S_AUTH_SSL_CA_CERT"),
    "client_cert": (("cert_file",), "K8S_AUTH_CERT_FILE"),
    "client_key": (("key_file",), "K8S_AUTH_KEY_FILE"),
    "proxy": ((), "K8S_AUTH_PROXY"),
}
# Paths in a kubeconfig, relative to its file: made absolute when the kubeconfig is rewritten elsewhere.
_KUBECONFIG_PATH_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


def resolved_k8s_auth(k8s_auth: Mapping[str, Any], environ: Mapping[str, str]) -> Dict[str, Any]:
    """The connection options as the cluster modules see them: given (under a name or an alias), else their
    ``K8S_AUTH_*`` variable; empty ones left out."""
    resolved: Dict[str, Any] = {}
    for name, (aliases, variable) in _K8S_AUTH_OPTIONS.items():
        given = [k8s_auth.get(key) for key in (name, *aliases) if k8s_auth.get(key) not in (None, "")]
        value = given[0] if given else environ.get(variable) or None
        if value is not None:
            resolved[name] = value
    if isinstance(resolved.get("validate_certs"), str):
        resolved["validate_certs"] = resolved["validate_certs"].strip().lower() not in ("0", "false", "no", "off", "n")
    return resolved


def _named(entries: Any, name: Any) -> Dict[str, Any]:
    """The body (``cluster``, ``user``, ``context``) of kubeconfig entry ``name`` of ``entries``; {} when absent."""
    for entry in entries or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            return dict(next((value for key, value in entry.items() if key != "name"), None) or {})
    return {}


def _absolute_paths(body: Dict[str, Any], base: str) -> Dict[str, Any]:
    return {
        key: os.path.join(base, value)
        if key in _KUBECONFIG_PATH_KEYS and isinstance(value, str) and value and not os.path.isabs(value)
        else value
        for key, value in body.items()
    }


def token_kubeconfig(auth: Mapping[str, Any]) -> Dict[str, Any]:
    """A kubeconfig dict with the token of ``auth`` (``api_key``), for kubectl: its context's cluster and user of
    ``auth``'s kubeconfig (a dict or a file; none: a cluster of ``host`` only), the user's token replaced. The
    connection plugin writes a dict kubeconfig to a 0600 file for each exec and removes it, so the token never is
    on kubectl's command line."""
    source = auth.get("kubeconfig")
    base = ""
    data: Any = {}
    if isinstance(source, str):
        path = next((p for p in source.split(os.pathsep) if p and os.path.exists(os.path.expanduser(p))), "")
        if not path:
            raise ValueError(f"kubeconfig {source} does not exist")
        path = os.path.abspath(os.path.expanduser(path))
        base = os.path.dirname(path)
        with open(path, encoding="utf-8") as stream:
            data = yaml.safe_load(stream) or {}
    elif isinstance(source, Mapping):
        data = source
    if not isinstance(data, Mapping):
        raise ValueError(f"kubeconfig {source if isinstance(source, str) else '(a dict)'} is not a mapping")
    context = _named(data.get("contexts"), auth.get("context") or data.get("current-context"))
    cluster = _named(data.get("clusters"), context.get("cluster"))
    user = _named(data.get("users"), context.get("user"))
    if base:
        cluster, user = _absolute_paths(cluster, base), _absolute_paths(user, base)
    for key in ("token", "tokenFile", "username", "password", "exec", "auth-provider"):
        user.pop(key, None)
    user["token"] = auth["api_key"]
    name = "pinned-images"
    body = {"cluster": name, "user": name}
    if context.get("namespace"):
        body["namespace"] = context["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": body}],
        "current-context": name,
    }


def kubectl_connection(k8s_auth: Mapping[str, Any], environ: Mapping[str, str]) -> Dict[str, Any]:
    """The ``kubernetes.core.kubectl`` variables that connect kubectl as the cluster modules connect. Every
    credential option the plugin would read from ``K8S_AUTH_*`` or put on kubectl's command line is set empty
    (the plugin skips empty ones); a token goes in a kubeconfig dict (``token_kubeconfig``). Certificate
    validation goes through ``--insecure-skip-tls-verify=``: the plugin's own ``validate_certs`` does not turn
    into that flag's value."""
    auth = resolved_k8s_auth(k8s_auth, environ)
    connection: Dict[str, Any] = {
        "ansible_connection": "kubernetes.core.kubectl",
        "ansible_become": False,
        "ansible_kubectl_token": "",
        "ansible_kubectl_password": "",
        "ansible_kubectl_username": "",
        "ansible_kubectl_verify_ssl": "",
        "ansible_kubectl_kubeconfig": auth.get("kubeconfig", ""),
        "ansible_kubectl_context": auth.get("context", ""),
        "ansible_kubectl_host": auth.get("host", ""),
        "ansible_kubectl_ca_cert": auth.get("ca_cert", ""),
        "ansible_kubectl_cert_file": auth.get("client_cert", ""),
        "ansible_kubectl_key_file": auth.get("client_key", ""),
        "ansible_kubectl_extra_args": "",
    }
    if auth.get("api_key"):
        connection["ansible_kubectl_kubeconfig"] = token_kubeconfig(auth)
        connection["ansible_kubectl_context"] = ""
    if "validate_certs" in auth:
        skip = not auth["validate_certs"]
        connection["ansible_kubectl_extra_args"] = f"--insecure-skip-tls-verify={str(skip).lower()}"
        if skip:
            # kubectl refuses a CA together with the flag; the modules ignore the CA then too.
            connection["ansible_kubectl_ca_cert"] = ""
    if auth.get("proxy"):
        connection["ansible_kubectl_local_env_vars"] = {"HTTPS_PROXY": auth["proxy"], "HTTP_PROXY": auth["proxy"]}
    return connection


def pod_access_problem(
    kubectl: str, which: Callable[[str], Optional[str]], find_connection: Callable[[str], bool]
) -> str:
    """Why the controller cannot reach nodes through pods ("" when it can): no ``kubectl`` on the ``PATH``
    (``which``), no ``kubernetes.core.kubectl`` connection plugin (``find_connection``)."""
    missing = []
    if not which(kubectl):
        missing.append(f"no {kubectl} on the controller's PATH")
    if not find_connection("kubernetes.core.kubectl"):
        missing.append(
            "no connection plugin kubernetes.core.kubectl: install the collection kubernetes.core "
            "(a dependency of pinned.images), for example from the ansible package or a tarball"
        )
    if not missing:
        return ""
    return (
        "cluster_node_access=pod needs kubectl and kubernetes.core on the controller: "
        + "; ".join(missing)
        + ("; no pod was created")
    )


def node_pods(
    pods: Sequence[Mapping[str, Any]],
    node_groups: Sequence[Mapping[str, Any]],
    k8s_auth: Mapping[str, Any],
    host_root: str,
    python: str,
    environ: Mapping[str, str],
) -> List[Dict[str, Any]]:
    """For each pod of a ``node_access_pod`` result: ``node``, its inventory ``host`` (of ``node_groups``, the
    ``node_groups`` of the plan; the node's name for a node not there), and ``vars``, the host variables that reach the node
    through it (``kubernetes.core.kubectl`` with the same connection as the cluster modules, root in the pod, the
    node role's ``node_host_root``), with ``node_access_error`` for a pod that does not run."""
    connection = kubectl_connection(k8s_auth, environ)
    hosts = {item["node"]: item["host"] for item in node_groups}
    out = []
    for pod in pods:
        variables = dict(
            connection,
            ansible_kubectl_pod=pod["name"],
            ansible_kubectl_namespace=pod["namespace"],
            ansible_python_interpreter=python,
            node_host_root=host_root,
            node_access_error=pod.get("reason") or "",
        )
        out.append({"node": pod["node"], "host": hosts.get(pod["node"], pod["node"]), "vars": variables})
    return out
