# SPDX-License-Identifier: GPL-3.0-or-later
"""The results of a run: the nodes' statuses, each node's result, the totals, the report rows and the run's parameters."""

from __future__ import annotations

import pytest
from ansible.plugins.loader import callback_loader

from ansible_collections.pinned.images.plugins.plugin_utils._results import (
    batch_stopped,
    done_statuses,
    node_results,
    progressing_statuses,
    report_lines,
    report_message,
    report_nodes,
    report_paths,
    run_parameters,
    summary,
)

A = "quay.io/openshift/app-a@sha256:" + "a" * 64


B = "quay.io/openshift/app-b@sha256:" + "b" * 64


def test_report_nodes_drop_the_image_and_set_lists():
    results = [{"host": "w", "status": "ok", "images": [A], "sets": [{"name": "s"}], "pulled": 1}]
    assert report_nodes(results) == [{"host": "w", "status": "ok", "pulled": 1}]
    assert results[0]["images"] == [A]


def test_progressing_statuses_skip_unresolved_nodes_and_add_own_images():
    plan = [
        {"host": "a", "node": "node-a", "sets": None, "error": ""},
        {"host": "b", "node": "node-b", "sets": [{"name": "s", "images": [A]}], "error": ""},
        {"host": "c", "node": "node-c", "sets": [], "error": "ambiguous"},
    ]
    hostvars = {
        "a": {"node_sets": [{"name": "t", "images": [B]}], "node_images": [A], "node_images_set_name": "own"},
        "b": {},
        "c": {},
    }
    assert progressing_statuses(plan, hostvars) == [
        {
            "name": "node-a",
            "state": "progressing",
            "sets": [{"name": "t", "images": [B]}, {"name": "own", "images": [A]}],
        },
        {"name": "node-b", "state": "progressing", "sets": [{"name": "s", "images": [A]}]},
    ]


def _result(**kwargs):
    base = {
        "node": "n",
        "status": "ok",
        "error": "",
        "node_error": "",
        "requested": 2,
        "present": 1,
        "pulled": 1,
        "failed": 0,
        "would_pull": 0,
        "bytes": 3 * 1048576,
        "seconds": 1.25,
        "changed": True,
        "pinned": 2,
        "pin_method": "dropin",
        "sets": [{"name": "s", "images": [A, B]}],
        "images": [{"image": A}],
    }
    return dict(base, **kwargs)


def test_results_mark_nodes_without_a_result_and_unresolved_nodes():
    hostvars = {
        "a": {"node_result": _result(node="a")},
        "b": {"node_sets": [{"name": "s", "images": [A]}], "node_control_plane": True},
        "c": {"cluster_node_name": "node-c", "cluster_node_error": "ambiguous"},
    }
    results = node_results(["a", "b"], hostvars, ["c"])
    assert [(r["host"], r["node_name"], r["status"]) for r in results] == [
        ("a", "a", "ok"),
        ("b", "b", "not_run"),
        ("c", "node-c", "failed"),
    ]
    assert results[1]["error"].startswith("not attempted") and results[1]["sets"] == [{"name": "s", "images": [A]}]
    assert results[2]["error"] == results[2]["node_error"] == "ambiguous"
    # The report page puts nodes without a result in their phase.
    assert (results[1]["control_plane"], results[2]["control_plane"]) == (True, False)
    assert summary(results) == {
        "nodes": 3,
        "ok": 1,
        "failed": 1,
        "not_run": 1,
        "pulled": 1,
        "would_pull": 0,
        "present": 1,
        "failed_images": 0,
        "bytes": 3 * 1048576,
        "pruned": 0,
        "freed_bytes": 0,
        "node_seconds": 1.25,
        "failed_nodes": ["b", "c"],
        "excluded": [],
    }


