# SPDX-License-Identifier: GPL-3.0-or-later
"""_openshift.disruption_policy: which policy the MCO daemon uses for the drop-in, why a change would reboot, the
wait for the MCO's status (against the fake API server) and the node counts of the refusal."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._k8s.client import K8sClient
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection
from ansible_collections.pinned.images.plugins.module_utils._openshift import disruption_policy as dp
from support.apiserver import mco

DROPIN = "/etc/crio/crio.conf.d/50-pinned-images"
RELOAD = [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]


def configuration(files=None, generation=2, observed=2, with_status=True):
    obj = {"metadata": {"name": "cluster", "generation": generation}, "spec": {}}
    if with_status:
        obj["status"] = {
            "observedGeneration": observed,
            "nodeDisruptionPolicyStatus": {"clusterPolicies": {"files": list(files or [])}},
        }
    return obj


def test_closest_policy_is_the_exact_path_or_the_longest_directory_above_it():
    files = [
        {"path": "/etc", "actions": [{"type": "Reboot"}]},
        {"path": "/etc/crio/", "actions": RELOAD},
        {"path": "/etc/crio/crio.conf", "actions": [{"type": "None"}]},
    ]
    assert dp.closest_policy(files, DROPIN)["path"] == "/etc/crio/"
    # A sibling that shares a prefix is no directory above the path.
    assert dp.closest_policy([{"path": "/etc/crio/crio.conf.d/50-pinned", "actions": RELOAD}], DROPIN) is None
    assert dp.closest_policy(files + [{"path": DROPIN, "actions": RELOAD}], DROPIN)["path"] == DROPIN


@pytest.mark.parametrize(
    "obj, pending, reason",
    [
        (None, None, "has no MachineConfiguration 'cluster'"),
        (configuration(with_status=False), None, "has no status.nodeDisruptionPolicyStatus"),
        (configuration(), None, f"has no policy for {DROPIN}"),
        (configuration([{"path": DROPIN, "actions": RELOAD}], generation=3), None, "is not reconciled yet"),
        (configuration([{"path": "/etc/crio", "actions": [{"type": "Reboot"}]}]), None, "the policy for /etc/crio in"),
        # Check mode predicts with the entry it would apply, as the MCO's merge replaces the same path.
        (configuration([{"path": DROPIN, "actions": [{"type": "Reboot"}]}], generation=3), dp.policy_entry(), None),
        (configuration(with_status=False), dp.policy_entry(), "has no status.nodeDisruptionPolicyStatus"),
        (configuration([{"path": DROPIN, "actions": RELOAD}]), None, None),
        (configuration([{"path": "/etc/crio/crio.conf.d", "actions": [{"type": "Drain"}, *RELOAD]}]), None, None),
    ],
)
def test_reboot_reason(obj, pending, reason):
    found = dp.reboot_reason(obj, DROPIN, pending=pending)
    assert (found is None) if reason is None else (reason in found)


def test_the_wait_ends_when_the_mco_shows_the_policy(fake_apiserver, crd_schemas):
    mco.add_machine_configuration(fake_apiserver, reconciling=False)
    seen = []

    def late_controller(request):
        if request.path.endswith("/machineconfigurations/cluster"):
            seen.append(request.method)
        # The controller catches up on the third read after the change.
        if "PATCH" in seen and seen[seen.index("PATCH") :].count("GET") == 3:
            mco.reconcile(fake_apiserver)

    fake_apiserver.on_request(late_controller)
    with K8sClient.connect(K8sConnection(host=fake_apiserver.url, api_key=fake_apiserver.token)) as client:
        assert dp.sync_policy(client)["changed"]
        obj, reason = dp.await_no_reboot(client, timeout=60, sleep=lambda _seconds: None)
        assert reason is None and obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
        assert seen == ["GET", "PATCH", "GET", "GET", "GET"]
        # A reconciled status that lacks the path is final: no wait.
        fake_apiserver.objects[("MachineConfiguration", "cluster")]["spec"] = {}
        mco.reconcile(fake_apiserver)
        before = len(seen)
        assert "has no policy" in dp.await_no_reboot(client, timeout=60, sleep=lambda _seconds: None)[1]
        assert len(seen) == before + 1


def test_node_counts_come_from_the_pool_status_or_its_node_selector(fake_apiserver):
    for name, labels in (
        ("w1", {"node-role.kubernetes.io/worker": ""}),
        ("i1", {"role": "infra"}),
        ("i2", {"role": "infra", "node-role.kubernetes.io/worker": ""}),
    ):
        fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
    fake_apiserver.add(
        {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": "infra"},
            "spec": {"nodeSelector": {"matchLabels": {"role": "infra"}}},
        }
    )
    fake_apiserver.add(
        {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": "master"},
            "spec": {},
            "status": {"machineCount": 3},
        }
    )
    with K8sClient.connect(K8sConnection(host=fake_apiserver.url, api_key=fake_apiserver.token)) as client:
        assert dp.pool_node_counts(client, ["worker", "infra", "master"]) == [
            {"pool": "worker", "nodes": 2},
            {"pool": "infra", "nodes": 2},
            {"pool": "master", "nodes": 3},
        ]
        with pytest.raises(dp.RebootRefused) as refused:
            dp.refuse_reboot(client, ["worker"], "no policy")
    assert refused.value.details["reboot"] == {
        "reason": "no policy",
        "nodes": 2,
        "pools": [{"pool": "worker", "nodes": 2}],
    }
    assert "would drain and reboot 2 nodes (2 of pool worker): no policy." in refused.value.message
