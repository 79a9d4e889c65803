# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The plan of the ``pinned.images.cluster`` role: which inventory host is which node, what it gets, the phases of the
prefetch playbook and why a plan must not run; exposed as filters by ``plugins/filter/cluster.py``.
"""

from __future__ import annotations

from typing import Any, Container, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.plugin_utils._hostvars import HostVars, host_var, node_name

__all__ = [
    "CONTROL_PLANE",
    "DEFAULT_SET_NAME",
    "WORKERS",
    "host_nodes",
    "no_sets_message",
    "node_groups",
    "node_plan",
    "node_set_list",
    "phase_order",
    "phases",
    "plan_message",
    "plan_problem",
    "release_message",
]

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
        out.append({"name": node_name(hostvars, host), "labels": labels})
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
                "node": node_name(hostvars, host),
                "added": False,
                "control_plane": host in control_plane_hosts,
                "pools": [],
                "sets": None,
                "error": "",
            }
            for host in hosts
        ]
    by_node = {node_name(hostvars, host): host for host in list(hosts) + list(excluded)}
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
            f"{no_sets_message(sources)}, so every node's sets would be empty and lose their pins; nothing was changed. "
            "Check the paths, or node_allow_empty=true to remove the pins"
        )
    return ""


def no_sets_message(sources: Mapping[str, Any]) -> str:
    """ "the sources hold no PinnedImageSet: looked at ..." for cluster_sets and cluster_read_cluster."""
    looked = ", ".join(
        str(source if isinstance(source, str) else "a set object") for source in sources.get("cluster_sets") or []
    )
    where = "cluster_sets (%s)" % (looked or "empty")
    if sources.get("cluster_read_cluster"):
        where += " and the cluster"
    return f"the sources hold no PinnedImageSet: looked at {where}"


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
