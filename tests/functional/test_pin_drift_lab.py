# SPDX-License-Identifier: GPL-3.0-or-later
"""Pins that drift after the prefetch, on CRI-O 1.33, containerd 1.7 and containerd 2.1: a pin the node cannot apply
fails the prefetch playbook, naming the node and the cause; a failed reload is healed by a rerun (the playbook's and
the module's), which CRI proves (every wanted image present and pinned). The other heals (a removed image, a lost
label, a deleted drop-in) are proven by test_audit_lab.py: its audit names each drift, the rerun heals it, and the
audit afterwards reads every wanted image present and pinned through CRI. One prefetch of the three nodes (``fleet``) is shared by the module's tests;
each test leaves the fleet as it found it: prefetched and pinned. Without the reference directory the CRI-O cases
skip with the one line naming PINNED_IMAGES_REFERENCE_DIR."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import OWNER_LABEL_KEY, PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import wait_reported
from fixtures.ansible_runs import adhoc, playbook, remove_all_images
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set, role_pool
from fixtures.reference import reference_path
from support.node import pin_args

pytestmark = pytest.mark.lab
CRIO, CONTAINERD_17, CONTAINERD_21 = "cri-o", "containerd-1.7", "containerd-2.1"
CONTAINERDS = (CONTAINERD_17, CONTAINERD_21)
# The containerd images API the label pin reads and writes; CRI keeps serving without it.
IMAGES_API = "io.containerd.grpc.v1.images"


class Fleet:
    """The lab's node of each runtime, their inventory and sets, and the prefetch playbook run on them."""

    def __init__(self, lab, tmp_path: Path, with_crio: bool) -> None:
        self.lab = lab
        self.runtimes = ([CRIO] if with_crio else []) + list(CONTAINERDS)
        self.nodes = {runtime: lab.runtime_node(runtime) for runtime in self.runtimes}
        images = lab.images()
        self.images = [images[name].reference for name in ("plain-small", "plain-shared-a")]
        self.other = images["plain-shared-b"].reference
        self.tmp_path = tmp_path
        self.sets = tmp_path / "sets.yaml"
        self.sets.write_text(
            yaml.safe_dump_all(
                [
                    pinned_image_set("worker-images", self.images, {ROLE: "worker"}),
                    role_pool("worker", ["worker"], "node-role.kubernetes.io/worker"),
                ]
            )
        )
        self.report = tmp_path / "report.json"

    def node(self, runtime: str) -> dict:
        if runtime not in self.nodes:
            reference_path("cri-o")
        return self.nodes[runtime]

    def prefetch(self, *runtimes: str) -> tuple:
        """The prefetch playbook on the nodes of ``runtimes`` (default: every node): (its process, its JSON
        report's row per node name)."""
        names = [self.node(runtime)["name"] for runtime in runtimes or self.runtimes]
        inventory = self.lab.write_inventory(self.tmp_path / ("-".join(names) + ".yml"), nodes=names)
        extra = dict(cluster_sets=[str(self.sets)], cluster_report_file=str(self.report), node_progress_interval=1)
        proc = playbook("pinned.images.prefetch", inventory, extra, timeout=900)
        rows = {row["host"]: row for row in json.loads(self.report.read_text())["nodes"]}
        return proc, rows

    def cri(self, runtime: str) -> dict:
        """Each wanted image -> CRI's ``pinned``, None when the node lacks it."""
        with CriClient(self.node(runtime)["endpoint"]) as client:
            statuses = {image: client.image_status(image) for image in self.images}
        return {image: None if status is None else status["pinned"] for image, status in statuses.items()}

    def healed(self, *runtimes: str) -> None:
        for runtime in runtimes or self.runtimes:
            assert self.cri(runtime) == {image: True for image in self.images}, runtime

    def dropin(self) -> Path:
        return Path(self.node(CRIO)["dropin_dir"]) / "50-pinned-images"

    def unlabel(self, runtime: str) -> None:
        """Remove the pin label from every record of the node (as k3s's re-import does), until CRI agrees."""
        with ContainerdClient(self.node(runtime)["endpoint"]) as client:
            for record in client.list_records():
                if PIN_LABEL_KEY in record["labels"]:
                    client.update_labels(record, {}, [PIN_LABEL_KEY, OWNER_LABEL_KEY])
            wait_reported(client, {image: False for image in self.images}, 10)


def output(proc) -> str:
    # Ansible wraps long lines to the terminal's width.
    return " ".join((proc.stdout + proc.stderr).split())


@pytest.fixture(scope="module")
def fleet(lab, tmp_path_factory):
    try:
        reference_path("cri-o")
        with_crio = True
    except pytest.skip.Exception:
        with_crio = False
    fleet = Fleet(lab, tmp_path_factory.mktemp("drift"), with_crio)
    if with_crio:
        for dropin in Path(fleet.nodes[CRIO]["dropin_dir"]).iterdir():
            dropin.unlink()
        lab.reload_node(fleet.nodes[CRIO]["name"])
    for node in fleet.nodes.values():
        remove_all_images(node["endpoint"])
    proc, _rows = fleet.prefetch()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fleet.healed()
    return fleet


