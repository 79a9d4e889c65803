# SPDX-License-Identifier: GPL-3.0-or-later
"""The pinned.images.audit playbook against real runtimes (CRI-O 1.33, containerd 1.7 and 2.1, one lab node each,
in one inventory): a clean audit, then each drift event of issue 32 on the runtimes where it applies. For each: what
the audit reports (the node and the images, rc 2), the prefetch playbook's rerun, and the audit afterwards. The
nodes are prepared once for the module (one prefetch); every event ends with the fleet clean again.

Measured here and written down in docs/keeping-pins.md (the drift table): a restart or a kill of the runtime keeps
every pin on these three (containerd keeps its labels in its metadata store, CRI-O reads its drop-ins at start),
and so does CRI-O 1.33 started with its clean_shutdown_file missing (test_crio_unclean_shutdown...)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import PIN_KEYS
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import render_pinned_images
from fixtures.ansible_runs import ansible_env, playbook, remove_all_images
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set, role_pool
from fixtures.reference import reference_path

AUDIT_RUNTIMES = ("containerd-1.7", "containerd-2.1", "cri-o")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "keeping-pins.md"
COMMAND = "ansible-playbook -i inventory pinned.images.audit -e @audit-vars.yml"
DRIFTED = 2  # ansible-playbook's rc when a host failed


class Fleet:
    """The module's three nodes, their inventory and sets, and the runs of the two playbooks."""

    def __init__(self, lab, work: Path, entries: dict) -> None:
        self.lab, self.work, self.entries = lab, work, entries
        self.inventory = lab.write_inventory(work / "lab.yml", nodes=[e["name"] for e in entries.values()])
        images = lab.images()
        self.wanted = [images["plain-small"].reference, images["auth-small"].reference]
        self.other = images["plain-shared-a"].reference
        self.sets = work / "sets.yaml"
        self.sets.write_text(
            yaml.safe_dump_all(
                [
                    pinned_image_set("worker-images", self.wanted, {ROLE: "worker"}),
                    role_pool("worker", ["worker"], "node-role.kubernetes.io/worker"),
                ]
            )
        )
        self.runs = 0

    def node(self, runtime: str) -> dict:
        return self.entries[runtime]

    def prefetch(self, **extra):
        extra = dict(extra, cluster_sets=[str(self.sets)])
        return playbook("pinned.images.prefetch", self.inventory, extra, timeout=600)

    def audit(self) -> dict:
        """One audit run: its process, rows by node, the JUnit tree and the metrics text."""
        self.runs += 1
        out = self.work / f"audit-{self.runs}"
        out.mkdir()
        extra = {
            "cluster_sets": [str(self.sets)],
            "cluster_report_file": str(out / "audit.json"),
            "cluster_report_junit": str(out / "audit.xml"),
            "cluster_report_metrics": str(out / "pinned_images.prom"),
        }
        proc = playbook("pinned.images.audit", self.inventory, extra, timeout=600)
        report = json.loads((out / "audit.json").read_text())
        by_runtime = {rt: e["name"] for rt, e in self.entries.items()}
        rows = {row["host"]: row for row in report["nodes"]}
        return dict(
            proc=proc,
            output=proc.stdout + proc.stderr,
            rows={rt: rows[name] for rt, name in by_runtime.items()},
            junit=ET.parse(out / "audit.xml").getroot(),
            metrics=(out / "pinned_images.prom").read_text(),
            page=(out / "audit.html").read_text(),
            dir=out,
        )

    def assert_clean(self) -> dict:
        run = self.audit()
        assert run["proc"].returncode == 0, run["output"]
        assert {rt: row["status"] for rt, row in run["rows"].items()} == dict.fromkeys(self.entries, "clean")
        for row in run["rows"].values():
            assert sorted(row["pinned"]) == sorted(self.wanted), row
        return run


@pytest.fixture(scope="module")
def fleet(lab, tmp_path_factory):
    reference_path("cri-o")  # the skip without the CRI-O reference directory
    entries = {runtime: lab.runtime_node(runtime) for runtime in AUDIT_RUNTIMES}
    for entry in entries.values():
        remove_all_images(entry["endpoint"])
    fleet = Fleet(lab, tmp_path_factory.mktemp("audit"), entries)
    # The prefetch writes the same two files as the audit.
    fleet.prefetch_files = dict(junit=fleet.work / "prefetch.xml", metrics=fleet.work / "prefetch.prom")
    files = {f"cluster_report_{kind}": str(path) for kind, path in fleet.prefetch_files.items()}
    proc = fleet.prefetch(**files)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield fleet
    for entry in entries.values():
        remove_all_images(entry["endpoint"])


def crio_dropin(fleet) -> Path:
    return Path(fleet.node("cri-o")["dropin_dir"]) / "50-pinned-images"


def drifted(run, runtime, kind, images):
    """The node of ``runtime`` drifted with ``kind`` over ``images``; the table, JUnit and metrics name it."""
    row = run["rows"][runtime]
    assert row["status"] == "drifted", row
    assert [(d["kind"], sorted(d["images"])) for d in row["drift"]] == [(kind, sorted(images))], row["drift"]
    host = row["host"]
    assert f"{host}: {kind}: " in run["output"]
    cases = {case.get("name"): case for case in run["junit"].iter("testcase")}
    assert cases[host].find("failure") is not None
    assert f'pinned_images_node_failed{{node="{host}",run="audit"}} 1' in run["metrics"]


