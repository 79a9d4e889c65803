# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/_audit: the drift of each event from a pin_audit result, the rows, table and totals, the JUnit XML
and the node_exporter text file of an audit and of a prefetch run."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.pinned.images.plugins.plugin_utils import _audit
from ansible_collections.pinned.images.plugins.plugin_utils._report_html import render_page

A, B = "reg/a@sha256:" + "a" * 64, "reg/b@sha256:" + "b" * 64
OURS = "/etc/crio/crio.conf.d/50-pinned-images"
CRIO = dict(runtime_name="cri-o", runtime_version="1.33.0")


def crio_result(pinned=(A, B), present=(A, B), listed=(A, B), effective=None, source=OURS, exists=True):
    effective = list(listed) if effective is None else effective
    return dict(
        runtime=CRIO,
        method="dropin",
        wanted=[A, B],
        present=list(present),
        pinned=list(pinned),
        missing=[n for n in (A, B) if n not in present],
        unpinned=[n for n in present if n not in pinned],
        crio=dict(
            path=OURS,
            exists=exists,
            images=list(listed) if exists else None,
            effective=effective,
            effective_from=source,
            not_listed=[n for n in (A, B) if n not in listed],
            not_effective=[n for n in (A, B) if n not in effective],
        ),
    )


def kinds(result):
    return [(d["kind"], d["images"]) for d in _audit.audit_row(result, "n", False, [])["drift"]]


def test_a_clean_node_has_no_drift():
    row = _audit.audit_row(crio_result(), "n", False, ["s"])
    assert (row["status"], row["drift"], row["error"]) == ("clean", [], "")


def test_each_event_gets_its_own_drift():
    # An image removed through RemoveImage: missing, nothing else.
    assert kinds(crio_result(pinned=[B], present=[B])) == [("missing", [A])]
    # The drop-in deleted: CRI-O still pins until its next reload; both are drift.
    assert kinds(crio_result(listed=[], exists=False)) == [("dropin", [A, B])]
    # A later drop-in replaces the list.
    later = crio_result(pinned=[], effective=["x/*"], source="/etc/crio/crio.conf.d/99-other")
    assert kinds(later) == [("overridden", [A, B])]
    assert "99-other" in _audit.audit_row(later, "n", False, [])["error"]
    # The drop-in lists them, CRI disagrees: a reload that failed.
    assert kinds(crio_result(pinned=[])) == [("not_applied", [A, B])]


def test_containerd_unlabelled_records_and_no_pin_method():
    result = dict(
        runtime=dict(runtime_name="containerd"),
        method="label",
        wanted=[A],
        present=[A],
        pinned=[],
        missing=[],
        unpinned=[A],
        containerd=dict(unlabelled=[A, "sha256:1"], records=3),
    )
    assert kinds(result) == [("unlabelled", [A])]
    # With no pin asked for (node_pin false), an unpinned image is listed, not drift.
    assert kinds(dict(result, pin="none", method="none", containerd=None)) == []
    # Asked to pin where nothing can (containerd 1.6, an MCO node): the kubelet's GC may collect it.
    for pin in ("auto", "label"):
        assert kinds(dict(result, pin=pin, method="none", containerd=None)) == [("cannot_pin", [A])]


def test_a_failed_call_fails_the_node_with_its_message():
    row = _audit.audit_row(dict(failed=True, msg="cannot reach /run/crio.sock"), "n", True, [])
    assert row["status"] == "failed" and row["error"] == "cannot reach /run/crio.sock"


def test_rows_summary_lines_and_a_host_never_reached():
    hostvars = {
        "n1": {"node_audit": _audit.audit_row(crio_result(), "n1", False, [])},
        "n2": {"node_audit": _audit.audit_row(crio_result(pinned=[]), "n2", False, [])},
        "n3": {},
    }
    rows = _audit.audit_results(["n1", "n2", "n3"], hostvars, [])
    assert [r["status"] for r in rows] == ["clean", "drifted", "failed"]
    totals = _audit.audit_summary(rows)
    assert (totals["clean"], totals["drifted"], totals["failed"], totals["drifted_nodes"]) == (1, 1, 1, ["n2", "n3"])
    lines = _audit.audit_lines(rows, totals)
    assert any(line.startswith("n2: not_applied: ") and "reloads CRI-O" in line for line in lines)
    assert any(line.startswith("n3: failed: not audited") for line in lines)
    assert any(line.startswith("total (3 nodes) ") for line in lines)
    one = _audit.audit_results(["n1"], hostvars, [])
    assert any(line.startswith("total (1 node) ") for line in _audit.audit_lines(one, _audit.audit_summary(one)))


def test_junit_has_a_testcase_per_node_and_a_failure_per_drifted_one():
    rows = [
        dict(_audit.audit_row(crio_result(), "n1", False, []), host="n1"),
        dict(_audit.audit_row(crio_result(pinned=[]), "n2", False, []), host="n2"),
    ]
    suite = ET.fromstring(_audit.junit_xml(rows, "audit", timestamp=0)).find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {case.get("name"): case.find("failure") for case in suite.iter("testcase")}
    assert cases["n1"] is None and "not_applied" in cases["n2"].get("message")
    prefetch = [dict(host="p1", status="ok"), dict(host="p2", status="failed", error="1 of 2 images failed")]
    suite = ET.fromstring(_audit.junit_xml(prefetch, "prefetch")).find("testsuite")
    assert [c.find("failure") is not None for c in suite.iter("testcase")] == [False, True]


def test_metrics_of_an_audit_and_of_a_prefetch():
    rows = [dict(_audit.audit_row(crio_result(pinned=[B]), "n1", False, []), host="n1")]
    text = _audit.metrics_text(rows, "audit", timestamp=1700000000)
    assert 'pinned_images_node_pinned{node="n1",run="audit"} 1' in text
    assert 'pinned_images_node_unpinned{node="n1",run="audit"} 1' in text
    assert 'pinned_images_node_failed{node="n1",run="audit"} 1' in text
    assert 'pinned_images_last_run_timestamp_seconds{run="audit"} 1700000000.000' in text
    prefetch = [dict(host="p1", status="ok", requested=3, present=1, pulled=2, failed=0, pinned=3, pin_method="label")]
    text = _audit.metrics_text(prefetch, "prefetch")
    assert 'pinned_images_node_present{node="p1",run="prefetch"} 3' in text
    assert 'pinned_images_node_unpinned{node="p1",run="prefetch"} 0' in text


def test_the_audit_page_names_each_drift():
    rows = [dict(_audit.audit_row(crio_result(pinned=[]), "n2", False, []), host="n2")]
    page = render_page(dict(summary=_audit.audit_summary(rows), nodes=rows, run=dict(kind="audit")))
    assert "pinned.images audit: 1 nodes, 1 drifted or failed" in page and "not_applied" in page
