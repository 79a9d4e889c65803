# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The audit of the ``pinned.images.audit`` playbook (controller side): which nodes drifted and why, from each
node's ``pinned.images.pin_audit`` result; the rows, totals and table; and the two files a scheduler reads, a JUnit
XML file and a Prometheus text file for node_exporter's textfile collector, of an audit or a prefetch run. Exposed as
filters by ``plugins/filter/cluster.py`` and ``plugins/filter/node.py``.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Mapping, Optional, Sequence
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.pinned.images.plugins.plugin_utils._hostvars import HostVars, host_var, node_name
from ansible_collections.pinned.images.plugins.plugin_utils._results import total_label

__all__ = [
    "DRIFTS",
    "audit_lines",
    "audit_results",
    "audit_row",
    "audit_summary",
    "junit_xml",
    "metrics_text",
]

MISSING, DROPIN, OVERRIDDEN, NOT_APPLIED, UNLABELLED, UNPINNED, CANNOT_PIN = (
    "missing",
    "dropin",
    "overridden",
    "not_applied",
    "unlabelled",
    "unpinned",
    "cannot_pin",
)
# Each drift: what it means, and what heals it.
DRIFTS: Dict[str, Dict[str, str]] = {
    MISSING: dict(
        means="wanted images are not on the node (removed by hand or by a GC, a reimaged node)",
        heals="the prefetch rerun pulls and pins them",
    ),
    DROPIN: dict(
        means="the collection's CRI-O drop-in is gone or lacks wanted images",
        heals="the prefetch rerun writes it again and reloads CRI-O",
    ),
    OVERRIDDEN: dict(
        means="a later CRI-O drop-in sets pinned_images and replaces the collection's list",
        heals="remove pinned_images from that file or add the images to it; the collection never edits it",
    ),
    NOT_APPLIED: dict(
        means="the drop-in lists the images but CRI-O does not report them pinned (a reload that failed)",
        heals="the prefetch rerun reloads CRI-O once and checks again",
    ),
    UNLABELLED: dict(
        means="image records lack containerd's pin label (a re-import, such as k3s's at a restart)",
        heals="the prefetch rerun labels them again",
    ),
    UNPINNED: dict(
        means="present but not reported pinned: the kubelet's image GC may remove them",
        heals="the prefetch rerun pins them",
    ),
    CANNOT_PIN: dict(
        means=(
            "present but not pinned, and the collection cannot pin on this node (containerd before 1.7.3, a runtime"
            " it does not know, or pins left to the machine-config-operator): the kubelet's image GC may remove them"
        ),
        heals="upgrade containerd to 1.7.3 or later; on an MCO node, a PinnedImageSet the MCO applies",
    ),
}
_LISTS = ("wanted", "present", "pinned", "missing", "unpinned", "pinned_by_others", "prune_candidates")
_ROW = "%-24s %-12s %-7s %6s %7s %6s %7s %8s %6s %5s  %s"


def _drift(kind: str, images: Sequence[str], detail: str = "") -> Dict[str, Any]:
    return dict(kind=kind, images=list(images), detail=detail, **DRIFTS[kind])