def test_a_later_dropin_of_another_writer_fails_the_playbook_naming_the_node_and_the_file(fleet):
    node = fleet.node(CRIO)
    later = Path(node["dropin_dir"]) / "99-other"
    text = '[crio.image]\npinned_images = ["%s"]\n' % fleet.other
    later.write_text(text)
    try:
        fleet.lab.reload_node(node["name"])
        assert fleet.cri(CRIO) == {image: False for image in fleet.images}
        for _rerun in range(2):
            proc, rows = fleet.prefetch(CRIO)
            assert proc.returncode != 0, proc.stdout
            assert re.search(r"fatal: \[rt-cri-o\]: FAILED! .*%s" % re.escape(str(later)), output(proc)), output(proc)
            row = rows[node["name"]]
            assert (
                row["status"] == "failed" and str(later) in row["error"] and "replaces the whole list" in row["error"]
            )
            # Another writer's file is never edited.
            assert later.read_text() == text
    finally:
        later.unlink()
    fleet.lab.reload_node(node["name"])
    fleet.healed(CRIO)


def test_containerd_pins_that_cannot_be_set_fail_the_playbook_naming_the_node_and_the_cause(fleet):
    """The labels are gone and containerd serves CRI but not its images API (a config that disables it): the pin
    cannot be set again, so each node fails with the cause; once the API is back, the rerun labels the records."""
    configs = {}
    for runtime in CONTAINERDS:
        fleet.unlabel(runtime)
        node = fleet.node(runtime)
        config = Path(node["config"])
        configs[runtime] = config.read_text()
        disabled = re.sub(
            r"^disabled_plugins = \[", f'disabled_plugins = ["{IMAGES_API}", ', configs[runtime], count=1, flags=re.M
        )
        assert disabled != configs[runtime]
        config.write_text(disabled)
        fleet.lab.restart_node(node["name"])
    try:
        proc, rows = fleet.prefetch(*CONTAINERDS)
        assert proc.returncode != 0, proc.stdout
        for runtime in CONTAINERDS:
            name = fleet.nodes[runtime]["name"]
            assert re.search(r"fatal: \[%s\]: FAILED! .*cannot pin on containerd" % name, output(proc)), output(proc)
            assert rows[name]["status"] == "failed" and "cannot pin on containerd" in rows[name]["error"], rows[name]
            assert rows[name]["problems"], rows[name]
            assert fleet.cri(runtime) == {image: False for image in fleet.images}
    finally:
        for runtime in CONTAINERDS:
            Path(fleet.node(runtime)["config"]).write_text(configs[runtime])
            fleet.lab.restart_node(fleet.node(runtime)["name"])
    proc, rows = fleet.prefetch(*CONTAINERDS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fleet.healed()


def stale_pid_file(fleet):
    """Delete the drop-in and reload CRI-O (CRI: nothing pinned), then make its pid file stale: the next reload
    fails. Returns the pid file's own text."""
    node = fleet.node(CRIO)
    fleet.dropin().unlink()
    fleet.lab.reload_node(node["name"])
    pid_file = Path(node["pid_file"])
    pid = pid_file.read_text()
    pid_file.write_text("2147483646\n")  # no such process
    return pid


def test_a_rerun_of_the_playbook_reloads_crio_once_after_a_failed_reload(fleet):
    """The drop-in is written while the pid file is stale, so CRI-O is not reloaded; a rerun says so while it stays
    stale. Once it is right, one rerun reloads once and CRI reports every image pinned."""
    node, dropin = fleet.node(CRIO), fleet.dropin()
    pid = stale_pid_file(fleet)
    try:
        proc, rows = fleet.prefetch(CRIO)
        assert proc.returncode != 0 and "was written, but CRI-O was not reloaded" in output(proc), output(proc)
        proc, rows = fleet.prefetch(CRIO)
        assert proc.returncode != 0, proc.stdout
        error = rows[node["name"]]["error"]
        assert f"{dropin} is as wanted but CRI-O does not apply it, and it was not reloaded" in error, error
        assert "No such process" in error and fleet.cri(CRIO) == {image: False for image in fleet.images}
    finally:
        Path(node["pid_file"]).write_text(pid)
    reloads = fleet.lab.reloads(node["name"])
    proc, rows = fleet.prefetch(CRIO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows[node["name"]]["changed"] and int(rows[node["name"]]["pulled"]) == 0
    assert fleet.lab.reloads(node["name"]) == reloads + 1
    fleet.healed()


def test_a_rerun_of_the_prefetch_module_reloads_crio_once_after_a_failed_reload(fleet):
    node, dropin = fleet.node(CRIO), fleet.dropin()
    args = dict(images=fleet.images, min_free="64Mi", **pin_args(node))
    pid = stale_pid_file(fleet)
    try:
        rc, result, out = adhoc("pinned.images.prefetch", args)
        assert rc != 0 and "was written, but CRI-O was not reloaded" in result["msg"], out
        rc, result, out = adhoc("pinned.images.prefetch", args)
        assert rc != 0 and f"{dropin} is as wanted but CRI-O does not apply it" in result["msg"], out
        assert result["pin"]["error"] and not result["pin"]["changed"]
    finally:
        Path(node["pid_file"]).write_text(pid)
    reloads = fleet.lab.reloads(node["name"])
    rc, result, out = adhoc("pinned.images.prefetch", args)
    assert rc == 0, out
    pin = result["pin"]
    assert (pin["changed"], pin["reloaded"], pin["cri_pinned"]) == (True, True, dict.fromkeys(fleet.images, True))
    assert "was as wanted but CRI-O did not apply it" in " ".join(out.split())
    assert fleet.lab.reloads(node["name"]) == reloads + 1
    fleet.healed(CRIO)
    # Healed: the next run changes nothing and sends no SIGHUP.
    rc, result, out = adhoc("pinned.images.prefetch", args)
    assert rc == 0 and not result["changed"] and fleet.lab.reloads(node["name"]) == reloads + 1, out
