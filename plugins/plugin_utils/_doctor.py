# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor playbook's report of one node (controller side): its runtime, then each finding of
``cri_image_info``'s ``checks`` with what it means and the fix, errors first; a node without Python 3 gets the
finding that says so; exposed as the ``doctor_report`` filter (``plugins/filter/doctor.py``)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.pinned.images.plugins.module_utils._doctor.checks import SEVERITIES, no_python_finding

__all__ = ["report_lines"]


def _counts(findings: List[Mapping[str, Any]]) -> str:
    counts: Dict[str, int] = {}
    for item in findings:
        counts[item["severity"]] = counts.get(item["severity"], 0) + 1
    if not counts:
        return "nothing voids a pin or a prefetch"
    return ", ".join(f"{counts[severity]} {severity}" for severity in SEVERITIES if severity in counts)


def _finding_lines(item: Mapping[str, Any]) -> List[str]:
    return [
        f"  {item['severity']} {item['check']}: {item['detail']}",
        f"    means: {item['meaning']}",
        f"    fix: {item['fix']}",
    ]


def report_lines(result: Optional[Mapping[str, Any]], host: str, python: str = "") -> List[str]:
    """The node's lines: ``result`` is the module's (None or skipped when it did not run), ``python`` what
    ``command -v python3`` printed on the node (empty: none there)."""
    if not (python or "").strip():
        return [f"{host}: 1 error"] + _finding_lines(no_python_finding(host))
    if not result or result.get("skipped"):
        return [f"{host}: the doctor did not run"]
    if result.get("failed"):
        return [f"{host}: the doctor could not ask the runtime: {result.get('msg', 'failed')}"]
    runtime = result.get("runtime") or {}
    findings = list(result.get("checks") or [])
    lines = [
        f"{host}: {runtime.get('runtime_name', '?')} {runtime.get('runtime_version', '?')} at "
        f"{runtime.get('endpoint', '?')}: {_counts(findings)}"
    ]
    for item in findings:
        lines += _finding_lines(item)
    lines += [f"  note: {note}" for note in result.get("notes") or []]
    return lines