def _drifts(audit: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """What differs from what a prefetch leaves: each drift once, the images it covers, the file it names."""
    out: List[Dict[str, Any]] = []
    missing = list(audit.get("missing") or [])
    unpinned = list(audit.get("unpinned") or [])
    if missing:
        out.append(_drift(MISSING, missing))
    method = audit.get("method")
    explained: List[str] = []
    if method == "dropin":
        crio = audit.get("crio") or {}
        source = crio.get("effective_from")
        lost = [name for name in crio.get("not_effective") or [] if name not in missing]
        not_listed = [name for name in crio.get("not_listed") or [] if name not in missing]
        if source not in (None, crio.get("path")) and lost:
            out.append(_drift(OVERRIDDEN, lost, f"{source} sets pinned_images after {crio.get('path')}"))
            explained = lost
        elif not_listed:
            detail = f"{crio.get('path')} " + ("lacks them" if crio.get("exists") else "does not exist")
            out.append(_drift(DROPIN, not_listed, detail))
            explained = not_listed
        pending = [name for name in unpinned if name not in explained]
        if pending:
            out.append(_drift(NOT_APPLIED, pending, f"{crio.get('path')} lists them"))
            explained += pending
    elif method == "label":
        records = list((audit.get("containerd") or {}).get("unlabelled") or [])
        if records:
            out.append(_drift(UNLABELLED, unpinned, "records without the label: " + ", ".join(records)))
            explained = unpinned
    rest = [name for name in unpinned if name not in explained]
    # Unpinned images are no drift only where the user asked for no pin (pin: none).
    if rest and method != "none":
        out.append(_drift(UNPINNED, rest))
    elif rest and audit.get("pin") not in (None, "none"):
        out.append(_drift(CANNOT_PIN, rest, f"the pin method resolved to none (pin: {audit.get('pin')})"))
    return out


def audit_row(
    result: Mapping[str, Any], node: str, control_plane: bool, sets: Sequence[Any], audited: Optional[float] = None
) -> Dict[str, Any]:
    """A node's row from its ``pin_audit`` result (registered; a failed or unreachable call fails the node with
    its message): ``status`` clean, drifted or failed, the lists, ``drift`` (each with what it means and what heals
    it), ``error`` (one line naming the drifts, or the failure)."""
    failed = bool(result.get("failed") or result.get("unreachable"))
    runtime = result.get("runtime") or {}
    row: Dict[str, Any] = dict(
        node=node,
        control_plane=bool(control_plane),
        runtime=runtime.get("runtime_name", ""),
        runtime_version=runtime.get("runtime_version", ""),
        method=result.get("method") or "",
        sets=list(sets),
        audited=time.time() if audited is None else float(audited),
        crio=result.get("crio"),
        containerd=result.get("containerd"),
        **{name: list(result.get(name) or []) for name in _LISTS},
    )
    if failed:
        return dict(row, status="failed", drift=[], error=str(result.get("msg") or "the audit failed"))
    drift = _drifts(result)
    error = "; ".join(
        f"{d['kind']}: {', '.join(d['images'])}" + (f" ({d['detail']})" if d["detail"] else "") for d in drift
    )
    return dict(row, status="drifted" if drift else "clean", drift=drift, error=error)


def audit_results(hosts: Sequence[str], hostvars: HostVars, unresolved_hosts: Sequence[str]) -> List[Dict[str, Any]]:
    """The audit row of each host (failed when it has none: the node was not reached), then the hosts whose
    pools are ambiguous; each with ``host`` and ``node_name``."""
    out = []
    for host in list(hosts) + list(unresolved_hosts):
        row = host_var(hostvars, host, "node_audit")
        if not row:
            error = host_var(hostvars, host, "cluster_node_error", "") or "not audited: the node was not reached"
            row = audit_row(
                dict(failed=True, msg=error), host, host_var(hostvars, host, "node_control_plane", False), []
            )
        out.append(dict(row, host=host, node_name=node_name(hostvars, host)))
    return out


def audit_summary(results: Sequence[Mapping[str, Any]], excluded: Sequence[str] = ()) -> Dict[str, Any]:
    """The counts of the audit: nodes by status, images by state, and the hosts that drifted or failed."""
    return {
        "nodes": len(results),
        "clean": sum(1 for r in results if r["status"] == "clean"),
        "drifted": sum(1 for r in results if r["status"] == "drifted"),
        "failed": sum(1 for r in results if r["status"] == "failed"),
        **{name: sum(len(r.get(name) or []) for r in results) for name in _LISTS},
        "drifted_nodes": [r["host"] for r in results if r["status"] != "clean"],
        "excluded": list(excluded),
    }


def audit_lines(results: Sequence[Mapping[str, Any]], totals: Mapping[str, Any]) -> List[str]:
    """The audit table: a row per node, the totals, then each drifted node's drifts with what heals them."""
    header = ("node", "runtime", "method", "wanted", "present", "pinned", "missing", "unpinned", "others", "prune")
    lines = [_ROW % (*header, "status")]
    for r in results:
        counts = [len(r.get(name) or []) for name in _LISTS]
        lines.append(_ROW % (r["host"], r["runtime"] or "-", r["method"] or "-", *counts, r["status"]))
    counts = [totals[name] for name in _LISTS]
    lines.append(_ROW % (total_label(totals["nodes"]), "", "", *counts, "%d clean" % totals["clean"]))
    if totals.get("excluded"):
        lines.append("excluded by --limit, not audited: " + ", ".join(totals["excluded"]))
    for r in results:
        if r["status"] == "failed":
            lines.append(f"{r['host']}: failed: {r['error']}")
        for d in r.get("drift") or []:
            detail = f" ({d['detail']})" if d["detail"] else ""
            lines.append(f"{r['host']}: {d['kind']}: {', '.join(d['images'])}{detail}; {d['heals']}")
    return lines


def _failure(result: Mapping[str, Any]) -> Optional[str]:
    """Why a node's testcase fails (an audit's drift or failure, a prefetch's failure), None when it passes."""
    if result.get("status") in ("failed", "drifted", "not_run"):
        return str(result.get("error") or result.get("status"))
    return None


def junit_xml(results: Sequence[Mapping[str, Any]], kind: str, timestamp: Optional[float] = None) -> str:
    """JUnit XML of a run (``kind``: audit or prefetch): one testcase per node, a failure for each node that
    drifted or failed, its message and, for an audit, each drift with what heals it."""
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() if timestamp is None else timestamp))
    failures = [r for r in results if _failure(r) is not None]
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="pinned.images.{kind}" tests="{len(results)}" failures="{len(failures)}">',
        f'  <testsuite name="pinned.images.{kind}" tests="{len(results)}" failures="{len(failures)}" errors="0"'
        f' skipped="0" timestamp="{when}">',
    ]
    for r in results:
        seconds = float(r.get("seconds") or 0.0)
        case = f'    <testcase classname="pinned.images.{kind}" name={quoteattr(str(r["host"]))} time="{seconds:.3f}"'
        message = _failure(r)
        if message is None:
            out.append(case + "/>")
            continue
        body = [f"{d['kind']}: {', '.join(d['images'])}: {d['means']}; {d['heals']}" for d in r.get("drift") or []]
        out.append(case + ">")
        out.append(
            f"      <failure message={quoteattr(message)} type={quoteattr(str(r['status']))}>"
            f"{escape(chr(10).join(body or [message]))}</failure>"
        )
        out.append("    </testcase>")
    out.extend(["  </testsuite>", "</testsuites>", ""])
    return "\n".join(out)


