# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The report page of a prefetch run: one self-contained HTML file (inline SVG and CSS, no script, nothing fetched),
exposed as the ``cluster_report_html`` filter by ``plugins/filter/cluster.py``.

The page is well-formed XML too (every element closed, only XML's five entities), so any strict parser reads it.
Every text of the report is redacted (``_common/secrets``) and escaped; characters XML forbids are replaced.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.secrets import redact
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import kubeconfig_secrets, url_secrets
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import human_size
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import parse_docker_config
from ansible_collections.pinned.images.plugins.plugin_utils._hostvars import HostVars, host_var
from ansible_collections.pinned.images.plugins.plugin_utils._node import pin_text
from ansible_collections.pinned.images.plugins.plugin_utils._plan import CONTROL_PLANE, WORKERS

__all__ = [
    "BAR_HEIGHT",
    "LABEL_CHARS",
    "PAGE_WIDTH",
    "PLOT_LEFT",
    "PLOT_RIGHT",
    "ROW_HEIGHT",
    "check_report",
    "page_path",
    "page_secrets",
    "render_page",
    "report_secrets",
]

PHASE_TITLES = {CONTROL_PLANE: "Control plane", WORKERS: "Workers"}
# 680 px is the printable width of A4 (210 mm less 2 x 15 mm margins at 96 px per inch).
PAGE_WIDTH = 680
LABEL_WIDTH = 150
PLOT_LEFT, PLOT_RIGHT = LABEL_WIDTH + 4, PAGE_WIDTH - 8
AXIS_HEIGHT, PHASE_HEIGHT, ROW_HEIGHT, BAR_HEIGHT, PART_HEIGHT = 22, 20, 16, 12, 8
# A node name longer than this is cut in the timeline (the table and the bar's title give it whole).
LABEL_CHARS = 24
# Secrets shorter than this would blank out unrelated words (the Kubernetes client's bound too).
MIN_SECRET_LENGTH = 4
_TICK_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400)
# XML 1.0 allows tab, newline and carriage return below U+0020, and no surrogates or U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_STATUSES = ("ok", "check", "failed", "not_run")
# No script, no fetch: the page loads nothing, whatever a viewer allows.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_CSS = """
@page { size: A4; margin: 15mm; }
body { font: 12px/1.4 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: #1a1a1a; margin: 12px auto;
       max-width: 680px; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 14px; margin: 18px 0 6px; border-bottom: 1px solid #bbb; }
h3 { font-size: 12px; margin: 10px 0 2px; }
table { border-collapse: collapse; width: 100%; font-size: 11px; }
th, td { border-bottom: 1px solid #ddd; padding: 2px 4px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; white-space: nowrap; }
td.host { overflow-wrap: anywhere; }
tr { break-inside: avoid; }
.msg { white-space: pre-wrap; overflow-wrap: anywhere; font-family: "DejaVu Sans Mono", monospace; font-size: 11px;
       margin: 0 0 4px; }
.status-failed { color: #b71c1c; font-weight: bold; }
.status-not_run { color: #616161; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font-size: 10px; fill: #1a1a1a; }
svg .phase text { font-weight: bold; font-size: 11px; }
svg .grid { stroke: #e0e0e0; stroke-width: 1; }
svg .tick { fill: #555; }
svg .node.ok .bar, svg .node.check .bar { fill: #c8e6c9; }
svg .node.ok .pull, svg .node.check .pull, .key.pull-ok { fill: #43a047; }
svg .node.ok .pin, svg .node.check .pin, .key.pin-ok { fill: #0d3b10; }
svg .node.failed .bar { fill: #ffcdd2; }
svg .node.failed .pull, .key.pull-failed { fill: #e53935; }
svg .node.failed .pin, .key.pin-failed { fill: #5d0000; }
svg .node .wait, .key.wait { fill: #ffb300; }
svg .node .note { fill: #616161; font-style: italic; }
svg .node.failed .note { fill: #b71c1c; }
.key.bar-ok { fill: #c8e6c9; }
.key.bar-failed { fill: #ffcdd2; }
.key.not-run { fill: none; stroke: #9e9e9e; stroke-dasharray: 2 2; }
@media print { body { margin: 0; max-width: none; } h2 { break-after: avoid; } }
"""


def report_secrets(
    pull_secrets: Optional[Iterable[Any]] = None, k8s_auth: Optional[Mapping[str, Any]] = None
) -> Set[str]:
    """The secrets of each docker-config pull secret (text, or a dict as a variable gives it; one that does not parse
    counts whole) and of the Kubernetes connection options (``api_key``, a kubeconfig dict's credentials, a proxy
    URL's password)."""
    found: Set[str] = set()
    for value in pull_secrets or []:
        if not value:
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        try:
            found |= parse_docker_config(text).secrets()
        except CollectionError:
            found.add(text)
    if k8s_auth:
        found |= kubeconfig_secrets(k8s_auth.get("kubeconfig")) | url_secrets(k8s_auth.get("proxy"))
        if k8s_auth.get("api_key"):
            found.add(str(k8s_auth["api_key"]))
    return found


def page_path(report_file: str) -> str:
    """``report.json`` -> ``report.html``; a name without ``.json`` gets ``.html`` added."""
    stem = report_file[:-5] if report_file.endswith(".json") else report_file
    return stem + ".html"


class _Page:
    """The text of one page: every string goes through ``text`` (redacted, XML-safe, escaped)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [str(secret) for secret in secrets if secret]

    def clean(self, value: Any) -> str:
        """Redacted and XML-safe, not yet escaped (to cut it without cutting a secret in two)."""
        return _NOT_XML.sub("\ufffd", redact(str(value), self.secrets, MIN_SECRET_LENGTH))

    def text(self, value: Any) -> str:
        return html.escape(self.clean(value), quote=True)


def _number(value: Any) -> Optional[float]:
    """A finite number, else None (NaN or Infinity from a hand-edited JSON report draws nothing)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _mappings(value: Any, where: str) -> List[Mapping[str, Any]]:
    """``value`` as a list of mappings (absent or null: empty), else a ValueError naming ``where``."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise ValueError(f"the report's {where} must be a list of mappings, got {_kind(value)}")
    return value


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"the report's {where} must be a mapping, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return (
            "a list"
            if all(isinstance(item, Mapping) for item in value)
            else "a list with "
            + ", ".join(sorted({type(item).__name__ for item in value if not isinstance(item, Mapping)}))
        )
    return type(value).__name__


def check_report(report: Any) -> None:
    """A ValueError naming the key when ``report`` is not the shape the page reads (a hand-edited or truncated JSON
    file, an artifact of another tool): mappings where mappings are read, lists of mappings where lists are, counts
    as numbers."""
    if not isinstance(report, Mapping):
        raise ValueError(f"the report must be a mapping (summary, nodes, run), got {_kind(report)}")
    _mapping(report.get("summary"), "summary")
    for index, node in enumerate(_mappings(report.get("nodes"), "nodes")):
        _mappings(node.get("images"), f"nodes[{index}].images")
    run = _mapping(report.get("run"), "run")
    _mappings(run.get("phases"), "run.phases")
    for key in ("sets", "pools"):
        for index, entry in enumerate(_mappings(run.get(key), f"run.{key}")):
            for count in ("images", "nodes"):
                value = entry.get(count)
                if value is not None and _number(value) is None:
                    raise ValueError(
                        f"the report's run.{key}[{index}].{count} must be a number, got {_kind(value)} {value!r}"
                    )


def _count(node: Mapping[str, Any], key: str) -> int:
    return int(_number(node.get(key)) or 0)


def _phase(node: Mapping[str, Any]) -> str:
    return CONTROL_PLANE if node.get("control_plane") else WORKERS


def _status(node: Mapping[str, Any]) -> str:
    status = str(node.get("status") or "not_run")
    return status if status in _STATUSES else "failed"


def phase_order(nodes: Sequence[Mapping[str, Any]], run: Mapping[str, Any]) -> List[str]:
    """The phases in the order they ran: the run's phases, else by their first start; phases without nodes last."""
    ordered = [str(p.get("group")) for p in run.get("phases") or [] if p.get("group") in PHASE_TITLES]

    def first_start(phase: str) -> float:
        starts = [_number(n.get("started")) for n in nodes if _phase(n) == phase]
        return min([s for s in starts if s is not None] or [float("inf")])

    rest = sorted((p for p in PHASE_TITLES if p not in ordered), key=first_start)
    return ordered + rest


def timeline_rows(
    nodes: Sequence[Mapping[str, Any]], run: Mapping[str, Any]
) -> List[Tuple[str, List[Mapping[str, Any]]]]:
    """``[(phase, nodes)]`` in run order; in each phase the nodes by start time, those that never started last."""
    rows = []
    for phase in phase_order(nodes, run):
        members = [n for n in nodes if _phase(n) == phase]
        members.sort(key=lambda n: (_number(n.get("started")) is None, _number(n.get("started")) or 0.0))
        if members:
            rows.append((phase, members))
    return rows


def _span(nodes: Sequence[Mapping[str, Any]]) -> Optional[Tuple[float, float]]:
    starts = [_number(n.get("started")) for n in nodes]
    ends = [_number(n.get("finished")) for n in nodes]
    known_starts = [s for s in starts if s is not None]
    known_ends = [e for e in ends if e is not None]
    if not known_starts or not known_ends:
        return None
    return min(known_starts), max(*known_ends, min(known_starts))


def _tick_step(seconds: float) -> int:
    for step in _TICK_STEPS:
        if seconds / step <= 8:
            return step
    # Beyond 8 days: days, still at most 8 ticks.
    return _TICK_STEPS[-1] * math.ceil(seconds / _TICK_STEPS[-1] / 8)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return "%g s" % round(seconds, 1)
    if seconds < 7200:
        return "%g min" % round(seconds / 60, 1)
    return "%g h" % round(seconds / 3600, 2)


def _freed_text(node: Mapping[str, Any]) -> str:
    """The bytes a node's prune freed, ``-`` when it did not prune."""
    return "-" if node.get("pruned") is None else human_size(_count(node, "freed_bytes"))


def _cri_text(node: Mapping[str, Any]) -> str:
    return " ".join(str(node.get(key)) for key in ("runtime", "runtime_version") if node.get(key)) or "-"


def _pace(node: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    pace = node.get("pace")
    return pace if isinstance(pace, Mapping) else None


def _pace_text(node: Mapping[str, Any]) -> str:
    """``waited 3.2 s, p99 8.1 ms (bound 10 ms)`` for a node that paced its pulls, ``-`` for one that did not."""
    pace = _pace(node)
    if pace is None:
        return "-"
    waited = _number(pace.get("waited_seconds")) or 0.0
    level, bound = _number(pace.get("p99_ms")), _number(pace.get("bound_ms"))
    text = "waited %.1f s" % waited
    if level is not None:
        text += ", p99 %.1f ms" % level
    if bound is not None:
        text += " (bound %g ms)" % bound
    return text


def _node_title(node: Mapping[str, Any]) -> str:
    parts = [
        f"{node.get('host')}: {_status(node)}",
        "%d pulled, %d present, %d failed" % (_count(node, "pulled"), _count(node, "present"), _count(node, "failed")),
        human_size(_count(node, "bytes")),
        "%.1f s" % (_number(node.get("seconds")) or 0.0),
        f"pin {pin_text(node)}",
        f"CRI {_cri_text(node)}",
    ]
    if _pace(node) is not None:
        parts.append(f"pace {_pace_text(node)}")
    return "; ".join(parts)


class _Timeline:
    """The SVG of the run: a row per node under its phase's heading, on one time axis."""

    def __init__(self, page: _Page, span: Tuple[float, float]) -> None:
        self.page = page
        self.start, end = span
        self.seconds = max(end - self.start, 0.001)

    def x(self, when: float) -> float:
        return round(PLOT_LEFT + (when - self.start) / self.seconds * (PLOT_RIGHT - PLOT_LEFT), 2)

    def axis(self, height: int) -> List[str]:
        step = _tick_step(self.seconds)
        out = ['<g class="axis">']
        tick = 0
        while tick <= self.seconds + 1e-9:
            x = self.x(self.start + tick)
            out.append(f'<line class="grid" x1="{x}" y1="{AXIS_HEIGHT - 4}" x2="{x}" y2="{height}"/>')
            anchor = "start" if tick == 0 else "middle"
            out.append(
                f'<text class="tick" x="{x}" y="{AXIS_HEIGHT - 8}" text-anchor="{anchor}">'
                f"{self.page.text(_duration(tick))}</text>"
            )
            tick += step
        out.append("</g>")
        return out

    def _part(self, kind: str, node: Mapping[str, Any], top: float, within: Tuple[float, float]) -> str:
        begin, end = _number(node.get(f"{kind}_started")), _number(node.get(f"{kind}_finished"))
        if begin is None or end is None:
            return ""
        # The parts are on the node's clock, the bar on the controller's: a skew never draws a part outside its bar.
        begin, end = (min(max(when, within[0]), within[1]) for when in (begin, end))
        x = self.x(begin)
        # At least 2 px, inside the node's bar: a pin of a tenth of a second stays visible.
        width = max(self.x(max(end, begin)) - x, 2.0)
        x = round(max(min(x, self.x(within[1]) - width), self.x(within[0])), 2)
        y = top + (BAR_HEIGHT - PART_HEIGHT) / 2
        return f'<rect class="{kind}" x="{x}" y="{y}" width="{round(width, 2)}" height="{PART_HEIGHT}"/>'

    def _waits(self, node: Mapping[str, Any], top: float, within: Tuple[float, float]) -> List[str]:
        """The pace's waits before the node's pulls, on top of its pull part."""
        pace = _pace(node) or {}
        out = []
        for wait in pace.get("waits") or []:
            if not isinstance(wait, (list, tuple)) or len(wait) != 2:
                continue
            begin, end = (_number(when) for when in wait)
            if begin is None or end is None:
                continue
            begin, end = (min(max(when, within[0]), within[1]) for when in (begin, end))
            x = self.x(begin)
            width = max(self.x(max(end, begin)) - x, 2.0)
            x = round(max(min(x, self.x(within[1]) - width), self.x(within[0])), 2)
            y = top + (BAR_HEIGHT - PART_HEIGHT) / 2
            title = self.page.text("the pace waited %.1f s for the disk" % (end - begin))
            out.append(
                f'<rect class="wait" x="{x}" y="{y}" width="{round(width, 2)}" height="{PART_HEIGHT}" '
                f'data-started="{begin}" data-finished="{end}"><title>{title}</title></rect>'
            )
        return out

    def node(self, node: Mapping[str, Any], y: int) -> List[str]:
        status, host = _status(node), str(node.get("host") or node.get("node") or "?")
        begin, end = _number(node.get("started")), _number(node.get("finished"))
        attrs = (
            f'class="node {status}" data-host="{self.page.text(host)}" data-phase="{_phase(node)}" '
            f'data-status="{status}"'
        )
        shown = self.page.clean(host)
        label = shown if len(shown) <= LABEL_CHARS else shown[: LABEL_CHARS - 1] + "\u2026"
        out = [
            f"<g {attrs}>",
            f"<title>{self.page.text(_node_title(node))}</title>",
            f'<text x="2" y="{y + BAR_HEIGHT - 2}">{self.page.text(label)}</text>',
        ]
        if begin is None or end is None:
            note = "not run" if status == "not_run" else f"{status} before the prefetch started"
            out.append(f'<text class="note" x="{PLOT_LEFT + 2}" y="{y + BAR_HEIGHT - 2}">{self.page.text(note)}</text>')
        else:
            x = self.x(begin)
            width = round(self.x(max(end, begin)) - x, 2)
            out.append(
                f'<rect class="bar" x="{x}" y="{y}" width="{width}" height="{BAR_HEIGHT}" '
                f'data-started="{begin}" data-finished="{end}"/>'
            )
            parts = (self._part(kind, node, y, (begin, max(end, begin))) for kind in ("pull", "pin"))
            out.extend(part for part in parts if part)
            out.extend(self._waits(node, y, (begin, max(end, begin))))
        out.append("</g>")
        return out

    def render(self, rows: Sequence[Tuple[str, Sequence[Mapping[str, Any]]]], run: Mapping[str, Any]) -> str:
        serial = {p.get("group"): p.get("serial") for p in run.get("phases") or []}
        body: List[str] = []
        y = AXIS_HEIGHT
        for phase, members in rows:
            heading = f"{PHASE_TITLES[phase]}: {len(members)} node{'s' if len(members) != 1 else ''}"
            if serial.get(phase) is not None:
                heading += f", batches of {serial[phase]}"
            body.append(
                f'<g class="phase" data-phase="{phase}">'
                f'<text x="2" y="{y + PHASE_HEIGHT - 6}">{self.page.text(heading)}</text></g>'
            )
            y += PHASE_HEIGHT
            for node in members:
                body.extend(self.node(node, y + (ROW_HEIGHT - BAR_HEIGHT) // 2))
                y += ROW_HEIGHT
        height = y + 4
        return "\n".join(
            [
                f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{PAGE_WIDTH}" '
                f'height="{height}" viewBox="0 0 {PAGE_WIDTH} {height}" role="img" '
                'aria-label="timeline of the nodes">',
                *self.axis(height),
                *body,
                "</svg>",
            ]
        )


def _legend() -> str:
    keys = [
        ("bar-ok", "node ok"),
        ("pull-ok", "pull"),
        ("pin-ok", "pin"),
        ("bar-failed", "node failed"),
        ("pull-failed", "pull"),
        ("pin-failed", "pin"),
        ("wait", "pace wait"),
        ("not-run", "not run"),
    ]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="legend" width="{PAGE_WIDTH}" height="18" '
        f'viewBox="0 0 {PAGE_WIDTH} 18">'
    ]
    x = 2
    for kind, label in keys:
        out.append(
            f'<rect class="key {kind}" x="{x}" y="4" width="16" height="10"/><text x="{x + 20}" y="13">{label}</text>'
        )
        x += 26 + 6 * len(label) + 10
    out.append("</svg>")
    return "".join(out)


def _table(
    page: _Page,
    header: Sequence[Tuple[str, bool]],
    rows: Iterable[Sequence[Any]],
    row_class: Optional[Sequence[str]] = None,
) -> str:
    """A table; each column is (title, numeric); ``row_class`` gives each row's status class."""
    out = ["<table><thead><tr>"]
    out.extend(f'<th class="n">{page.text(t)}</th>' if numeric else f"<th>{page.text(t)}</th>" for t, numeric in header)
    out.append("</tr></thead><tbody>")
    for index, row in enumerate(rows):
        status = f' class="status-{row_class[index]}"' if row_class else ""
        out.append(f"<tr{status}>")
        for (_title, numeric), value in zip(header, row):
            out.append(f'<td class="n">{page.text(value)}</td>' if numeric else f"<td>{page.text(value)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _totals(page: _Page, summary: Mapping[str, Any], run: Mapping[str, Any]) -> str:
    wall = ""
    began, ended = _number(run.get("started")), _number(run.get("finished"))
    if began is not None and ended is not None:
        wall = _duration(max(ended - began, 0.0))
    pulled = _count(summary, "pulled") + _count(summary, "would_pull")
    verb = "would be pulled" if run.get("check_mode") else "pulled"
    seconds = "%.1f on the nodes together" % (_number(summary.get("node_seconds")) or 0.0)
    if wall:
        seconds += f"; {wall} from the first node's start to the last's end"
    rows = [
        (
            "nodes",
            "%d: %d ok, %d failed, %d not run"
            % (_count(summary, "nodes"), _count(summary, "ok"), _count(summary, "failed"), _count(summary, "not_run")),
        ),
        (
            "images",
            "%d %s, %d present, %d failed"
            % (pulled, verb, _count(summary, "present"), _count(summary, "failed_images")),
        ),
        ("bytes pulled", human_size(_count(summary, "bytes"))),
        ("seconds", seconds),
    ]
    if "pruned" in summary and (_count(summary, "pruned") or _count(summary, "freed_bytes")):
        verb = "would be freed" if run.get("check_mode") else "freed"
        rows.append(
            (
                "bytes pruned",
                "%s %s (%d images)" % (human_size(_count(summary, "freed_bytes")), verb, _count(summary, "pruned")),
            )
        )
    return _table(page, [("total", False), ("", False)], rows)


def _parameters(page: _Page, run: Mapping[str, Any]) -> str:
    phases = ", then ".join(
        "%s (batches of %s, stop above %s%% failed)"
        % (PHASE_TITLES.get(str(p.get("group")), p.get("group")), p.get("serial"), p.get("max_fail_percentage"))
        for p in run.get("phases") or []
    )
    sets = ", ".join(
        "%s (%d images, %d nodes)" % (s.get("name"), _count(s, "images"), _count(s, "nodes"))
        for s in run.get("sets") or []
    )
    pools = ", ".join("%s (%d nodes)" % (p.get("name"), _count(p, "nodes")) for p in run.get("pools") or [])
    rows = [
        ("phases", phases or "-"),
        ("forks", run.get("forks") or "-"),
        ("check mode", "yes" if run.get("check_mode") else "no"),
        ("sets", sets or "-"),
        ("pools", pools or "-"),
    ]
    return _table(page, [("parameter", False), ("value", False)], rows)


def _nodes_table(page: _Page, rows: Sequence[Tuple[str, Sequence[Mapping[str, Any]]]]) -> str:
    header = [
        ("node", False),
        ("phase", False),
        ("status", False),
        ("pulled", True),
        ("present", True),
        ("failed", True),
        ("bytes", True),
        ("seconds", True),
        ("pinned", False),
        ("CRI", False),
    ]
    nodes = [node for _phase_name, members in rows for node in members]
    pruned = any(node.get("pruned") is not None for node in nodes)
    if pruned:
        header.insert(header.index(("pinned", False)), ("freed", True))
    paced = any(_pace(node) is not None for node in nodes)
    if paced:
        header.insert(header.index(("pinned", False)), ("pace", False))
    body = [
        (
            node.get("host"),
            PHASE_TITLES[_phase(node)].lower(),
            _status(node).replace("_", " "),
            _count(node, "pulled") + _count(node, "would_pull"),
            _count(node, "present"),
            _count(node, "failed"),
            human_size(_count(node, "bytes")),
            "%.1f" % (_number(node.get("seconds")) or 0.0),
            *([_freed_text(node)] if pruned else []),
            *([_pace_text(node)] if paced else []),
            pin_text(node),
            _cri_text(node),
        )
        for node in nodes
    ]
    return _table(page, header, body, [_status(node) for node in nodes])


def _failures(page: _Page, nodes: Sequence[Mapping[str, Any]]) -> str:
    out = []
    for node in nodes:
        if _status(node) not in ("failed", "not_run"):
            continue
        out.append(
            f'<div class="failure" data-host="{page.text(node.get("host"))}">'
            f'<h3 class="status-{_status(node)}">{page.text(node.get("host"))}: '
            f"{page.text(_status(node).replace('_', ' '))}</h3>"
            f'<p class="msg">{page.text(node.get("error") or "no message")}</p>'
        )
        bad = [entry for entry in node.get("images") or [] if entry.get("status") in ("failed", "skipped")]
        if bad:
            out.append("<ul>")
            out.extend(
                f'<li class="msg">{page.text(entry.get("image"))}: {page.text(entry.get("error"))}</li>'
                for entry in bad
            )
            out.append("</ul>")
        out.append("</div>")
    return "".join(out) or "<p>None.</p>"


_AUDIT_COUNTS = ("wanted", "present", "pinned", "missing", "unpinned", "pinned_by_others", "prune_candidates")


def _audit_status(node: Mapping[str, Any]) -> str:
    return {"clean": "ok", "drifted": "failed", "failed": "failed"}.get(str(node.get("status")), "not_run")


def _audit_page(page: _Page, report: Mapping[str, Any]) -> List[str]:
    """The audit view: the nodes' counts, each drift with what it means and what heals it, then every node's
    lists (CRI-O's effective drop-in, containerd's unlabelled records)."""
    nodes = list(report.get("nodes") or [])
    drifted = [node for node in nodes if node.get("status") != "clean"]
    title = "pinned.images audit: %d nodes, %d drifted or failed" % (len(nodes), len(drifted))
    header = [("node", False), ("runtime", False), ("method", False)]
    header += [(name.replace("_", " "), True) for name in _AUDIT_COUNTS] + [("status", False)]
    body = [
        (
            node.get("host"),
            node.get("runtime") or "-",
            node.get("method") or "-",
            *[len(node.get(name) or []) for name in _AUDIT_COUNTS],
            node.get("status"),
        )
        for node in nodes
    ]
    drifts = []
    for node in drifted:
        drifts.append(f'<div class="failure" data-host="{page.text(node.get("host"))}">')
        drifts.append(f'<h3 class="status-failed">{page.text(node.get("host"))}: {page.text(node.get("status"))}</h3>')
        if not node.get("drift"):
            drifts.append(f'<p class="msg">{page.text(node.get("error") or "no message")}</p>')
        drifts.append("<ul>")
        drifts.extend(
            f'<li class="msg">{page.text(d.get("kind"))}: {page.text(", ".join(d.get("images") or []))}'
            f"{page.text(' (' + d['detail'] + ')' if d.get('detail') else '')}. {page.text(d.get('means'))}; "
            f"{page.text(d.get('heals'))}</li>"
            for d in node.get("drift") or []
        )
        drifts.append("</ul></div>")
    lists = []
    for node in nodes:
        rows = [(name.replace("_", " "), ", ".join(node.get(name) or []) or "-") for name in _AUDIT_COUNTS[1:]]
        crio = node.get("crio") or {}
        if crio:
            rows.append(("CRI-O pinned_images", ", ".join(crio.get("effective") or []) or "-"))
            rows.append(("set by", crio.get("effective_from") or "no drop-in"))
        if node.get("containerd"):
            rows.append(("records without the label", ", ".join(node["containerd"].get("unlabelled") or []) or "-"))
        lists.append(f"<h3>{page.text(node.get('host'))}</h3>" + _table(page, [("", False), ("", False)], rows))
    return [
        f"<title>{page.text(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{page.text(title)}</h1>",
        "<h2>Nodes</h2>",
        _table(page, header, body, [_audit_status(node) for node in nodes]),
        "<h2>Drift</h2>",
        "".join(drifts) or "<p>None: every wanted image is present and pinned.</p>",
        "<h2>Images and pins</h2>",
        "".join(lists),
    ]


def _head() -> List[str]:
    return [
        "<!DOCTYPE html>",
        '<html xmlns="http://www.w3.org/1999/xhtml" lang="en">',
        "<head>",
        '<meta charset="utf-8"/>',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}"/>',
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
    ]


def render_page(report: Mapping[str, Any], secrets: Iterable[str] = ()) -> str:
    """The HTML page of ``report`` (``summary``, ``nodes``, ``run``: the JSON report file, or the ``set_stats``
    artifact; an audit's, ``run.kind`` audit, gets the audit view), every string of ``secrets`` replaced by the
    redaction marker; ``check_report(report)`` first."""
    check_report(report)
    page = _Page(secrets)
    nodes = list(report.get("nodes") or [])
    run: Mapping[str, Any] = report.get("run") or {}
    if run.get("kind") == "audit":
        return "\n".join([*_head(), *_audit_page(page, report), "</body>", "</html>", ""])
    summary: Mapping[str, Any] = report.get("summary") or {}
    rows = timeline_rows(nodes, run)
    span = _span(nodes)
    timeline = _Timeline(page, span).render(rows, run) if span else "<p>No node started: nothing to draw.</p>"
    counts = [sum(1 for n in nodes if _status(n) == status) for status in ("failed", "not_run")]
    title = "pinned.images rollout: %d nodes, %d failed, %d not run" % (len(nodes), *counts)
    return "\n".join(
        [
            *_head(),
            f"<title>{page.text(title)}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            f"<h1>{page.text(title)}</h1>",
            "<h2>Totals</h2>",
            _totals(page, summary, run),
            "<h2>Timeline</h2>",
            "<p>One bar per node, from the start of its run to its end, in the order the phases ran; the darker parts"
            " are its pulls (first start to last end) and its pin step.</p>",
            _legend(),
            timeline,
            "<h2>Nodes</h2>",
            _nodes_table(page, rows),
            "<h2>Failures</h2>",
            _failures(page, [node for _phase_name, members in rows for node in members]),
            "<h2>Run parameters</h2>",
            _parameters(page, run),
            "</body>",
            "</html>",
            "",
        ]
    )


def page_secrets(
    report: Mapping[str, Any],
    hostvars: Optional[HostVars] = None,
    k8s_auth: Optional[Mapping[str, Any]] = None,
    secrets: Iterable[str] = (),
) -> Set[str]:
    """``secrets`` plus those of the ``node_pull_secret`` of each node of ``report`` and of localhost (``hostvars``)
    and of ``k8s_auth`` (see ``report_secrets``)."""
    check_report(report)
    hosts = [str(node.get("host")) for node in report.get("nodes") or []]
    pull = [host_var(hostvars, host, "node_pull_secret") for host in hosts + ["localhost"]] if hostvars else []
    return report_secrets(pull, k8s_auth) | {str(secret) for secret in secrets or [] if secret}