def test_a_prune_adds_the_freed_bytes_per_node_and_in_total():
    results = [
        dict(_result(), host="a", node_name="a", pruned=2, prune_kept=1, freed_bytes=3 * 1048576),
        dict(_result(), host="b", node_name="b", pruned=0, prune_kept=0, freed_bytes=0),
        dict(_result(), host="c", node_name="c", pruned=None, freed_bytes=0),
    ]
    totals = summary(results)
    assert (totals["pruned"], totals["freed_bytes"]) == (2, 3 * 1048576)
    lines = report_lines(results, totals, True)
    assert lines[0].split()[-2:] == ["freed", "pinned"]
    assert [line[-22:-10].strip() for line in lines[1:4]] == ["3.0 MiB", "0 B", "-"]
    assert (
        lines[4].rstrip().endswith("3.8     3.0 MiB")
        and 'nothing was pruned; "freed" counts the bytes the prune would free' in lines[-1]
    )
    # Without a prune the table is as before.
    assert "freed" not in report_lines([results[2]], summary([results[2]]))[0]


def test_report_lines_show_rows_totals_check_note_and_errors():
    results = [
        dict(_result(), host="a", node_name="a"),
        dict(
            _result(status="failed", error="boom", pinned=None, pulled=0, would_pull=1, bytes=0, seconds=0.0),
            host="b",
            node_name="b",
        ),
        dict(
            _result(pinned=None, pin_method="none", pin_reason="containerd 1.6.20 will not honour the pin"),
            host="c",
            node_name="c",
        ),
    ]
    lines = report_lines(results, summary(results), check_mode=True)
    assert lines[0].split() == ["node", "status", "pulled", "present", "failed", "bytes", "seconds", "pinned"]
    assert lines[1].split() == ["a", "ok", "1", "1", "0", "3.0", "MiB", "1.2", "dropin", "2"]
    assert lines[2].split() == ["b", "failed", "1", "1", "0", "0", "B", "0.0", "-"]
    assert lines[3].split() == ["c", "ok", "1", "1", "0", "3.0", "MiB", "1.2", "not", "pinned"]
    assert lines[4].split() == ["total", "(3", "nodes)", "2", "ok", "3", "3", "0", "6.0", "MiB", "2.5"]
    assert lines[5].startswith("check mode") and lines[6:] == ["b: boom"]
    lines = report_lines(results, summary(results))
    assert not any(line.startswith("check mode") for line in lines)
    # One node is one node, and no row ends in spaces (the YAML result format would quote it).
    lines = report_lines(results[:1], summary(results[:1]))
    assert lines[2].split()[:3] == ["total", "(1", "node)"] and lines == [line.rstrip() for line in lines]


def test_the_report_is_one_block_string_for_the_yaml_result_format():
    lines = report_lines([dict(_result(), host="a", node_name="a")], summary([dict(_result(), host="a")]))
    assert report_message(lines) == lines and report_message(lines, "json") == lines
    assert report_message(lines, "yaml") == "\n".join(lines)
    # As the default callback prints them: each row whole on its own line under both result formats.
    for result_format in ("json", "yaml"):
        callback = callback_loader.get("default")
        callback.set_options(direct={"result_format": result_format})
        shown = callback._dump_results({"msg": report_message(lines, result_format)})
        assert [line for line in lines if line not in shown] == [], shown


