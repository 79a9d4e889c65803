# SPDX-License-Identifier: GPL-3.0-or-later
"""The prefetch playbook in pod mode (``cluster_node_access=pod``): a kubeconfig only, no inventory of the nodes,
which come from the fake API server's Node objects; each node is reached through its privileged pod with the real
``kubernetes.core.kubectl`` connection plugin and the real kubectl 1.32 (``.build/trixie``), whose ``pods/exec``
the fake API server runs on this machine.

Each fake pod's process gets the host root of its lab node: a private mount namespace (``unshare -m``) in which the
node's own tree is bind-mounted at the one ``host_root`` all pods share, as every real pod has the host's ``/`` at
``/host``. The tree holds the node's paths where a real node has them (the CRI socket, CRI-O's drop-in directory,
pid file and registries.conf), as symlinks to the lab node's, and the lab directory, so the paths CRI Status and
containerd's config name resolve too: the modules find the node only through ``host_root``. The pods' Python is
Debian's, without grpcio and protobuf: the node role gives them their private copy through the pod, by default on
the host (the node's tree), where the next run's new pods find it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.ansible_runs import NO_PRIVATE_PYTHON, VENV_BIN, ansible_env, playbook_command
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set
from fixtures.reference import reference_path
from support.apiserver.api import FakeApiServer
from support.apiserver.pods import CONTAINER_PATH, PodBehaviour
from support.lab import started_lab

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
KUBECTL_DIR = REPO / ".build" / "trixie" / "kubectl" / "usr" / "bin"
SYSTEM_PYTHON = "/usr/bin/python3"
RUNTIMES = {"cp-0": "containerd-1.7", "worker-0": "cri-o"}
ROLES = {"cp-0": "master", "worker-0": "worker"}
# Pod mode's own runs are timed by the tests; SPEED keeps the progress lines few.
SPEED = {
    "node_progress_interval": 1,
    "node_control_plane_pull_pause": 0.0,
    "node_prefetch_options": {"min_free": "64Mi"},
}


def node_tree(lab, name: str, root: Path) -> Path:
    """The host root of lab node ``name``: its paths where a real node has them, and the lab directory."""
    node = lab.state["nodes"][name]
    tree = root / name
    socket = node["endpoint"].removeprefix("unix://")
    links = {}
    if node.get("pid_file"):
        links["var/run/crio/crio.sock"] = socket
        links["run/crio/crio.pid"] = node["pid_file"]
        links["etc/crio/crio.conf.d"] = node["dropin_dir"]
        links["etc/containers/registries.conf"] = node["registries_conf"]
    else:
        links["run/containerd/containerd.sock"] = socket
    lab_dir = Path(lab.path).resolve()
    links[str(lab_dir).lstrip("/")] = str(lab_dir)
    for relative, target in links.items():
        path = tree / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
    for directory in ("var/tmp", "run", "var/lib/pinned-images"):
        (tree / directory).mkdir(parents=True, exist_ok=True)
    return tree


class PodLab:
    """The lab, its fake API server with the lab's nodes, and a playbook runner in pod mode."""

    def __init__(self, lab, tmp: Path):
        self.lab = lab
        self.tmp = tmp
        self.api = FakeApiServer(tmp / "apiserver", tls=True)
        self.api.tmp_path.mkdir()
        self.api.start()
        for name, role in ROLES.items():
            self.api.add(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {f"node-role.kubernetes.io/{role}": ""}},
                }
            )
        self.host_root = tmp / "host"
        self.host_root.mkdir()
        self.trees = {name: node_tree(lab, name, tmp / "trees") for name in ROLES}
        self.home = tmp / "pod-home"
        self.home.mkdir()
        self.api.pods.behaviour = self.running
        self.wheelhouse = tmp / "wheelhouse"
        self.runs = 0

    def running(self, pod) -> PodBehaviour:
        """A pod whose commands run in its node's host root, mounted at ``host_root`` in a namespace of their own."""
        tree = self.trees[pod["spec"]["nodeName"]]
        mount = ["sh", "-c", 'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", str(tree), str(self.host_root)]
        return PodBehaviour.running(
            exec_prefix=["unshare", "-m", "--propagation", "private", *mount],
            env={"PATH": CONTAINER_PATH, "HOME": str(self.home)},
        )

    def extra(self, sets: Path, **more) -> dict:
        return dict(
            SPEED,
            cluster_node_access="pod",
            cluster_sets=[str(sets)],
            cluster_k8s_auth={"kubeconfig": str(self.api.kubeconfig_path)},
            cluster_node_pod_namespace="pinned-images",
            cluster_node_pod_image="registry.access.redhat.com/ubi9/python-311",
            cluster_node_pod_python=SYSTEM_PYTHON,
            cluster_node_pod_host_root=str(self.host_root),
            cluster_node_pod_start_timeout=10,
            node_wheelhouse=str(self.wheelhouse),
            node_auth_file=self.lab.state["registries"]["auth"]["docker_config"],
            node_crio_reload="signal",
            node_crio_pid_file="/run/crio/crio.pid",
            **more,
        )

    def command(self, extra: dict, check: bool = False) -> tuple[list[str], dict, Path]:
        self.runs += 1
        report = self.tmp / f"report-{self.runs}.json"
        command = playbook_command(
            "pinned.images.prefetch", (), dict(extra, cluster_report_file=str(report)), check=check
        )
        env = ansible_env(PATH=f"{KUBECTL_DIR}:{VENV_BIN}:{os.environ['PATH']}")
        return command, env, report

    def run(self, extra: dict, check: bool = False) -> tuple[subprocess.CompletedProcess, dict | None, float]:
        command, env, report = self.command(extra, check)
        started = time.monotonic()
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400, check=False)
        seconds = time.monotonic() - started
        return proc, json.loads(report.read_text()) if report.exists() else None, seconds

    def pods(self) -> list[str]:
        return sorted(name for _namespace, name in self.api.pods.objects)