def test_the_prefetch_writes_its_junit_and_metrics_files(fleet):
    suite = ET.parse(fleet.prefetch_files["junit"]).getroot().find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("pinned.images.prefetch", "3", "0")
    metrics = fleet.prefetch_files["metrics"].read_text()
    for entry in fleet.entries.values():
        assert f'pinned_images_node_pinned{{node="{entry["name"]}",run="prefetch"}} 2' in metrics
        assert f'pinned_images_node_failed{{node="{entry["name"]}",run="prefetch"}} 0' in metrics


def test_a_clean_fleet_audits_clean_with_its_files(fleet):
    run = fleet.assert_clean()
    # A clean audit is silent: no warning of a group that no node joined.
    assert "[WARNING]" not in run["output"] and "[DEPRECATION WARNING]" not in run["output"], run["output"]
    suite = run["junit"].find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("3", "0")
    for row in run["rows"].values():
        host = row["host"]
        assert f'pinned_images_node_pinned{{node="{host}",run="audit"}} 2' in run["metrics"]
        assert f'pinned_images_node_unpinned{{node="{host}",run="audit"}} 0' in run["metrics"]
    crio = run["rows"]["cri-o"]["crio"]
    assert crio["effective_from"] == str(crio_dropin(fleet)) and crio["not_effective"] == []
    assert run["rows"]["containerd-2.1"]["containerd"]["unlabelled"] == []
    assert "pinned.images audit: 3 nodes, 0 drifted or failed" in run["page"]
    # The samples docs/keeping-pins.md shows come from a run like this one.
    keep_samples(run, "clean")


def keep_text(name, text):
    """A file for docs/keeping-pins.md, when PINNED_IMAGES_AUDIT_SAMPLES names a directory."""
    if os.environ.get("PINNED_IMAGES_AUDIT_SAMPLES"):
        (Path(os.environ["PINNED_IMAGES_AUDIT_SAMPLES"]) / name).write_text(text)


def keep_samples(run, prefix):
    """The JUnit and metrics files of ``run`` for docs/keeping-pins.md, when PINNED_IMAGES_AUDIT_SAMPLES names a
    directory."""
    for name in ("audit.xml", "pinned_images.prom"):
        keep_text(f"{prefix}-{name}", (run["dir"] / name).read_text())


def metric_names(text):
    return {line.split("{")[0] for line in text.splitlines() if line and not line.startswith("#")}


def test_the_documented_commands_run_as_written(fleet, tmp_path):
    """docs/keeping-pins.md: its audit-vars.yml, its command, the cron line (in a directory of the test instead of
    /srv/pinned-images) and the pipeline job's script; and its sample files are what the audit writes."""
    text = DOCS.read_text()
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, re.S)
    variables = next(body for kind, body in blocks if kind == "yaml" and body.startswith("cluster_sets:"))
    work = tmp_path / "pinned-images"
    (work / "sets").mkdir(parents=True)
    (work / "out").mkdir()
    shutil.copy(fleet.sets, work / "sets" / "sets.yaml")
    shutil.copy(fleet.inventory, work / "inventory")
    (work / "audit-vars.yml").write_text(variables)
    assert any(body.strip() == COMMAND for kind, body in blocks if kind == "")
    cron = next(body.strip() for kind, body in blocks if body.startswith("0 2 * * * "))
    job = yaml.safe_load(next(body for kind, body in blocks if body.startswith("audit-pins:")))
    assert (
        job["audit-pins"]["script"] == [COMMAND]
        and job["audit-pins"]["artifacts"]["reports"]["junit"] == "out/audit.xml"
    )
    shell = cron.split(" ", 5)[5].replace("/srv/pinned-images", str(work))
    proc = subprocess.run(
        ["bash", "-c", shell], env=ansible_env(), capture_output=True, text=True, timeout=600, check=False
    )
    log = (work / "out" / "audit.log").read_text()
    assert proc.returncode == 0, log
    report = json.loads((work / "out" / "audit.json").read_text())
    assert report["summary"]["clean"] == 3 and "pinned.images audit" in (work / "out" / "audit.html").read_text()
    written = ET.parse(work / "out" / "audit.xml").getroot()
    assert written.find("testsuite").get("tests") == "3"
    # The samples the page shows parse as what the audit writes: the same suite and gauges.
    sample_xml = next(body for kind, body in blocks if kind == "xml")
    assert ET.fromstring(sample_xml).find("testsuite").get("name") == written.find("testsuite").get("name")
    sample_metrics = next(body for kind, body in blocks if body.startswith("# HELP pinned_images_node_wanted"))
    assert metric_names(sample_metrics) == metric_names((work / "out" / "pinned_images.prom").read_text())


def cri_pinned(entry, images) -> dict:
    with CriClient(entry["endpoint"]) as client:
        return {name: (client.image_status(name) or {}).get("pinned") for name in images}