def test_run_parameters_gather_phases_sets_pools_and_the_time_span():
    results = [
        dict(_result(started=10.0, finished=14.0), host="a"),
        dict(
            _result(
                sets=[{"name": "s", "images": [A, B]}, {"name": "own", "images": [A]}], started=15.0, finished=16.5
            ),
            host="b",
        ),
        dict(_result(status="not_run", sets=[]), host="c"),
    ]
    phases = [
        {"group": "control_plane", "serial": 1, "max_fail_percentage": 100},
        {"group": "", "serial": 1, "max_fail_percentage": 100},
    ]
    plan = [{"host": "a", "pools": ["master"]}, {"host": "b", "pools": ["master", "infra"]}, {"host": "c", "pools": []}]
    run = run_parameters(results, phases, plan, forks="5", check_mode=False, run_id="20261202T120000Z-7")
    assert run == {
        "phases": [{"group": "control_plane", "serial": 1, "max_fail_percentage": 100}],
        "forks": 5,
        "check_mode": False,
        "sets": [{"name": "own", "images": 1, "nodes": 1}, {"name": "s", "images": 2, "nodes": 2}],
        "pools": [{"name": "infra", "nodes": 1}, {"name": "master", "nodes": 2}],
        "started": 10.0,
        "finished": 16.5,
        "id": "20261202T120000Z-7",
    }
    # The report entry point on its own: no plan, no phases, no times.
    assert run_parameters([dict(_result(), host="a")], None, None) == {
        "phases": [],
        "forks": None,
        "check_mode": False,
        "sets": [{"name": "s", "images": 2, "nodes": 1}],
        "pools": [],
        "started": None,
        "finished": None,
        "id": "",
    }


def test_each_run_names_its_own_report_files_and_the_report_file_links_to_the_latest():
    paths = report_paths("/srv/reports/report.json", "20261202T120000Z-7")
    assert paths == {
        "file": "/srv/reports/report-20261202T120000Z-7.json",
        "page": "/srv/reports/report-20261202T120000Z-7.html",
        "latest": "/srv/reports/report.json",
        "latest_page": "/srv/reports/report.html",
    }
    # Two runs never share a file; a name without an extension, or a dot in a directory, keeps its shape.
    assert report_paths("/r/report.json", "a")["file"] != report_paths("/r/report.json", "b")["file"]
    assert report_paths("/r.d/report", "a")["file"] == "/r.d/report-a"
    assert report_paths("/r/report.json", "a", per_run=False) == {
        "file": "/r/report.json",
        "page": "/r/report.html",
        "latest": None,
        "latest_page": None,
    }
    for bad in ("", "a/b"):
        with pytest.raises(ValueError, match="a run id without '/'"):
            report_paths("/r/report.json", bad)


def test_done_statuses_carry_sets_images_and_errors():
    results = [dict(_result(node_error="boom"), node_name="node-a"), dict(_result(sets=None), node_name="node-b")]
    done = done_statuses(results)
    assert done[0] == {
        "name": "node-a",
        "state": "done",
        "sets": [{"name": "s", "images": [A, B]}],
        "images": [{"image": A}],
        "error": "boom",
    }
    assert done[1]["sets"] == [] and done[1]["error"] == ""


@pytest.mark.parametrize(
    "statuses, limit, stopped",
    [
        (["ok", "failed"], 50, False),
        (["ok", "failed", "failed"], 50, True),
        (["failed"], 0, True),
        (["ok"], 0, False),
        (["failed"], 99, True),
        (["failed"], 100, False),
        ([None, "ok"], 49, True),
        ([None, "ok"], "50", False),
    ],
)
def test_a_batch_stops_the_phase_above_its_failure_limit(statuses, limit, stopped):
    hosts = [f"h{index}" for index in range(len(statuses))]
    hostvars = {
        host: ({} if status is None else {"node_result": {"status": status}}) for host, status in zip(hosts, statuses)
    }
    assert batch_stopped(hosts, hostvars, limit) is stopped


def test_a_host_with_an_empty_result_is_not_counted_as_failed():
    assert batch_stopped(["a"], {"a": {"node_result": {}}}, 0) is False


def test_nodes_a_limit_excludes_are_listed_and_not_counted():
    results = [
        dict(
            node="cp",
            host="cp",
            status="ok",
            pulled=1,
            present=0,
            failed=0,
            bytes=10,
            seconds=1.0,
            pinned=1,
            pin_method="dropin",
            error="",
        )
    ]
    totals = summary(results, ["w-1", "w-2"])
    assert totals["nodes"] == 1 and totals["not_run"] == 0 and totals["excluded"] == ["w-1", "w-2"]
    lines = report_lines(results, totals)
    assert "excluded by --limit, not run and not counted: w-1, w-2" in lines
