# SPDX-License-Identifier: GPL-3.0-or-later
"""_node_access/pods: the pod of each node, and why one does not start, against the fake API server's pods."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._k8s.client import K8sClient
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._node_access.pods import (
    MANAGED_LABEL,
    NODE_LABEL,
    RUN_LABEL,
    PodSettings,
    label_value,
    open_pods,
    pod_manifest,
    pod_name,
    remove_pods,
    selector,
    start_problem,
)
from support.apiserver.pods import PodBehaviour

SETTINGS = PodSettings(image="registry.example/ubi9/python-311", namespace="pinned", start_timeout=5.0)


@pytest.fixture
def client(fake_apiserver, tmp_path):
    with K8sClient.connect(
        K8sConnection(host=fake_apiserver.url, api_key=fake_apiserver.token), str(tmp_path), timeout=10
    ) as client:
        yield client


def test_the_pod_is_privileged_on_its_node_with_the_hosts_root_and_a_bounded_life():
    pod = pod_manifest(
        "worker-0", "run-1", PodSettings("img", "ns", "sa", "system-node-critical", "/host", {"a": "b"}, 600)
    )
    spec = pod["spec"]
    assert (spec["nodeName"], spec["hostPID"], spec["hostNetwork"]) == ("worker-0", True, True)
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["activeDeadlineSeconds"] == 600 and spec["containers"][0]["command"] == ["sleep", "600"]
    assert spec["containers"][0]["securityContext"]["privileged"] is True
    assert spec["automountServiceAccountToken"] is False
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": "10m", "memory": "64Mi"}}
    assert spec["containers"][0]["volumeMounts"] == [{"name": "host", "mountPath": "/host"}]
    assert spec["volumes"] == [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}]
    assert (spec["serviceAccountName"], spec["priorityClassName"]) == ("sa", "system-node-critical")
    assert pod["metadata"]["labels"] == {"a": "b", MANAGED_LABEL: "true", RUN_LABEL: "run-1", NODE_LABEL: "worker-0"}
    assert pod["metadata"]["name"] == pod_name("worker-0", "run-1") != pod_name("worker-0", "run-2")


def test_long_or_odd_names_become_valid_label_values_and_pod_names():
    node = "ip-10-0-1-2." + "x" * 80 + ".compute.internal"
    value = label_value(node)
    assert len(value) <= 63 and value != label_value(node + "y")
    assert label_value("worker-0") == "worker-0"
    assert label_value("cp-0_run 2026-01-01T00:00:00Z") == label_value("cp-0_run 2026-01-01T00:00:00Z")
    name = pod_name(node.upper(), "r")
    assert len(name) <= 63 and name == name.lower() and name.startswith("pinned-images-ip-10-0-1-2")


def test_a_pod_that_cannot_start_is_told_by_its_own_reason():
    waiting = {"containerStatuses": [{"state": {"waiting": {"reason": "ErrImagePull", "message": "denied"}}}]}
    assert start_problem({"status": waiting}) == "ErrImagePull: denied"
    creating = {"containerStatuses": [{"state": {"waiting": {"reason": "ContainerCreating"}}}]}
    assert start_problem({"status": creating}) is None
    unschedulable = {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"}]
    }
    assert start_problem({"status": unschedulable}) == "Unschedulable: no"
    assert (
        start_problem({"status": {"phase": "Failed", "reason": "DeadlineExceeded"}})
        == "DeadlineExceeded: the pod is Failed"
    )
    assert start_problem({"status": {"phase": "Pending"}}) is None


def test_pods_open_on_every_node_and_ended_pods_of_other_runs_go_first(client, fake_apiserver):
    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-0"}})
    old = pod_manifest("worker-0", "old-run", SETTINGS)
    live = pod_manifest("worker-1", "live-run", SETTINGS)
    other_node = pod_manifest("worker-9", "old-run", SETTINGS)
    for pod in (old, live, other_node):
        fake_apiserver.pods.add(pod)
    fake_apiserver.pods.set_status("pinned", old["metadata"]["name"], {"phase": "Failed", "reason": "DeadlineExceeded"})
    result = open_pods(client, ["worker-0", "worker-1"], "new-run", SETTINGS)
    assert [(p["node"], p["running"], p["reason"]) for p in result["pods"]] == [
        ("worker-0", True, ""),
        ("worker-1", True, ""),
    ]
    # A running pod of another run may be a run under way: it stays.
    assert result["removed"] == [old["metadata"]["name"]]
    names = {name for _ns, name in fake_apiserver.pods.objects}
    kept = {other_node["metadata"]["name"], live["metadata"]["name"]}
    assert names == kept | {p["name"] for p in result["pods"]}
    assert remove_pods(client, "pinned", selector("new-run")) == sorted(p["name"] for p in result["pods"])
    assert {name for _ns, name in fake_apiserver.pods.objects} == kept


def test_a_pod_stuck_on_its_image_fails_its_node_only_with_the_reason(client, fake_apiserver):
    def behaviour(pod):
        if pod["spec"]["nodeName"] == "worker-1":
            return PodBehaviour.waiting("ImagePullBackOff", 'Back-off pulling image "registry.example/ubi9"')
        return PodBehaviour.running()

    fake_apiserver.pods.behaviour = behaviour
    pods = open_pods(client, ["worker-0", "worker-1"], "r", SETTINGS)["pods"]
    assert pods[0]["running"] and not pods[1]["running"]
    assert pods[1]["reason"] == (
        f"the node access pod {pods[1]['name']} in namespace pinned did not start: "
        'ImagePullBackOff: Back-off pulling image "registry.example/ubi9"'
    )


def test_a_pod_still_pending_at_the_bound_fails_with_what_it_waits_for(client, fake_apiserver):
    fake_apiserver.pods.behaviour = lambda pod: PodBehaviour.running(delay=30)
    ticks = iter(range(100))
    pods = open_pods(client, ["worker-0"], "r", SETTINGS, clock=lambda: float(next(ticks)), sleep=lambda _s: None)[
        "pods"
    ]
    assert not pods[0]["running"]
    assert "did not start: not running after 5 s (phase Pending)" in pods[0]["reason"]


def test_admission_and_rbac_refusals_are_the_apis_403(client, fake_apiserver):
    fake_apiserver.pods.behaviour = lambda pod: PodBehaviour.forbidden_by_pod_security(
        ['privileged (container "node-access" must not set securityContext.privileged=true)']
    )
    pods = open_pods(client, ["worker-0"], "r", SETTINGS)["pods"]
    assert 'violates PodSecurity "restricted:latest": privileged' in pods[0]["reason"]
    assert "forbidden" in pods[0]["reason"]
    fake_apiserver.forbid("list", "pods", "pinned")
    with pytest.raises(K8sError, match="forbidden: the credentials may not list pods") as info:
        open_pods(client, ["worker-0"], "r", SETTINGS)
    assert info.value.status == 403


def test_a_pod_is_owned_by_its_node_and_goes_with_it(client, fake_apiserver):
    node = fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-0"}})
    pods = open_pods(client, ["worker-0", "gone-node"], "r", SETTINGS)["pods"]
    owned = fake_apiserver.pods.get("pinned", pods[0]["name"])
    assert owned["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "worker-0", "uid": node["metadata"]["uid"]}
    ]
    # A node the API does not have (or may not be read) gives a pod without an owner, found by its labels.
    assert "ownerReferences" not in fake_apiserver.pods.get("pinned", pods[1]["name"])["metadata"]
    client.delete("v1", "Node", "worker-0")
    assert fake_apiserver.pods.get("pinned", pods[0]["name"]) is None