@pytest.fixture(scope="module")
def plab(tmp_path_factory):
    reference_path("cri-o")
    if not (KUBECTL_DIR / "kubectl").exists():
        pytest.fail(f"no kubectl at {KUBECTL_DIR}: run hack/setup.sh")
    with started_lab(tmp_path_factory.mktemp("plab"), nodes=2, control_plane=1, runtimes=RUNTIMES) as lab:
        pod_lab = PodLab(lab, tmp_path_factory.mktemp("pods"))
        try:
            yield pod_lab
        finally:
            pod_lab.api.stop()


def sets_file(plab, name: str, images: dict) -> Path:
    documents = [pinned_image_set(f"{role}-images", refs, {ROLE: role}) for role, refs in images.items()]
    path = plab.tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def cri_pinned(plab, node: str) -> dict:
    with CriClient(plab.lab.state["nodes"][node]["endpoint"]) as client:
        return {digest: image["pinned"] for image in client.list_images() for digest in image["repo_digests"]}


# The node role's default private Python directory, relative to a node's host root.
PYTHON_COPY = "var/lib/pinned-images/python"


def pod_python_tag() -> str:
    """The interpreter tag of the pods' Python: the subdirectory of its private copy."""
    code = (
        "from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import interpreter; "
        "print(interpreter()['tag'])"
    )
    # Its import probes a private directory: one that does not exist, never the machine's.
    env = dict(PATH=os.environ["PATH"], PYTHONPATH=str(REPO / ".build" / "collections"))
    env["PINNED_IMAGES_PYTHON_DIR"] = str(NO_PRIVATE_PYTHON)
    return subprocess.run(
        [SYSTEM_PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


def python_copy(tree: Path) -> dict:
    """Each file of a node's private Python copy, with its mode and modification time (ns)."""
    base = tree / PYTHON_COPY
    return {
        str(path.relative_to(base)): (stat.S_IMODE(path.lstat().st_mode), path.lstat().st_mtime_ns)
        for path in sorted(base.rglob("*"))
    }


def created_pods(plab) -> list[str]:
    return [
        record.body["metadata"]["name"]
        for record in plab.api.requests
        if record.method == "POST" and record.path.endswith("/pods") and isinstance(record.body, dict)
    ]


# As docs/nodes.md shows it: the settings in an inventory of localhost's variables only (cluster.yml).
DOCS_COMMAND = "ansible-playbook -i cluster.yml pinned.images.prefetch -e cluster_node_access=pod"


@pytest.fixture(scope="module")
def first_run(plab):
    refs = [record.reference for record in plab.lab.push_bulk(4, prefix="podmode")]
    images = {"master": refs[:2], "worker": refs[2:]}
    report = plab.tmp / "report-docs.json"
    settings = plab.extra(sets_file(plab, "sets", images), cluster_report_file=str(report))
    settings.pop("cluster_node_access")
    (plab.tmp / "cluster.yml").write_text(yaml.safe_dump({"all": {"vars": settings}}))
    env = ansible_env(PATH=f"{KUBECTL_DIR}:{VENV_BIN}:{os.environ['PATH']}")
    started = time.monotonic()
    proc = subprocess.run(
        shlex.split(DOCS_COMMAND), cwd=plab.tmp, env=env, capture_output=True, text=True, timeout=400, check=False
    )
    seconds = time.monotonic() - started
    report_data = json.loads(report.read_text()) if report.exists() else None
    return dict(proc=proc, report=report_data, seconds=seconds, images=images)


def test_pod_mode_pulls_pins_and_reports_each_node_and_leaves_no_pod(plab, first_run):
    proc, report = first_run["proc"], first_run["report"]
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    nodes = {node["host"]: node for node in report["nodes"]}
    assert sorted(nodes) == ["cp-0", "worker-0"]
    for name, role in ROLES.items():
        assert nodes[name]["status"] == "ok", nodes[name]
        assert sorted(image["image"] for image in nodes[name]["images"]) == sorted(first_run["images"][role])
        assert {image["status"] for image in nodes[name]["images"]} == {"pulled"}
        pinned = cri_pinned(plab, name)
        assert all(pinned.get(image) for image in first_run["images"][role]), pinned
    # Through the pods: the connection plugin, and Debian's Python that got grpcio and protobuf in the pod.
    assert any(record.path.endswith("/exec") for record in plab.api.requests)
    assert (plab.trees["cp-0"] / "var/lib/pinned-images/python").is_dir()
    # CRI-O's drop-in, written under host_root into the node's own directory.
    dropin = Path(plab.lab.state["nodes"]["worker-0"]["dropin_dir"]) / "50-pinned-images"
    assert all(image in dropin.read_text() for image in first_run["images"]["worker"])
    assert plab.pods() == []
    assert plab.api.kubeconfig_path.read_text().count(plab.api.token) == 1
    assert plab.api.token not in output
    print(f"pod mode, 2 nodes, 4 images pulled: {first_run['seconds']:.1f} s")


def test_the_first_run_leaves_each_nodes_python_copy_on_its_host(plab, first_run):
    assert first_run["proc"].returncode == 0, first_run["proc"].stdout[-3000:]
    tag = pod_python_tag()
    assert re.fullmatch(r"cp3\d+-manylinux-\w+", tag), tag
    for name, tree in plab.trees.items():
        base = tree / PYTHON_COPY
        # The node role's default: the host's directory under node_host_root, one subdirectory per interpreter tag.
        assert sorted(path.name for path in base.iterdir()) == [tag], name
        assert stat.S_IMODE(base.stat().st_mode) == 0o700
        assert (base / tag / "manifest.json").is_file()
        assert {"grpcio", "protobuf"} <= {path.name.split("-")[0] for path in (base / tag / "wheels").glob("*.whl")}
        assert (base / tag / "site" / "grpc" / "__init__.py").is_file()
    # Written in each pod's mount of its node, not at the mount point on this machine.
    assert list(plab.host_root.iterdir()) == []


def test_a_later_run_through_new_pods_copies_no_wheel(plab, first_run):
    before = {name: python_copy(tree) for name, tree in plab.trees.items()}
    pods_before = created_pods(plab)
    proc, report, seconds = plab.run(plab.extra(sets_file(plab, "sets", first_run["images"])))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    new_pods = created_pods(plab)[len(pods_before) :]
    assert len(new_pods) == 2 and not set(new_pods) & set(pods_before), new_pods
    assert {node["status"] for node in report["nodes"]} == {"ok"}
    assert {image["status"] for node in report["nodes"] for image in node["images"]} == {"present"}
    # The first module call in each new pod finds the host's intact copy: the role never provides the libraries.
    assert "Provide grpcio and protobuf" not in output, output[-4000:]
    assert "TASK [pinned.images.node : Copy the wheels]" not in output
    assert {name: python_copy(tree) for name, tree in plab.trees.items()} == before
    assert plab.pods() == []
    print(f"pod mode, 2 nodes, nothing to do, new pods, the hosts' Python copy: {seconds:.1f} s")


def test_the_same_rerun_over_the_lab_connection_for_comparison(plab, first_run, tmp_path):
    # SSH mode's figure for the same two nodes and sets: the lab's inventory (local connection, the venv's Python,
    # which has grpcio and protobuf).
    inventory = plab.lab.write_inventory(tmp_path / "lab.yml")
    report = tmp_path / "report.json"
    extra = dict(
        node_progress_interval=1,
        node_control_plane_pull_pause=0.0,
        cluster_sets=[str(sets_file(plab, "sets", first_run["images"]))],
        cluster_report_file=str(report),
    )
    command = playbook_command("pinned.images.prefetch", inventory, extra)
    started = time.monotonic()
    proc = subprocess.run(command, env=ansible_env(), capture_output=True, text=True, timeout=400, check=False)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    nodes = json.loads(report.read_text())["nodes"]
    assert sorted(node["host"] for node in nodes) == sorted(ROLES)
    assert {image["status"] for node in nodes for image in node["images"]} == {"present"}
    print(f"ssh mode (local connection), 2 nodes, nothing to do: {seconds:.1f} s")


def test_check_mode_goes_through_the_pods_and_pulls_nothing(plab, first_run):
    new = [record.reference for record in plab.lab.push_bulk(1, prefix="podmode-check")]
    images = {role: first_run["images"][role] + new for role in first_run["images"]}
    proc, report, _seconds = plab.run(plab.extra(sets_file(plab, "check", images)), check=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    # Each node would pull the new image only (the report's row: pulled, which counts what would be, and present).
    for node, role in ROLES.items():
        assert re.search(r'"%s\s+check\s+1\s+%d\s+0\s' % (node, len(images[role]) - 1), output), output[-3000:]
        assert new[0] not in cri_pinned(plab, node)
    assert "check mode: nothing was pulled" in output and report is None
    assert plab.pods() == []


def test_a_pod_that_never_starts_fails_its_node_with_the_reason_and_goes(plab, first_run):
    def behaviour(pod):
        if pod["spec"]["nodeName"] == "worker-0":
            return PodBehaviour.waiting("ImagePullBackOff", 'Back-off pulling image "registry.access.redhat.com/ubi9"')
        return plab.running(pod)

    plab.api.pods.behaviour = behaviour
    try:
        proc, report, _seconds = plab.run(plab.extra(sets_file(plab, "sets", first_run["images"])))
    finally:
        plab.api.pods.behaviour = plab.running
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    nodes = {node["host"]: node for node in report["nodes"]}
    assert nodes["cp-0"]["status"] == "ok"
    assert nodes["worker-0"]["status"] == "failed"
    assert "did not start: ImagePullBackOff: Back-off pulling image" in nodes["worker-0"]["error"]
    assert plab.pods() == []


def test_missing_rbac_fails_each_node_with_the_apis_403(plab, first_run):
    plab.api.forbid("create", "pods", "pinned-images")
    try:
        proc, report, _seconds = plab.run(plab.extra(sets_file(plab, "sets", first_run["images"])))
    finally:
        plab.api.forbidden.clear()
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    for node in report["nodes"]:
        assert node["status"] == "failed"
        assert "forbidden: the credentials may not create pods" in node["error"], node
    assert plab.pods() == []


def test_a_forbidden_list_stops_the_run_with_that_error_not_the_cleanups(plab, first_run):
    # The pods cannot be listed: the open fails, and so does the rescue's cleanup, with the same 403.
    plab.api.forbid("list", "pods", "pinned-images")
    try:
        proc, _report, _seconds = plab.run(plab.extra(sets_file(plab, "sets", first_run["images"])))
    finally:
        plab.api.forbidden.clear()
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "TASK [pinned.images.cluster : Stop, as the pods could not be opened]" in output, output[-4000:]
    stopped = output.split("Stop, as the pods could not be opened]")[1]
    assert "forbidden: the credentials may not list pods" in stopped.split("TASK [")[0], output[-3000:]
    assert plab.pods() == []


def test_pod_modes_settings_overridden_by_extra_variables_fail_before_any_pod(plab, first_run):
    extra = dict(plab.extra(sets_file(plab, "sets", first_run["images"])), cluster_add_hosts=False)
    proc, _report, _seconds = plab.run(extra)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "cluster_node_access=pod takes the nodes from the cluster and needs cluster_read_cluster and" in output
    assert plab.pods() == []


def docs_block(marker: str) -> str:
    """The fenced block that follows ``<!-- nodes: <marker> -->`` in docs/nodes.md."""
    text = (REPO / "docs" / "nodes.md").read_text()
    match = re.search(r"<!-- nodes: " + re.escape(marker) + r" -->\n```\w*\n(.*?)\n```", text, re.S)
    assert match, marker
    return match.group(1)


def test_an_interrupted_runs_pods_stay_for_a_live_run_and_go_with_the_documented_command(plab, first_run):
    command, env, _report = plab.command(plab.extra(sets_file(plab, "sets", first_run["images"])))
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while len(plab.pods()) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        left = plab.pods()
        assert len(left) == 2
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert plab.pods() == left
    # Running, as a live run's pods are: the next run works beside them and leaves them.
    run, report, seconds = plab.run(plab.extra(sets_file(plab, "sets", first_run["images"])))
    assert run.returncode == 0, run.stdout + run.stderr
    assert {node["status"] for node in report["nodes"]} == {"ok"}
    assert {image["status"] for node in report["nodes"] for image in node["images"]} == {"present"}
    assert plab.pods() == left
    print(f"pod mode, 2 nodes, nothing to do, beside 2 leftover pods: {seconds:.1f} s")
    # Ended at their deadline: the next run removes them.
    plab.api.pods.set_status("pinned-images", left[0], {"phase": "Failed", "reason": "DeadlineExceeded"})
    run, report, _seconds = plab.run(plab.extra(sets_file(plab, "sets", first_run["images"])))
    assert run.returncode == 0, run.stdout + run.stderr
    assert plab.pods() == left[1:]
    # The documented cleanup, as written.
    cleanup = subprocess.run(
        docs_block("pod-cleanup"),
        shell=True,
        env=dict(env, KUBECONFIG=str(plab.api.kubeconfig_path)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert cleanup.returncode == 0, cleanup.stderr
    assert plab.pods() == []


def test_a_token_reaches_kubectl_only_in_a_file_and_validate_certs_works(plab, first_run, tmp_path):
    # A kubectl that records its argv: every exec of the connection plugin, and whatever else runs it.
    argv_log = tmp_path / "kubectl-argv"
    wrapper = tmp_path / "bin" / "kubectl"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(argv_log))}\nexec {KUBECTL_DIR}/kubectl "$@"\n'
    )
    wrapper.chmod(0o755)
    auth = {"host": plab.api.url, "ca_cert": str(plab.api.ca_cert_path), "validate_certs": True}
    extra = dict(plab.extra(sets_file(plab, "sets", first_run["images"])), cluster_k8s_auth=auth)
    command, env, _report = plab.command(extra)
    # The token from the environment, as the cluster modules read it.
    env = dict(env, PATH=f"{wrapper.parent}:{env['PATH']}", K8S_AUTH_API_KEY=plab.api.token)
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    calls = argv_log.read_text().splitlines()
    assert sum(" exec -i " in call for call in calls) >= 4, calls
    assert all("--insecure-skip-tls-verify=false" in call for call in calls if " exec -i " in call), calls
    assert not [call for call in calls if plab.api.token in call]
    assert plab.api.token not in output
    assert plab.pods() == []


def test_a_pod_gone_mid_run_fails_its_node_and_the_run_still_removes_every_pod_and_reports(plab, first_run):
    # The control plane one node at a time: a batch whose only node is lost must not end the playbook before the
    # play that removes the pods.
    extra = dict(plab.extra(sets_file(plab, "sets", first_run["images"])), cluster_control_plane_serial=1)
    command, env, report = plab.command(extra)
    seen = []

    def gone_before_the_first_module(record):
        # The exec that makes the first module's temporary directory: the pod is deleted just before it runs.
        if "-cp-0-" in record.path and record.path.endswith("/exec") and "mkdir" in " ".join(record.command or []):
            seen.append(record.path)
            if len(seen) == 1:
                name = record.path.split("/pods/")[1].split("/")[0]
                plab.api.pods._delete(("pinned-images", name), {"gracePeriodSeconds": 0})

    plab.api.on_request(gone_before_the_first_module)
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400, check=False)
    finally:
        plab.api.before_request.remove(gone_before_the_first_module)
    output = proc.stdout + proc.stderr
    assert seen, output
    assert report.exists(), output[-4000:]
    nodes = {node["host"]: node for node in json.loads(report.read_text())["nodes"]}
    assert nodes["cp-0"]["status"] == "failed", nodes["cp-0"]
    assert nodes["worker-0"]["status"] == "ok", nodes["worker-0"]
    assert plab.pods() == []
    print(f"cp-0, its pod deleted mid-run: {nodes['cp-0']['error']}")