@pytest.mark.parametrize("kill", [False, True], ids=["restarted", "killed"])
def test_a_runtime_restart_or_kill_keeps_every_pin(fleet, kill):
    for entry in fleet.entries.values():
        fleet.lab.stop_node(entry["name"], kill=kill)
        fleet.lab.start_node(entry["name"])
    fleet.assert_clean()


def test_crio_unclean_shutdown_keeps_its_images_and_pins(fleet):
    entry = fleet.node("cri-o")
    marker = Path(entry["root"]) / "clean.shutdown"
    fleet.lab.stop_node(entry["name"])
    # A clean stop leaves the marker; its absence at the next start is what CRI-O takes for an unclean shutdown.
    assert marker.exists()
    marker.unlink()
    log = Path(entry["log"])
    before = len(log.read_text(errors="replace"))
    fleet.lab.start_node(entry["name"])
    started = log.read_text(errors="replace")[before:]
    # Its configuration dump names clean_shutdown_file too; the other lines are what the start did about it.
    said = [
        line
        for line in started.splitlines()
        if re.search(r"shutdown|repair|wip|corrupt", line, re.I) and "configuration" not in line
    ]
    keep_text("crio-unclean-start.log", "\n".join(said) + "\n")
    with CriClient(entry["endpoint"]) as client:
        assert sorted(n for i in client.list_images() for n in i["repo_digests"]) == sorted(fleet.wanted), said
    assert cri_pinned(entry, fleet.wanted) == dict.fromkeys(fleet.wanted, True), said
    fleet.assert_clean()


def heal(fleet):
    proc = fleet.prefetch()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return fleet.assert_clean()


def test_an_image_removed_through_cri_is_missing_then_pulled_again(fleet):
    gone = fleet.wanted[0]
    for entry in fleet.entries.values():
        with CriClient(entry["endpoint"]) as client:
            client.remove_image(gone)
    run = fleet.audit()
    assert run["proc"].returncode == DRIFTED
    for runtime in fleet.entries:
        drifted(run, runtime, "missing", [gone])
    keep_samples(run, "missing")
    heal(fleet)


@pytest.mark.parametrize("runtime", ["containerd-1.7", "containerd-2.1"])
def test_a_record_without_the_label_is_unlabelled_then_labelled_again(fleet, runtime):
    entry = fleet.node(runtime)
    image = fleet.wanted[1]
    with ContainerdClient(entry["endpoint"]) as client:
        status = client.image_status(image)
        names = {status["id"], *status["repo_tags"], *status["repo_digests"]}
        for record in client.list_records():
            if record["name"] in names:
                client.update_labels(record, {}, PIN_KEYS)
    run = fleet.audit()
    assert run["proc"].returncode == DRIFTED
    drifted(run, runtime, "unlabelled", [image])
    assert [rt for rt, row in run["rows"].items() if row["status"] != "clean"] == [runtime]
    heal(fleet)


def test_a_later_drop_in_is_named_and_never_edited(fleet):
    entry = fleet.node("cri-o")
    later = Path(entry["dropin_dir"]) / "99-other"
    later.write_text(render_pinned_images([fleet.other]))
    fleet.lab.reload_node(entry["name"])
    try:
        run = fleet.audit()
        assert run["proc"].returncode == DRIFTED
        drifted(run, "cri-o", "overridden", fleet.wanted)
        assert str(later) in run["rows"]["cri-o"]["error"]
        rerun = fleet.prefetch()
        # The rerun fails naming the file, and leaves it as it was.
        assert rerun.returncode != 0 and str(later) in rerun.stdout + rerun.stderr, rerun.stdout
        assert later.read_text() == render_pinned_images([fleet.other])
    finally:
        later.unlink()
        fleet.lab.reload_node(entry["name"])
    fleet.assert_clean()


def test_a_deleted_drop_in_is_named_then_written_again(fleet):
    entry = fleet.node("cri-o")
    crio_dropin(fleet).unlink()
    fleet.lab.reload_node(entry["name"])
    run = fleet.audit()
    assert run["proc"].returncode == DRIFTED
    drifted(run, "cri-o", "dropin", fleet.wanted)
    assert "does not exist" in run["rows"]["cri-o"]["error"]
    heal(fleet)
    assert crio_dropin(fleet).exists()


def test_a_reload_that_failed_is_not_applied(fleet):
    entry = fleet.node("cri-o")
    dropin = crio_dropin(fleet)
    text = dropin.read_text()
    # The state a failed reload leaves: the drop-in as wanted, CRI-O still on its old list (here: none).
    dropin.unlink()
    fleet.lab.reload_node(entry["name"])
    dropin.write_text(text)
    run = fleet.audit()
    assert run["proc"].returncode == DRIFTED
    drifted(run, "cri-o", "not_applied", fleet.wanted)
    keep_samples(run, "not-applied")
    # The rerun reloads CRI-O once when the drop-in is as wanted but CRI disagrees, then verifies.
    reloads = fleet.lab.reloads(entry["name"])
    heal(fleet)
    assert fleet.lab.reloads(entry["name"]) > reloads
