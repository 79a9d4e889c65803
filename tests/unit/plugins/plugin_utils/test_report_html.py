# SPDX-License-Identifier: GPL-3.0-or-later
"""The report page: well-formed, self-contained, a bar per node in run order, escaped and without secrets."""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.pinned.images.plugins.plugin_utils import _report_html
from ansible_collections.pinned.images.plugins.plugin_utils._plan import phases
from ansible_collections.pinned.images.plugins.plugin_utils._results import report_nodes, run_parameters, summary

SVG = "{http://www.w3.org/2000/svg}"
XHTML = "{http://www.w3.org/1999/xhtml}"
IMAGE = "registry.example.com/org/app@sha256:" + "a" * 64


def node(host, control_plane, started, status="ok", **extra):
    base = dict(
        host=host,
        node=host,
        control_plane=control_plane,
        status=status,
        error="",
        node_error="",
        requested=3,
        pulled=2,
        present=1,
        failed=0,
        would_pull=0,
        bytes=2 * 1048576,
        seconds=3.0,
        started=started,
        finished=started + 4.0,
        pull_started=started + 1.0,
        pull_finished=started + 3.0,
        pin_started=started + 3.1,
        pin_finished=started + 3.2,
        pinned=3,
        pin_method="label",
        dropin=None,
        runtime="containerd",
        runtime_version="1.7.24",
        sets=[{"name": "s", "images": [IMAGE]}],
        images=[],
    )
    return dict(base, **extra)


def report(nodes, order=("control_plane", "workers")):
    planned = phases(list(order), (1, 100), ("100%", 100))
    return {
        "summary": summary(nodes),
        "nodes": nodes,
        "run": run_parameters(nodes, planned, [{"host": n["host"], "pools": ["worker"]} for n in nodes], forks=10),
    }


def page_of(report, hostvars=None, k8s_auth=None, secrets=()):
    """The page of ``report`` without the secrets of the run (as the cluster role renders it)."""
    return _report_html.render_page(report, _report_html.page_secrets(report, hostvars, k8s_auth, secrets))


def run_report():
    """Two control-plane nodes one after the other (the second failed), two workers together, one not run."""
    return report(
        [
            node(
                "cp-1",
                True,
                110.0,
                status="failed",
                error="1 of 3 images failed",
                pin_started=None,
                pin_finished=None,
                pinned=None,
                images=[dict(image=IMAGE, status="failed", error="manifest unknown")],
            ),
            node("cp-0", True, 100.0),
            node("worker-0", False, 120.0),
            node("worker-1", False, 120.5),
            dict(
                node("worker-2", False, 0.0, status="not_run", error="not attempted"),
                started=None,
                finished=None,
                pull_started=None,
                pull_finished=None,
                pin_started=None,
                pin_finished=None,
                pulled=0,
                present=0,
                bytes=0,
                seconds=0.0,
                pinned=None,
                runtime="",
                runtime_version="",
            ),
        ]
    )


def parse(page):
    """The page as XML: a strict parser (any unclosed tag, bare & or unknown entity fails)."""
    return ET.fromstring(page.split("\n", 1)[1])


def bars(root):
    return [g for g in root.iter(SVG + "g") if "node" in (g.get("class") or "").split()]