def _counts(result: Mapping[str, Any]) -> Dict[str, int]:
    """wanted, present, pinned, missing, unpinned of an audit row or a prefetch result."""
    if "wanted" in result:
        return {name: len(result.get(name) or []) for name in ("wanted", "present", "pinned", "missing", "unpinned")}
    present = int(result.get("present") or 0) + int(result.get("pulled") or 0)
    pinned = int(result.get("pinned") or 0)
    return dict(
        wanted=int(result.get("requested") or 0),
        present=present,
        pinned=pinned,
        missing=int(result.get("failed") or 0),
        unpinned=max(present - pinned, 0) if result.get("pin_method") not in (None, "none") else 0,
    )


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def metrics_text(results: Sequence[Mapping[str, Any]], kind: str, timestamp: Optional[float] = None) -> str:
    """The Prometheus text exposition of a run (``kind``: audit or prefetch) for node_exporter's textfile
    collector: per-node gauges of the wanted, present, pinned, missing and unpinned images and whether the node
    drifted or failed, and the run's time."""
    when = time.time() if timestamp is None else timestamp
    out: List[str] = []
    counts = [(r, _counts(r)) for r in results]
    for name in ("wanted", "present", "pinned", "missing", "unpinned"):
        metric = f"pinned_images_node_{name}"
        out.append(f"# HELP {metric} Images {name} on the node, as the last run of its label run saw them.")
        out.append(f"# TYPE {metric} gauge")
        out.extend(f'{metric}{{node="{_label(r["host"])}",run="{kind}"}} {c[name]}' for r, c in counts)
    out.append("# HELP pinned_images_node_failed 1 when the node drifted or failed in the last run, else 0.")
    out.append("# TYPE pinned_images_node_failed gauge")
    out.extend(
        f'pinned_images_node_failed{{node="{_label(r["host"])}",run="{kind}"}} {int(_failure(r) is not None)}'
        for r in results
    )
    out.append("# HELP pinned_images_last_run_timestamp_seconds When the run ended (Unix time).")
    out.append("# TYPE pinned_images_last_run_timestamp_seconds gauge")
    out.append(f'pinned_images_last_run_timestamp_seconds{{run="{kind}"}} {when:.3f}')
    return "\n".join(out) + "\n"
