# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The results of a prefetch run of the ``pinned.images.cluster`` role: the nodes' statuses for
``pinned_image_status``, each node's result, the totals, the report table and the run's parameters; exposed as
filters by ``plugins/filter/cluster.py``.
"""

from __future__ import annotations

import posixpath
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import human_size
from ansible_collections.pinned.images.plugins.plugin_utils._hostvars import HostVars, host_var, node_name
from ansible_collections.pinned.images.plugins.plugin_utils._node import pin_text
from ansible_collections.pinned.images.plugins.plugin_utils._plan import node_set_list
from ansible_collections.pinned.images.plugins.plugin_utils._report_html import page_path

__all__ = [
    "batch_stopped",
    "done_statuses",
    "node_results",
    "progressing_statuses",
    "report_lines",
    "report_message",
    "report_nodes",
    "report_paths",
    "run_parameters",
    "summary",
    "total_label",
]

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


def total_label(nodes: int) -> str:
    """The first cell of a report's total row: "total (1 node)", "total (3 nodes)"."""
    return "total (%d %s)" % (nodes, "node" if nodes == 1 else "nodes")


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
        out.append(dict(result, host=host, node_name=node_name(hostvars, host)))
    for host in unresolved_hosts:
        error = host_var(hostvars, host, "cluster_node_error", "")
        out.append(
            dict(
                _COUNTERS,
                host=host,
                node=host,
                node_name=node_name(hostvars, host),
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
    run_id: str = "",
) -> Dict[str, Any]:
    """The parameters of the run for the report: its ``phases`` (group, serial, max_fail_percentage, in the order
    they ran), ``forks``, ``check_mode``, the ``sets`` (name, images, nodes) of the results, the ``pools`` (name,
    nodes) of the plan, when the first node started and the last one finished (None without any), and the run's
    ``id`` (in its report file's name; empty when none was given)."""
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
        "id": run_id,
    }


def report_paths(report_file: str, run_id: str, per_run: bool = True) -> Dict[str, Optional[str]]:
    """Where a run writes its JSON report and page: with ``per_run``, files named after the run
    (``report.json`` -> ``report-<run_id>.json`` and ``.html``) and ``report.json`` and ``report.html`` become links
    to them (``latest`` and ``latest_page``, the links' targets relative), so overlapping runs keep each its own;
    else ``report_file`` itself (no links)."""
    if not per_run:
        return {"file": report_file, "page": page_path(report_file), "latest": None, "latest_page": None}
    if not run_id or "/" in run_id:
        raise ValueError(f"a run id without '/' is needed to name the run's report file, got {run_id!r}")
    stem, extension = posixpath.splitext(report_file)
    run_file = f"{stem}-{run_id}{extension}"
    return {"file": run_file, "page": page_path(run_file), "latest": report_file, "latest_page": page_path(report_file)}


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
        total_label(totals["nodes"]),
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
    return [line.rstrip() for line in lines]


def report_message(lines: Sequence[str], result_format: str = "json") -> Union[List[str], str]:
    """The report table as ``debug``'s ``msg`` for the callback's ``result_format``: the lines for ``json`` (one
    quoted line each), one string for ``yaml``, whose dumper prints a multi-line string as a block and would fold
    each long line of a list at 80 columns."""
    return "\n".join(lines) if str(result_format).lower() == "yaml" else list(lines)


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