def test_the_page_is_well_formed_self_contained_and_loads_nothing():
    page = page_of(run_report())
    assert page.startswith("<!DOCTYPE html>\n")
    root = parse(page)
    assert root.tag == XHTML + "html"
    assert not list(root.iter(XHTML + "script")) and "<script" not in page
    # Nothing to fetch: no link, image or URL other than the two XML namespaces; the policy forbids loading.
    assert not list(root.iter(XHTML + "link")) and not list(root.iter(XHTML + "img"))
    namespaces = {"http://www.w3.org/1999/xhtml", "http://www.w3.org/2000/svg"}
    assert set(re.findall(r"https?://[^\s\"']+", page)) == namespaces
    policy = [m for m in root.iter(XHTML + "meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert policy[0].get("content").startswith("default-src 'none'")


def test_a_bar_per_node_in_phase_order_then_start_order():
    root = parse(page_of(run_report()))
    rows = [(g.get("data-host"), g.get("data-phase"), g.get("data-status")) for g in bars(root)]
    assert rows == [
        ("cp-0", "control_plane", "ok"),
        ("cp-1", "control_plane", "failed"),
        ("worker-0", "workers", "ok"),
        ("worker-1", "workers", "ok"),
        ("worker-2", "workers", "not_run"),
    ]
    phases = [g.get("data-phase") for g in root.iter(SVG + "g") if g.get("class") == "phase"]
    assert phases == ["control_plane", "workers"]
    # Workers first when the run put them first.
    turned = parse(page_of(report(run_report()["nodes"], order=("workers", "control_plane"))))
    assert [g.get("data-host") for g in bars(turned)][:3] == ["worker-0", "worker-1", "worker-2"]


def geometry(group):
    """{kind: (x, x + width, y)} of a node's rects."""
    return {
        r.get("class"): (float(r.get("x")), float(r.get("x")) + float(r.get("width")), float(r.get("y")))
        for r in group.iter(SVG + "rect")
    }


def test_bars_follow_the_times_with_the_pull_and_the_pin_inside():
    groups = {g.get("data-host"): g for g in bars(parse(page_of(run_report())))}
    cp0, cp1 = geometry(groups["cp-0"]), geometry(groups["cp-1"])
    # One control-plane node after the other: their bars do not overlap.
    assert cp0["bar"][1] < cp1["bar"][0]
    assert cp0["bar"][0] == _report_html.PLOT_LEFT and geometry(groups["worker-1"])["bar"][1] == _report_html.PLOT_RIGHT
    for part in ("pull", "pin"):
        assert cp0["bar"][0] <= cp0[part][0] < cp0[part][1] <= cp0["bar"][1]
    assert cp0["pull"][1] <= cp0["pin"][0]
    # The failed node pulled and did not pin; the node not run has no bar, only its note.
    assert set(cp1) == {"bar", "pull"} and set(geometry(groups["worker-2"])) == set()
    assert "not run" in "".join(groups["worker-2"].itertext())
    assert groups["cp-1"].get("class") == "node failed"


def test_a_node_clock_ahead_or_behind_the_controller_draws_its_parts_inside_its_bar():
    # The parts come from the node's clock, the bar from the controller's: a skew of a minute either way.
    ahead = node("cp-0", True, 100.0, pull_started=160.0, pull_finished=162.0, pin_started=163.0, pin_finished=163.1)
    behind = node(
        "worker-0", False, 100.0, pull_started=40.0, pull_finished=42.0, pin_started=103.0, pin_finished=103.1
    )
    groups = {g.get("data-host"): geometry(g) for g in bars(parse(page_of(report([ahead, behind]))))}
    for rects in groups.values():
        for part in ("pull", "pin"):
            assert rects["bar"][0] <= rects[part][0] and rects[part][1] <= rects["bar"][1] + 0.01, rects


def test_per_node_counts_pin_runtime_totals_parameters_and_failures():
    root = parse(page_of(run_report()))
    rows = [" ".join("".join(cell.itertext()) for cell in tr) for tr in root.iter(XHTML + "tr")]
    assert "cp-0 control plane ok 2 1 0 2.0 MiB 3.0 label 3 containerd 1.7.24" in rows
    assert "cp-1 control plane failed 2 1 0 2.0 MiB 3.0 - containerd 1.7.24" in rows
    assert root.find(XHTML + "body/" + XHTML + "h1").text == "pinned.images rollout: 5 nodes, 1 failed, 1 not run"
    assert "nodes 5: 3 ok, 1 failed, 1 not run" in rows and "images 8 pulled, 4 present, 0 failed" in rows
    assert "seconds 12.0 on the nodes together; 24.5 s from the first node's start to the last's end" in rows
    assert (
        "phases Control plane (batches of 1, stop above 100% failed), then Workers (batches of 100%, stop above "
        "100% failed)"
    ) in rows
    assert "forks 10" in rows and "sets s (1 images, 5 nodes)" in rows and "pools worker (5 nodes)" in rows
    failures = {div.get("data-host"): " ".join(" ".join(div.itertext()).split()) for div in root.iter(XHTML + "div")}
    assert failures == {
        "cp-1": f"cp-1: failed 1 of 3 images failed {IMAGE}: manifest unknown",
        "worker-2": "worker-2: not run not attempted",
    }


def test_everything_is_escaped_and_characters_xml_forbids_are_replaced():
    hostile = "cp-<b>&\"'\x00\x1b[31m"
    nodes = [node(hostile, True, 1.0, status="failed", error="<script>alert(1)</script> & \x07")]
    page = page_of(report(nodes))
    root = parse(page)
    assert "<b>" not in page and "<script>" not in page and "\x00" not in page and "\x07" not in page
    assert bars(root)[0].get("data-host") == "cp-<b>&\"'\ufffd\ufffd[31m"
    assert "<script>alert(1)</script> & \ufffd" in "".join(root.itertext())


def test_no_secret_of_the_run_appears():
    user, password, token = "robot", "s3cr3t-pass-word", "sha256~api-token-value"
    blob = base64.b64encode(f"{user}:{password}".encode()).decode()
    pull_secret = json.dumps({"auths": {"registry.example.com": {"auth": blob}}})
    leaky = f"pull of {IMAGE} failed: {user}:{password} / {blob} / Bearer {token}"
    nodes = [
        node("cp-0", True, 1.0, status="failed", error=leaky, images=[dict(image=IMAGE, status="failed", error=leaky)])
    ]
    hostvars = {"cp-0": {"node_pull_secret": pull_secret}, "localhost": {}}
    page = page_of(report(nodes), hostvars=hostvars, k8s_auth={"api_key": token})
    for secret in (password, blob, f"{user}:{password}", token):
        assert secret not in page
    assert page.count("********") >= 6
    # A pull secret given as a dict (a variable), or text that is not a docker config, counts too.
    assert _report_html.report_secrets([json.loads(pull_secret)]) >= {password, blob}
    assert _report_html.report_secrets(["not-json-but-secret"]) == {"not-json-but-secret"}
    assert password not in page_of(report(nodes), secrets=[password])
    # A secret across the cut of a long node name: no part of it stays in the label.
    named = page_of(report([node(f"node-0123456789-{password}", True, 1.0)]), secrets=[password])
    assert password[:6] not in named and "node-0123456789-****" in named


def test_five_hundred_nodes_stay_one_row_each_on_the_page_width():
    nodes = [node(f"worker-{i:03d}-of-a-very-long-node-name.example.com", False, 100.0 + i % 7) for i in range(500)]
    root = parse(page_of(report(nodes)))
    svg = [s for s in root.iter(SVG + "svg") if s.get("class") == "timeline"][0]
    assert svg.get("width") == str(_report_html.PAGE_WIDTH)
    groups = bars(root)
    assert len(groups) == 500
    tops = [geometry(g)["bar"][2] for g in groups]
    assert all(after - before == _report_html.ROW_HEIGHT for before, after in zip(tops, tops[1:]))
    assert tops[-1] + _report_html.BAR_HEIGHT <= float(svg.get("height"))
    labels = [next(g.iter(SVG + "text")).text for g in groups]
    assert all(len(label) <= _report_html.LABEL_CHARS for label in labels) and labels[0].endswith("\u2026")
    # The whole name is in the bar's title and the table.
    assert nodes[0]["host"] in next(groups[0].iter(SVG + "title")).text


def test_the_published_report_draws_the_same_timeline_and_a_report_without_nodes_draws_none():
    full = run_report()
    published = dict(full, nodes=report_nodes(full["nodes"]))
    timeline = re.compile(r'<svg [^>]*class="timeline".*?</svg>', re.S)
    assert timeline.search(page_of(published)).group(0) == timeline.search(page_of(full)).group(0)
    empty = page_of({"summary": {}, "nodes": []})
    assert "nothing to draw" in empty and parse(empty) is not None


def test_the_page_lies_beside_the_report_file():
    assert _report_html.page_path("/tmp/run/report.json") == "/tmp/run/report.html"
    assert _report_html.page_path("report") == "report.html"


@pytest.mark.parametrize(
    "mangle, message",
    [
        (lambda r: [r], "the report must be a mapping (summary, nodes, run), got a list"),
        (lambda r: dict(r, run=[r["run"]]), "the report's run must be a mapping, got a list"),
        (lambda r: dict(r, summary="ok"), "the report's summary must be a mapping, got str"),
        (
            lambda r: dict(r, nodes=r["nodes"] + ["cp-9"]),
            "the report's nodes must be a list of mappings, got a list with str",
        ),
        (
            lambda r: dict(r, nodes=[dict(r["nodes"][0], images=[IMAGE])]),
            "the report's nodes[0].images must be a list of mappings, got a list with str",
        ),
        (
            lambda r: dict(r, run=dict(r["run"], sets=[{"name": "s", "images": IMAGE}])),
            f"the report's run.sets[0].images must be a number, got str {IMAGE!r}",
        ),
        (
            lambda r: dict(r, run=dict(r["run"], pools={"worker": 3})),
            "the report's run.pools must be a list of mappings, got dict",
        ),
    ],
)
def test_a_malformed_report_is_an_error_naming_the_key(mangle, message):
    with pytest.raises(ValueError) as error:
        page_of(mangle(run_report()))
    assert str(error.value) == message


def test_nan_and_infinity_draw_nothing_and_end():
    nodes = run_report()["nodes"]
    # A hand-edited JSON report: Python's json reads NaN and Infinity.
    broken = dict(
        report(nodes[1:4]),
        nodes=[
            dict(nodes[1], finished=float("inf"), pulled=float("nan"), seconds=float("-inf")),
            dict(nodes[2], started=float("nan")),
            nodes[3],
        ],
    )
    page = page_of(broken)
    groups = {g.get("data-host"): geometry(g) for g in bars(parse(page))}
    # cp-0 has no end and worker-0 no start: notes, not bars; worker-1 spans the axis alone.
    assert set(groups["cp-0"]) == set() and set(groups["worker-0"]) == set()
    assert "nan" not in page.lower() and "inf" not in page.replace("info", "")
    assert "cp-0 control plane ok 0 1 0 2.0 MiB 0.0" in " ".join(
        " ".join("".join(c.itertext()) for c in tr) for tr in parse(page).iter(XHTML + "tr")
    )


def test_a_run_of_years_has_a_few_ticks():
    ticks = [
        t
        for t in parse(page_of(report([node("cp-0", True, 0.0, finished=1e9)]))).iter(SVG + "text")
        if t.get("class") == "tick"
    ]
    assert 2 <= len(ticks) <= 9


def test_a_prune_adds_the_freed_column_and_total():
    nodes = [
        node("worker-0", False, 100.0, pruned=2, prune_kept=1, freed_bytes=3 * 1048576),
        node("worker-1", False, 100.0, pruned=None, freed_bytes=0),
    ]
    root = parse(page_of(report(nodes)))
    rows = [" ".join("".join(cell.itertext()) for cell in tr) for tr in root.iter(XHTML + "tr")]
    assert "node phase status pulled present failed bytes seconds freed pinned CRI" in rows
    assert "worker-0 workers ok 2 1 0 2.0 MiB 3.0 3.0 MiB label 3 containerd 1.7.24" in rows
    assert "worker-1 workers ok 2 1 0 2.0 MiB 3.0 - label 3 containerd 1.7.24" in rows
    assert "bytes pruned 3.0 MiB freed (2 images)" in rows
    # Without a prune, neither.
    plain = parse(page_of(report([node("worker-1", False, 100.0)])))
    assert not [tr for tr in plain.iter(XHTML + "tr") if "freed" in "".join(tr.itertext())]


def test_the_pace_waits_are_drawn_on_the_control_plane_bars_and_listed():
    pace = dict(
        path="/var/lib/etcd",
        bound_ms=10.0,
        percentile=99.0,
        p50_ms=0.8,
        p99_ms=8.25,
        max_ms=40.0,
        samples=120,
        waited_seconds=2.5,
        held=1,
        timed_out=0,
        # The second wait starts before the bar (another clock): it is drawn from the bar's start.
        waits=[[100.5, 101.0], [99.0, 102.0]],
    )
    nodes = [node("cp-0", True, 100.0, pace=pace), node("worker-0", False, 105.0)]
    page = page_of(report(nodes))
    root = parse(page)
    by_host = {g.get("data-host"): g for g in bars(root)}
    waits = [rect for rect in by_host["cp-0"].iter(SVG + "rect") if rect.get("class") == "wait"]
    drawn = next(rect for rect in by_host["cp-0"].iter(SVG + "rect") if rect.get("class") == "bar")
    assert len(waits) == 2
    assert all(float(rect.get("x")) >= float(drawn.get("x")) for rect in waits)
    assert [rect.find(SVG + "title").text for rect in waits] == [
        "the pace waited 0.5 s for the disk",
        "the pace waited 2.0 s for the disk",
    ]
    assert not [rect for rect in by_host["worker-0"].iter(SVG + "rect") if rect.get("class") == "wait"]
    assert "pace waited 2.5 s, p99 8.2 ms (bound 10 ms)" in by_host["cp-0"].find(SVG + "title").text
    table = next(t for t in root.iter(XHTML + "table") if "pace" in [th.text for th in t.iter(XHTML + "th")])
    cells = [[td.text for td in tr.iter(XHTML + "td")] for tr in table.iter(XHTML + "tr")][1:]
    column = [th.text for th in table.iter(XHTML + "th")].index("pace")
    assert [row[column] for row in cells] == ["waited 2.5 s, p99 8.2 ms (bound 10 ms)", "-"]
    assert "pace wait" in page


def test_without_a_pace_there_is_no_pace_column_and_no_wait():
    root = parse(page_of(run_report()))
    assert not [rect for rect in root.iter(SVG + "rect") if rect.get("class") == "wait"]
    assert all("pace" not in [th.text for th in t.iter(XHTML + "th")] for t in root.iter(XHTML + "table"))
