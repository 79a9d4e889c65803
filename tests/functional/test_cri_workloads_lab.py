# SPDX-License-Identifier: GPL-3.0-or-later
"""Pod sandboxes and containers made through CRI on the lab's workload nodes (support.cri_workloads), on every
runtime of LAB_RUNTIMES: what ListContainers and ListPodSandbox report, and that removing leaves nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.reference import reference_path
from support.cri_workloads import image_id, list_containers, list_sandboxes, run_container, run_sandbox
from support.errors import LabError
from support.lab import started_lab
from support.node import CGROUP_ROOT, RUNTIMES, runc_containers, shim_sockets


def alive(pid: int) -> bool:
    """Running (a zombie's cmdline is empty)."""
    try:
        return bool(Path("/proc/%d/cmdline" % pid).read_bytes())
    except OSError:
        return False


def pulled(node, reference: str) -> str:
    """Pull ``reference`` onto ``node`` through the collection's CRI client; its image id as ListImages has it."""
    with CriClient(node["endpoint"]) as client:
        client.pull_image(reference)
        status = client.image_status(reference)
    assert status is not None
    return status["id"]


def test_running_and_exited_containers_are_listed_with_their_image_id_and_removed_whole(lab, workloads):
    busybox = lab.workload_images()["busybox"]
    busybox_id = pulled(workloads, busybox.reference)
    running = run_container(workloads, busybox.reference, state="running", name="sleeper")
    exited = run_container(workloads, busybox.reference, state="exited", name="done")
    assert running.image_ref == exited.image_ref == busybox_id

    listed = {item["id"]: item for item in list_containers(workloads)}
    assert set(listed) == {running.id, exited.id}
    assert listed[running.id]["state"] == "CONTAINER_RUNNING"
    assert listed[exited.id]["state"] == "CONTAINER_EXITED"
    assert {image_id(item) for item in listed.values()} == {busybox_id}
    assert exited.status()["exit_code"] == 0
    sandboxes = {item["id"]: item for item in list_sandboxes(workloads)}
    assert set(sandboxes) == {running.pod_sandbox_id, exited.pod_sandbox_id}
    assert {item["state"] for item in sandboxes.values()} == {"SANDBOX_READY"}

    # The pause image came with the first sandbox: pinned wherever the runtime reports pins (not on 1.6).
    pause = lab.workload_images()["pause"]
    with CriClient(workloads["endpoint"]) as client:
        images = {image["id"]: image for image in client.list_images()}
        pause_status = client.image_status(pause.tag_reference)
    assert pause_status is not None and set(images) == {busybox_id, pause_status["id"]}
    assert images[pause_status["id"]]["pinned"] is RUNTIMES[workloads["runtime"]].pins
    assert images[busybox_id]["pinned"] is False

    running.remove()
    exited.remove()
    assert list_containers(workloads) == []
    assert list_sandboxes(workloads) == []


def test_containers_of_two_images_share_a_sandbox_that_takes_them_along(lab, workloads):
    busybox = lab.workload_images()["busybox"]
    other = lab.images().get("plain-busybox-other") or lab.push_runnable_image(
        "lab/busybox-other", name="plain-busybox-other"
    )
    ids = {pulled(workloads, busybox.reference), pulled(workloads, other.reference)}
    assert len(ids) == 2
    pod = run_sandbox(workloads, "shared")
    created = run_container(workloads, busybox.reference, state="created", sandbox=pod)
    running = run_container(workloads, other.reference, sandbox=pod)

    listed = {item["id"]: item for item in list_containers(workloads)}
    assert {created.id: "CONTAINER_CREATED", running.id: "CONTAINER_RUNNING"} == {
        key: item["state"] for key, item in listed.items()
    }
    assert {item["pod_sandbox_id"] for item in listed.values()} == {pod.id}
    assert {created.image_ref, running.image_ref} == {image_id(item) for item in listed.values()} == ids
    assert [item["id"] for item in list_sandboxes(workloads)] == [pod.id]

    pod.remove()
    assert list_containers(workloads) == []
    assert list_sandboxes(workloads) == []


def test_an_image_the_node_lacks_fails_naming_it_and_leaves_no_sandbox(lab, workloads):
    absent = lab.images()["plain-small"].reference
    with CriClient(workloads["endpoint"]) as client:
        if client.image_status(absent):
            client.remove_image(absent)
        assert client.image_status(absent) is None
    with pytest.raises(LabError, match="CreateContainer .*" + re.escape(absent)):
        run_container(workloads, absent)
    assert list_sandboxes(workloads) == []


def test_a_running_container_outlives_its_runtime_killed_and_started_again(lab, workloads):
    busybox = lab.workload_images()["busybox"]
    pulled(workloads, busybox.reference)
    running = run_container(workloads, busybox.reference)
    lab.stop_node(workloads["name"], kill=True)
    lab.start_node(workloads["name"])
    assert [(item["id"], item["state"]) for item in list_containers(workloads)] == [(running.id, "CONTAINER_RUNNING")]
    running.remove()
    assert list_containers(workloads) == []


def test_only_workload_nodes_name_a_pause_image(lab, workload_node):
    for name, node in lab.state["nodes"].items():
        config = Path(node["config"]).read_text()
        names_one = re.search(r"^\s*(sandbox_image|sandbox|pause_image)\s*=", config, re.M) is not None
        assert names_one is bool(node.get("workloads")), name
    assert workload_node["pause_image"] in Path(workload_node["config"]).read_text()


@pytest.mark.lab
def test_lab_down_kills_the_containers_left_running_and_removes_their_cgroups(tmp_path_factory):
    reference_path("cri-o")  # the skip without the CRI-O reference directory
    runtimes = ["containerd-2.1", "cri-o"]
    with started_lab(tmp_path_factory.mktemp("wlab"), nodes=0) as lab:
        busybox = lab.workload_images()["busybox"]
        nodes = [lab.workload_node(runtime) for runtime in runtimes]
        for node in nodes:
            pulled(node, busybox.reference)
            run_container(node, busybox.reference, name="left-behind")
        pids = [container["pid"] for node in nodes for _root, container in runc_containers(Path(node["root"]).parent)]
        # A sandbox and its container per node (CRI-O runs no pause container: its pods share the node's PID).
        assert len(pids) >= 1 + len(nodes) and all(alive(pid) for pid in pids)
        cgroups = [node["cgroup_parent"].strip("/") for node in nodes]
        assert all(node_cgroups(name) for name in cgroups)
        sockets = [socket for node in nodes for socket in shim_sockets(Path(node["root"]).parent)]
        assert sockets and all(socket.is_socket() for socket in sockets)
    assert not [pid for pid in pids if alive(pid)]
    assert not [path for name in cgroups for path in node_cgroups(name)]
    assert not [socket for socket in sockets if socket.exists()], "the shims' sockets go with them"


def node_cgroups(name: str) -> list:
    """The node's cgroup in every hierarchy: cgroup v2's one tree, or v1's controllers."""
    return list(CGROUP_ROOT.glob(name)) + list(CGROUP_ROOT.glob("*/" + name))
