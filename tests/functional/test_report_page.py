# SPDX-License-Identifier: GPL-3.0-or-later
"""The report page of a real prefetch run, in a real browser.

One `ansible-playbook pinned.images.prefetch` run on the session lab (two control-plane nodes one after the other,
two workers together; worker-2 also wants an image that does not exist, so it fails) with a pull secret for the
lab's login registry. Its `report.html` is then read by a strict XML parser and opened in headless Debian chromium
over the DevTools protocol (`tests/support/browser.py`): the DOM and a screenshot must show every node's bar in
its phase, in run order, the control-plane bars apart in time, the failed node drawn red, and the page must log no
error and fetch nothing. The AWX path (`pinned.images.report_page` on the `set_stats` artifact) draws the same
timeline.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from PIL import Image

from fixtures.ansible_runs import playbook, warnings_in
from support.browser import CHROMIUM, Browser

pytestmark = pytest.mark.lab

CONTROL_PLANE = ["cp-0", "worker-0"]
WORKERS = ["worker-1", "worker-2"]
FAILED = "worker-2"
SPEED = {"node_progress_interval": 1, "node_control_plane_pull_pause": 0.2, "node_worker_pull_pause": 0.2}
# The timeline of a page, to compare two pages' drawings.
TIMELINE = re.compile(r'<svg [^>]*class="timeline".*?</svg>', re.S)


def green(pixel) -> bool:
    r, g, b = pixel[:3]
    return g > r + 20 and g > b + 20


def red(pixel) -> bool:
    r, g, b = pixel[:3]
    return r > g + 40 and r > b + 40


@pytest.fixture(scope="module")
def page_run(lab, tmp_path_factory):
    """The run, its report file, its page, the secrets it used and the set_stats artifact it published."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: hack/setup.sh installs it (hack/programs.txt)")
    tmp = tmp_path_factory.mktemp("report-page")
    images = [record.reference for record in lab.push_bulk(2, prefix="report-page")]
    images.append(lab.images()["auth-small"].reference)
    missing = "%s/report-page/missing@sha256:%s" % (lab.state["registries"]["plain"]["host"], "0" * 64)
    # worker-0 counts as a control-plane node here; every node writes its drop-in under tmp, not in the lab.
    hosts = {name: {"node_dropin_path": str(tmp / name / "50-pinned-images")} for name in CONTROL_PLANE + WORKERS}
    for name in hosts:
        (tmp / name).mkdir()
    hosts[FAILED]["node_images"] = images + [missing]
    (tmp / "page.yml").write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": {"node_images": images},
                    "children": {
                        "control_plane": {"hosts": {name: hosts[name] for name in CONTROL_PLANE}},
                        "workers": {"hosts": {name: hosts[name] for name in WORKERS}},
                    },
                }
            }
        )
    )
    pull_secret = Path(lab.state["registries"]["auth"]["docker_config"]).read_text()
    auth = json.loads(pull_secret)["auths"]
    username, password = lab.credentials()
    report = tmp / "report.json"
    extra = dict(SPEED, cluster_report_file=str(report), node_pull_secret=pull_secret)
    proc = playbook(
        "pinned.images.prefetch",
        [lab.write_inventory(tmp / "lab.yml", nodes=CONTROL_PLANE + WORKERS), tmp / "page.yml"],
        extra,
        env={"ANSIBLE_SHOW_CUSTOM_STATS": "True"},
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    # The run fails for worker-2 only; the custom stats line is the set_stats artifact AWX would keep.
    assert proc.returncode == 2, output
    stats = json.loads(re.search(r"^\tRUN: (.*)$", proc.stdout, re.M).group(1))
    secrets = [password, f"{username}:{password}", *(entry["auth"] for entry in auth.values())]
    return dict(
        tmp=tmp,
        report=json.loads(report.read_text()),
        page=tmp / "report.html",
        secrets=secrets,
        stats=stats,
        output=output,
        missing=missing,
    )


def test_the_page_is_well_formed_and_keeps_the_secrets_out(page_run):
    text = page_run["page"].read_text()
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag == "{http://www.w3.org/1999/xhtml}html" and "<script" not in text
    for secret in page_run["secrets"]:
        assert secret not in text
        # The run used it: the node wrote the secret's file and pulled from the login registry.
    assert page_run["report"]["summary"]["failed_nodes"] == [FAILED]
    assert page_run["missing"] in text


@pytest.fixture(scope="module")
def browser(page_run):
    with Browser(page_run["tmp"] / "profile") as browser:
        yield browser


def bars(page) -> list[dict]:
    """Each node's bar as the browser laid it out: host, phase, status, box, fill."""
    return page.evaluate("""[...document.querySelectorAll('svg.timeline g.node')].map(g => {
        const bar = g.querySelector('rect.bar');
        const box = (bar || g.querySelector('text')).getBoundingClientRect();
        return {host: g.dataset.host, phase: g.dataset.phase, status: g.dataset.status,
                left: box.left + scrollX, right: box.right + scrollX, top: box.top + scrollY,
                bottom: box.bottom + scrollY, fill: bar ? getComputedStyle(bar).fill : null,
                started: bar ? Number(bar.dataset.started) : null};
    })""")


def test_the_browser_draws_every_node_in_its_phase_and_run_order(page_run, browser):
    page = browser.open(page_run["page"], width=800, height=900)
    found = bars(page)
    shot = page_run["tmp"] / "report.png"
    shot.write_bytes(page.screenshot())
    picture = Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")

    assert sorted(box["host"] for box in found) == sorted(CONTROL_PLANE + WORKERS)
    # Top to bottom: the control-plane phase (which ran first), then the workers; by start time in each.
    assert [box["phase"] for box in found] == ["control_plane"] * 2 + ["workers"] * 2
    assert all(before["bottom"] <= after["top"] for before, after in zip(found, found[1:]))
    nodes = {node["host"]: node for node in page_run["report"]["nodes"]}
    for phase in (CONTROL_PLANE, WORKERS):
        members = [box for box in found if box["host"] in phase]
        assert [box["host"] for box in members] == sorted(phase, key=lambda host: nodes[host]["started"])
    # One control-plane node after the other: the second bar starts right of where the first ends.
    first, second = found[0], found[1]
    assert first["right"] <= second["left"], (first, second)
    assert min(box["left"] for box in found[2:]) >= second["right"]

    statuses = {box["host"]: box["status"] for box in found}
    assert statuses == {"cp-0": "ok", "worker-0": "ok", "worker-1": "ok", FAILED: "failed"}
    for box in found:
        # The picture at the middle of each bar: green for ok, red for the failed node.
        pixel = picture.getpixel((int((box["left"] + box["right"]) / 2), int((box["top"] + box["bottom"]) / 2)))
        assert (red if box["host"] == FAILED else green)(pixel), (box, pixel)
        assert box["fill"] == ("rgb(255, 205, 210)" if box["host"] == FAILED else "rgb(200, 230, 201)")
    assert page.errors() == []
    # The page loaded nothing but itself.
    assert page.requests() == [page_run["page"].resolve().as_uri()]
    print(f"screenshot {shot}: {picture.size[0]}x{picture.size[1]} px")


def test_the_pace_waits_show_on_the_control_plane_bars(page_run, browser):
    """The control-plane nodes paced their pulls (the lab's bound never holds them, but the first pull waits for
    the first samples): each wait of the report is an amber rect inside its node's bar; the workers have none."""
    nodes = {node["host"]: node for node in page_run["report"]["nodes"]}
    page = browser.open(page_run["page"], width=800, height=900)
    drawn = page.evaluate("""[...document.querySelectorAll('svg.timeline g.node')].map(g => {
        const bar = g.querySelector('rect.bar').getBoundingClientRect();
        return {host: g.dataset.host, left: bar.left, right: bar.right,
                waits: [...g.querySelectorAll('rect.wait')].map(r => {
                    const box = r.getBoundingClientRect();
                    return {left: box.left, right: box.right, fill: getComputedStyle(r).fill};
                })};
    })""")
    for entry in drawn:
        pace = nodes[entry["host"]]["pace"]
        if entry["host"] not in CONTROL_PLANE:
            assert pace is None and entry["waits"] == [], entry
            continue
        assert pace["waits"] and pace["waited_seconds"] > 0 and pace["samples"] >= 3, pace
        assert len(entry["waits"]) == len(pace["waits"])
        for wait in entry["waits"]:
            assert entry["left"] - 0.5 <= wait["left"] < wait["right"] <= entry["right"] + 0.5, (entry, wait)
            assert wait["fill"] == "rgb(255, 179, 0)"
    assert page.errors() == []


def test_the_page_prints_on_the_width_of_a4(page_run, browser):
    # 680 CSS px: A4's 210 mm less the page's 15 mm margins at 96 px per inch.
    page = browser.open(page_run["page"], width=680, height=900, media="print")
    assert page.evaluate("document.documentElement.scrollWidth") <= 680
    assert page.errors() == []


def test_five_hundred_nodes_scroll_without_overlap(page_run, browser):
    """The real run's nodes copied to 500 rows: each label and bar stays in its own row, left of the plot."""
    report = page_run["report"]
    nodes = [
        dict(node, host=f"{node['host']}-{index:03d}.a-long-domain.example.com")
        for index in range(125)
        for node in report["nodes"]
    ]
    big = page_run["tmp"] / "big.json"
    big.write_text(json.dumps(dict(report, nodes=nodes)))
    proc = playbook(
        "pinned.images.report_page",
        extra_vars={"cluster_report_file": str(big), "cluster_report_html_file": str(big) + ".html"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = browser.open(Path(str(big) + ".html"), width=800, height=900)
    rows = page.evaluate("""[...document.querySelectorAll('svg.timeline g.node')].map(g => {
        const label = g.querySelector('text').getBoundingClientRect();
        const plot = [...g.querySelectorAll('rect')].map(r => r.getBoundingClientRect());
        const tops = [label, ...plot].map(b => b.top), bottoms = [label, ...plot].map(b => b.bottom);
        return {top: Math.min(...tops), bottom: Math.max(...bottoms), label_right: label.right,
                plot_left: Math.min(...plot.map(b => b.left), Infinity)};
    })""")
    assert len(rows) == 500
    assert all(before["bottom"] <= after["top"] for before, after in zip(rows, rows[1:]))
    assert all(row["label_right"] < row["plot_left"] for row in rows)
    assert page.evaluate("document.documentElement.scrollHeight") > 500 * 12
    assert page.evaluate("document.documentElement.scrollWidth") <= 800
    assert page.errors() == []


def test_the_documented_command_writes_the_page_of_a_report_file(page_run):
    """docs/awx.md's command, run as written in a directory that holds the run's report.json."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "awx.md").read_text()
    command = re.search(r"^ansible-playbook pinned\.images\.report_page .*$", docs, re.M).group(0)
    work = page_run["tmp"] / "docs-command"
    work.mkdir()
    (work / "report.json").write_text(json.dumps(page_run["report"]))
    argv = shlex.split(command)
    proc = playbook(argv[1], options=argv[2:], cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert warnings_in(proc.stdout + proc.stderr) == []
    assert (work / "report.html").read_text() == page_run["page"].read_text()


def test_the_awx_artifact_gives_the_same_timeline(page_run):
    artifact = page_run["tmp"] / "artifact.json"
    artifact.write_text(json.dumps(page_run["stats"]))
    dest = page_run["tmp"] / "from-artifact.html"
    proc = playbook(
        "pinned.images.report_page", extra_vars={"cluster_report_html_file": str(dest)}, options=["-e", f"@{artifact}"]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(page_run["stats"]["pinned_images_report"]) == {"summary", "nodes", "run"}
    assert TIMELINE.search(dest.read_text()).group(0) == TIMELINE.search(page_run["page"].read_text()).group(0)


def test_a_report_file_that_is_no_mapping_is_refused_naming_it(tmp_path):
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([{"summary": {}, "nodes": [], "run": {}}]))
    dest = tmp_path / "list.html"
    proc = playbook(
        "pinned.images.report_page",
        extra_vars={"cluster_report_file": str(listed), "cluster_report_html_file": str(dest)},
    )
    assert proc.returncode == 2
    assert f"The report in {listed} must be a mapping (summary, nodes, run), not a list." in proc.stdout
    assert not dest.exists()
