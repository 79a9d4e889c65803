# SPDX-License-Identifier: GPL-3.0-or-later
"""The prefetch and render playbooks through real `ansible-playbook`, on a lab of 3 control-plane and 3 worker
containerd nodes (local connection, each host with its own CRI socket, drop-in path and progress file).

The drop-in is forced on (`node_pin: true`) with `node_crio_reload: none`: containerd does not read it, and the
test checks what CRI-O would read.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import tomllib
import yaml

from fixtures.ansible_runs import playbook as ansible_playbook
from fixtures.ansible_runs import warnings_in
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set, role_pool
from support.gate_proxy import GateProxy
from support.lab import Lab, started_lab

pytestmark = pytest.mark.lab

CONTROL_PLANE = ["cp-0", "cp-1", "cp-2"]
WORKERS = ["worker-0", "worker-1", "worker-2"]
# Fast: control-plane pulls are serial anyway; workers pull two at a time, and the gate proxy proves it.
SPEED = {
    "node_progress_interval": 1,
    "node_control_plane_pull_pause": 0.2,
    "node_worker_concurrency": 2,
    "node_worker_pull_pause": 0.5,
}
PROGRESS_LINE = re.compile(r"\n[\w-]+: \d+/\d+ images, \d+\.\d+ GiB, \d+ s elapsed(, \d+ pulling[^\n]*)?\n")


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, report: Path | None):
        self.rc = proc.returncode
        self.output = proc.stdout + proc.stderr
        self.report = json.loads(report.read_text()) if report and report.exists() else None

    def nodes(self) -> dict:
        return {node["host"]: node for node in self.report["nodes"]}

    def recap(self) -> dict:
        """{host: {ok: n, changed: n, ...}} from PLAY RECAP."""
        found = {}
        for line in self.output.split("PLAY RECAP", 1)[1].splitlines():
            match = re.match(r"^(\S+)\s+:\s+(.*)$", line)
            if match:
                found[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
        return found


def playbook(name: str, inventories, extra: dict, tmp: Path, check: bool = False, report: bool = True) -> Run:
    report_file = tmp / f"report-{len(list(tmp.glob('report-*')))}.json"
    if report:
        extra = dict(extra, cluster_report_file=str(report_file))
    proc = ansible_playbook(f"pinned.images.{name}", inventories, extra, check=check, timeout=300)
    return Run(proc, report_file if report else None)


def dropin_images(lab: Lab, node: str) -> list | None:
    path = Path(lab.state["nodes"][node]["root"]).parent / "crio.conf.d" / "50-pinned-images"
    if not path.exists():
        return None
    return tomllib.loads(path.read_text())["crio"]["image"]["pinned_images"]


def pull_intervals(run: Run, hosts) -> list:
    """(started, finished, host, image) of every image the run pulled on `hosts`, by start time."""
    intervals = []
    for host in hosts:
        for image in run.nodes()[host]["images"]:
            if image["status"] == "pulled":
                intervals.append((image["started"], image["finished"], host, image["image"]))
    return sorted(intervals)


@pytest.fixture(scope="module")
def olab(tmp_path_factory):
    with started_lab(tmp_path_factory.mktemp("olab"), nodes=6, control_plane=3) as lab:
        yield lab


@pytest.fixture(scope="module")
def gate(olab):
    """Worker images behind a proxy that holds their pulls until every worker pulls two at once."""
    proxy = GateProxy(
        olab.state["registries"]["plain"]["host"], "orch-gate", quorum=len(WORKERS) * SPEED["node_worker_concurrency"]
    )
    for node in WORKERS:
        hosts = Path(olab.state["nodes"][node]["certs_d"]) / proxy.host / "hosts.toml"
        hosts.parent.mkdir(parents=True, exist_ok=True)
        hosts.write_text(
            'server = "http://%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n'
            % (proxy.host, proxy.host)
        )
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def work(olab, gate, tmp_path_factory):
    """Images, set files and inventories shared by the tests of this module."""
    tmp = tmp_path_factory.mktemp("orchestration")
    refs = [record.reference for record in olab.push_bulk(9, prefix="orch")]
    plain = olab.state["registries"]["plain"]["host"]
    gated = [record.reference.replace(plain, gate.host, 1) for record in olab.push_bulk(2, prefix="orch-gate")]
    wanted = {
        "master": refs[0:3],
        "worker": refs[3:7] + gated,
        "infra": refs[7:9],
    }
    documents = [
        pinned_image_set("master-images", wanted["master"], {ROLE: "master"}),
        pinned_image_set("worker-images", wanted["worker"], {ROLE: "worker"}),
        pinned_image_set("infra-images", wanted["infra"], {ROLE: "infra"}),
        role_pool("master", ["master"], "node-role.kubernetes.io/master"),
        role_pool("worker", ["worker"], "node-role.kubernetes.io/worker"),
        role_pool("infra", ["worker", "infra"], "node-role.kubernetes.io/infra"),
    ]
    sets = tmp / "sets"
    sets.mkdir()
    (sets / "cluster.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    inventory = olab.write_inventory(tmp / "lab.yml")
    # worker-2 is also in the infra pool.
    labels = tmp / "labels.yml"
    labels.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "workers": {
                            "hosts": {
                                "worker-2": {
                                    "cluster_node_labels": {
                                        "node-role.kubernetes.io/worker": "",
                                        "node-role.kubernetes.io/infra": "",
                                    }
                                }
                            }
                        }
                    }
                }
            }
        )
    )
    expected = {node: sorted(wanted["master"]) for node in CONTROL_PLANE}
    expected.update({node: sorted(wanted["worker"]) for node in WORKERS})
    expected["worker-2"] = sorted(wanted["worker"] + wanted["infra"])
    missing = "%s/orch/missing@sha256:%s" % (olab.state["registries"]["plain"]["host"], "0" * 64)
    # cp-1 also wants an image that does not exist.
    broken = tmp / "broken.yml"
    broken.write_text(
        yaml.safe_dump({"all": {"children": {"control_plane": {"hosts": {"cp-1": {"node_images": [missing]}}}}}})
    )
    return dict(
        tmp=tmp,
        sets=sets,
        inventory=inventory,
        labels=labels,
        broken=broken,
        expected=expected,
        missing=missing,
        wanted=wanted,
    )


@pytest.fixture(scope="module")
def check_run(work):
    """A --check run on the fresh lab; the first real run then proves it pulled nothing."""
    return playbook(
        "prefetch",
        [work["inventory"], work["labels"]],
        dict(SPEED, cluster_sets=[str(work["sets"])]),
        work["tmp"],
        check=True,
    )


@pytest.fixture(scope="module")
def first_run(work, check_run):
    return playbook(
        "prefetch", [work["inventory"], work["labels"]], dict(SPEED, cluster_sets=[str(work["sets"])]), work["tmp"]
    )


@pytest.fixture(scope="module")
def second_run(work, first_run):
    assert first_run.rc == 0, first_run.output
    return playbook(
        "prefetch", [work["inventory"], work["labels"]], dict(SPEED, cluster_sets=[str(work["sets"])]), work["tmp"]
    )


def test_the_lab_inventory_has_a_host_per_node_with_its_own_socket_and_paths(olab, work):
    inventory = yaml.safe_load(work["inventory"].read_text())["all"]
    assert inventory["vars"]["ansible_connection"] == "local"
    assert Path(inventory["vars"]["ansible_python_interpreter"]).exists()
    groups = inventory["children"]
    assert list(groups["control_plane"]["hosts"]) == CONTROL_PLANE
    assert list(groups["workers"]["hosts"]) == WORKERS
    for name, host in {**groups["control_plane"]["hosts"], **groups["workers"]["hosts"]}.items():
        assert host["node_cri_socket"] == olab.state["nodes"][name]["endpoint"]
        assert Path(host["node_dropin_path"]).parent.is_dir()
        assert host["node_dropin_path"].startswith(str(olab.path))
        assert host["node_progress_file"].startswith(str(olab.path))


def test_check_mode_lists_what_each_node_would_pull_and_changes_nothing(olab, work, check_run):
    assert check_run.rc == 0, check_run.output
    for host, expected in work["expected"].items():
        # "pulled" counts what would be pulled; nothing is present yet.
        assert re.search(r'"%s\s+check\s+%d\s+0\s+0\s' % (host, len(expected)), check_run.output), host
        assert dropin_images(olab, host) is None, host
    assert "check mode: nothing was pulled" in check_run.output
    assert check_run.report is None
    # Nothing was pulled: the first real run pulls every image (test_one_run_pulls_...).


def test_one_run_pulls_and_pins_each_nodes_images_and_prints_the_table(olab, work, first_run):
    assert first_run.rc == 0, first_run.output
    nodes = first_run.nodes()
    assert sorted(nodes) == sorted(CONTROL_PLANE + WORKERS)
    for host, expected in work["expected"].items():
        node = nodes[host]
        assert node["status"] == "ok", node
        assert node["pulled"] == len(expected) and node["present"] == 0 and node["failed"] == 0
        assert node["bytes"] > 0
        # The drop-in lists exactly the images of the node's pools.
        assert dropin_images(olab, host) == expected, host
    assert first_run.report["summary"]["pulled"] == sum(len(v) for v in work["expected"].values())
    # The table, and the progress lines of the background prefetch.
    header = re.search(r"node\s+status\s+pulled\s+present\s+failed\s+bytes\s+seconds", first_run.output)
    assert header, first_run.output
    # The last column: how the node pinned (the lab inventory forces the drop-in) and how many images its CRI
    # reports pinned: none, containerd 1.6 reads no drop-in.
    for host in work["expected"]:
        row = r'"%s\s+ok\s+\d+\s+0\s+0\s+[\d.]+ KiB\s+[\d.]+\s+dropin 0"' % host
        assert re.search(row, first_run.output), host
    assert PROGRESS_LINE.search(first_run.output), first_run.output


def test_control_plane_pulls_never_overlap_and_worker_pulls_do(first_run, gate):
    assert first_run.rc == 0, first_run.output
    control_plane = pull_intervals(first_run, CONTROL_PLANE)
    assert len(control_plane) == 9
    for before, after in zip(control_plane, control_plane[1:]):
        assert after[0] >= before[1], f"{after[2]} {after[3]} started before {before[2]} {before[3]} finished"
    # One node after the other, in inventory order.
    assert [host for _start, _end, host, _image in control_plane] == ["cp-0"] * 3 + ["cp-1"] * 3 + ["cp-2"] * 3

    # Every worker had both of its pull slots on a gated image at the same moment: the proxy saw all six pulls
    # waiting at once. Timestamps agree: each gated pull started before any of them finished.
    assert gate.opened_by_quorum, f"at most {gate.most_waiting} of {gate.quorum} gated pulls were in flight together"
    gated = [pull for pull in pull_intervals(first_run, WORKERS) if "/orch-gate/" in pull[3]]
    assert sorted(host for _start, _end, host, _image in gated) == sorted(WORKERS * 2)
    assert max(start for start, *_rest in gated) < min(end for _start, end, *_rest in gated), gated
    # Workers ran after the control plane (the default order).
    assert min(start for start, *_rest in pull_intervals(first_run, WORKERS)) > control_plane[-1][1]


def test_a_clean_run_prints_no_warning(check_run, first_run, second_run):
    # A phase without nodes or no failed node must not warn about a host pattern, nor anything else.
    for run in (check_run, first_run, second_run):
        assert run.rc == 0, run.output
        assert warnings_in(run.output) == [], run.output


def test_a_second_run_changes_nothing_on_any_node(work, second_run):
    assert second_run.rc == 0, second_run.output
    recap = second_run.recap()
    for host in CONTROL_PLANE + WORKERS:
        assert recap[host]["changed"] == 0, (host, recap)
        assert recap[host]["failed"] == 0
    nodes = second_run.nodes()
    for host, expected in work["expected"].items():
        assert nodes[host]["pulled"] == 0 and nodes[host]["present"] == len(expected)
    assert second_run.report["summary"]["failed_nodes"] == []


def test_a_failed_node_does_not_stop_the_others_and_each_node_gets_its_status(olab, work, second_run, fake_apiserver):
    fake = fake_apiserver
    roles = {
        "cp-0": "master",
        "cp-1": "master",
        "cp-2": "master",
        "worker-0": "worker",
        "worker-1": "worker",
        "worker-9": "worker",
    }
    # worker-2 is not in the cluster (left out); worker-9 is not in the inventory (ignored).
    for name, role in roles.items():
        fake.add(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {f"node-role.kubernetes.io/{role}": ""}},
            }
        )
    fake.add(
        dict(
            pinned_image_set("master-images", work["wanted"]["master"], {ROLE: "master"}),
            metadata={"name": "master-images", "labels": {ROLE: "master"}, "generation": 3},
        )
    )
    fake.add(pinned_image_set("worker-images", work["wanted"]["worker"], {ROLE: "worker"}))
    extra = dict(
        SPEED,
        cluster_read_cluster=True,
        cluster_report_to_cluster=True,
        cluster_k8s_auth={"kubeconfig": str(fake.kubeconfig_path)},
    )

    run = playbook("prefetch", [work["inventory"], work["broken"]], extra, work["tmp"])
    assert run.rc == 2, run.output
    nodes = run.nodes()
    assert sorted(nodes) == ["cp-0", "cp-1", "cp-2", "worker-0", "worker-1"]
    assert nodes["cp-1"]["status"] == "failed"
    assert work["missing"] in nodes["cp-1"]["error"]
    for host in ("cp-0", "cp-2", "worker-0", "worker-1"):
        assert nodes[host]["status"] == "ok", nodes[host]
    assert "worker-2" in run.output and "not nodes of the cluster" in run.output
    assert run.recap()["cp-1"]["failed"] == 1

    def status(node):
        annotations = fake.get("Node", node)["metadata"].get("annotations") or {}
        value = json.loads(annotations["pinned.images/pinned-image-sets"])
        return {i["name"]: i for i in value["pinnedImageSets"]}, {c["type"]: c for c in value["conditions"]}

    sets, conditions = status("cp-0")
    assert sets == {"master-images": {"name": "master-images", "desiredGeneration": 3, "currentGeneration": 3}}
    assert conditions["PinnedImageSetsDegraded"]["status"] == "False"
    assert conditions["PinnedImageSetsProgressing"]["status"] == "False"
    sets, conditions = status("cp-1")
    assert sets["master-images"]["currentGeneration"] == 3
    assert sets["pinned-images"]["lastFailedGeneration"] == 1
    assert work["missing"] in sets["pinned-images"]["lastFailedGenerationError"]
    assert "currentGeneration" not in sets["pinned-images"]
    assert conditions["PinnedImageSetsDegraded"]["status"] == "True"
    assert conditions["PinnedImageSetsDegraded"]["reason"] == "PrefetchFailed"
    sets, _conditions = status("worker-0")
    assert sets["worker-images"]["currentGeneration"] == sets["worker-images"]["desiredGeneration"] == 1
    assert "annotations" not in fake.get("Node", "worker-9")["metadata"]

    # While a node's prefetch ran, its annotation read as progressing, never as an error.
    patches = [r for r in fake.requests if r.method == "PATCH" and r.path == "/api/v1/nodes/cp-1"]
    first = json.loads(patches[0].body["metadata"]["annotations"]["pinned.images/pinned-image-sets"])
    conditions = {c["type"]: c for c in first["conditions"]}
    assert conditions["PinnedImageSetsProgressing"]["status"] == "True"
    assert conditions["PinnedImageSetsProgressing"]["reason"] == "ImagePrefetch"
    assert conditions["PinnedImageSetsDegraded"]["status"] == "False"
    assert all("lastFailedGeneration" not in i and "currentGeneration" not in i for i in first["pinnedImageSets"])
    # Two writes: progressing at the start, the result when the node was done. The report found nothing to change.
    assert len(patches) == 2

    # Each control-plane node's result was in the cluster before the next node started.
    for done, following in zip(CONTROL_PLANE, CONTROL_PLANE[1:]):
        last = [r for r in fake.requests if r.method == "PATCH" and r.path == f"/api/v1/nodes/{done}"][-1]
        result = json.loads(last.body["metadata"]["annotations"]["pinned.images/pinned-image-sets"])
        assert {c["type"]: c["status"] for c in result["conditions"]}["PinnedImageSetsProgressing"] == "False"
        assert last.received < nodes[following]["started"], (done, following)


def test_the_failure_percentage_stops_the_run_and_the_order_is_a_variable(olab, work, second_run):
    extra = dict(
        SPEED,
        cluster_sets=[str(work["sets"])],
        cluster_order=["workers", "control_plane"],
        cluster_control_plane_max_fail_percentage=0,
    )
    run = playbook("prefetch", [work["inventory"], work["labels"], work["broken"]], extra, work["tmp"])
    assert run.rc == 2, run.output
    nodes = run.nodes()
    assert [nodes[h]["status"] for h in WORKERS + CONTROL_PLANE] == ["ok"] * 4 + ["failed", "not_run"]
    assert "not attempted" in nodes["cp-2"]["error"]
    # Workers first this time.
    assert max(nodes[h]["finished"] for h in WORKERS) < nodes["cp-0"]["started"]
    # The table names the failure.
    assert re.search(r'"cp-1\s+failed\s+0\s+3\s+1\s', run.output), run.output


def test_render_is_byte_stable_and_its_check_mode_fails_on_drift(work):
    tmp = work["tmp"]
    dest = tmp / "gitops"
    args = dict(cluster_sets=[str(work["sets"])], cluster_render_dest=str(dest))

    run = playbook("render", [], args, tmp, report=False)
    assert run.rc == 0, run.output
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*.yaml"))
    assert files == [
        "machineconfigs/99-infra-pinned-images.yaml",
        "machineconfigs/99-master-pinned-images.yaml",
        "machineconfigs/99-worker-pinned-images.yaml",
        "machineconfigs/machineconfiguration-cluster-pinned-images.yaml",
        "pinnedimagesets/infra-images.yaml",
        "pinnedimagesets/master-images.yaml",
        "pinnedimagesets/worker-images.yaml",
    ]
    rendered = {name: (dest / name).read_bytes() for name in files}
    config = yaml.safe_load(rendered["machineconfigs/99-worker-pinned-images.yaml"])
    assert config["kind"] == "MachineConfig" and config["metadata"]["labels"][ROLE] == "worker"

    # Byte-stable: rendering again would write the same bytes, so the check finds no drift.
    check = playbook("render", [], args, tmp, check=True, report=False)
    assert check.rc == 0, check.output
    assert check.recap()["localhost"]["changed"] == 0, check.output

    edited = dest / "pinnedimagesets/worker-images.yaml"
    edited.write_text(edited.read_text().replace("worker-images", "worker-images-edited", 1))
    # A MachineConfig the render wrote (marked) and no longer writes goes; a user's file stays.
    old = dest / "machineconfigs/99-old-pinned-images.yaml"
    old.write_bytes(rendered["machineconfigs/99-infra-pinned-images.yaml"].replace(b"infra", b"old"))
    mine = dest / "machineconfigs/99-master-ssh.yaml"
    mine.write_text("kind: MachineConfig\nmetadata: {name: 99-master-ssh}\n")
    check = playbook("render", [], args, tmp, check=True, report=False)
    assert check.rc != 0
    assert "differs from what the render writes" in check.output
    assert str(edited) in check.output and str(old) in check.output
    assert f"not ours, left: {mine}" in check.output
    assert "worker-images-edited" in edited.read_text()

    fixed = playbook("render", [], args, tmp, report=False)
    assert fixed.rc == 0, fixed.output
    assert {name: (dest / name).read_bytes() for name in files} == rendered
    assert not old.exists() and mine.exists()
    for run in (check, fixed):
        assert warnings_in(run.output) == [], run.output
