# SPDX-License-Identifier: GPL-3.0-or-later
"""machine_config and the node disruption policy, against the fake API server with the real CRDs: the entry applied
by server-side apply and owning only itself, an admin's entries kept, a second run unchanged, drift when the entry is
edited, the refusal (with the node count) when a change would still reboot, and the policy file for GitOps."""

from __future__ import annotations

import copy

import pytest
import yaml

from ansible_collections.pinned.images.plugins.modules import machine_config as module
from fixtures.module_runner import run_module
from support.apiserver.mco import add_machine_configuration

A = "quay.io/org/a@sha256:" + "a" * 64
B = "quay.io/org/b@sha256:" + "b" * 64
DROPIN = "/etc/crio/crio.conf.d/50-pinned-images"
# Written out here, not taken from the code under test.
OUR_ENTRY = {"path": DROPIN, "actions": [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]}
ADMIN_ENTRY = {
    "path": "/etc/chrony.conf",
    "actions": [{"type": "Restart", "restart": {"serviceName": "chronyd.service"}}],
}
OUR_KEY = 'k:{"path":"/etc/crio/crio.conf.d/50-pinned-images"}'


@pytest.fixture
def cluster(fake_apiserver, crd_schemas):
    """The fake with the real CRDs, three workers and a control-plane node."""
    for name, role in (("w1", "worker"), ("w2", "worker"), ("w3", "worker"), ("m1", "master")):
        fake_apiserver.add(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {f"node-role.kubernetes.io/{role}": ""}},
            }
        )
    fake_apiserver.auth = {"host": fake_apiserver.url, "api_key": fake_apiserver.token}
    return fake_apiserver


def admin_apply(server, entry, manager="admin"):
    """An admin's server-side apply of their own entry."""
    server.handle(
        "PATCH",
        "/apis/operator.openshift.io/v1/machineconfigurations/cluster",
        {"fieldManager": manager},
        "application/apply-patch+yaml",
        {
            "apiVersion": "operator.openshift.io/v1",
            "kind": "MachineConfiguration",
            "metadata": {"name": "cluster"},
            "spec": {"nodeDisruptionPolicy": {"files": [entry]}},
        },
        manager,
    )


def run(args, capsys, check_mode=False, diff=False):
    return run_module(module, args, capsys, check_mode, diff)


def files_of(server):
    return server.get("MachineConfiguration", "cluster")["spec"]["nodeDisruptionPolicy"]["files"]


def test_the_entry_is_applied_beside_an_admins_and_owns_only_itself(cluster, capsys):
    add_machine_configuration(cluster)
    admin_apply(cluster, ADMIN_ENTRY)
    args = dict(cluster.auth, pools=["worker"], images=[A, B], apply=True)

    first = run(args, capsys, diff=True)
    assert first["rc"] == 0, first
    assert first["disruption_policy"] == {"file": None, "applied": True}
    assert first["applied"] == ["99-worker-pinned-images"]
    assert files_of(cluster) == [ADMIN_ENTRY, OUR_ENTRY]
    ours = cluster.managers("MachineConfiguration", "cluster")[("pinned-images", "Apply")]
    assert list(ours["fieldsV1"]["f:spec"]["f:nodeDisruptionPolicy"]["f:files"]) == [OUR_KEY]
    # The policy went first: the MachineConfig was applied once the MCO showed it.
    patches = [r.path.rsplit("/", 2)[-2] for r in cluster.requests if r.method == "PATCH"]
    assert patches == ["machineconfigurations", "machineconfigs"]
    status = cluster.get("MachineConfiguration", "cluster")["status"]["nodeDisruptionPolicyStatus"]
    assert OUR_ENTRY in status["clusterPolicies"]["files"]

    cluster.clear_requests()
    again = run(args, capsys)
    assert again["rc"] == 0 and not again["changed"] and again["disruption_policy"]["applied"] is False
    assert cluster.mutating_requests() == []

    # The admin's entry is theirs: their change of it is kept by the next run.
    admin_entry = dict(ADMIN_ENTRY, actions=[{"type": "Drain"}])
    admin_apply(cluster, admin_entry)
    assert run(dict(args, images=[A]), capsys)["rc"] == 0
    assert files_of(cluster) == [admin_entry, OUR_ENTRY]


def test_check_mode_predicts_and_changes_nothing(cluster, capsys):
    add_machine_configuration(cluster)
    check = run(dict(cluster.auth, pools=["worker"], images=[A], apply=True), capsys, check_mode=True, diff=True)
    assert check["rc"] == 0 and check["changed"], check
    assert check["disruption_policy"]["applied"] and check["applied"] == ["99-worker-pinned-images"]
    assert "nodeDisruptionPolicy" not in cluster.get("MachineConfiguration", "cluster")["spec"]
    assert cluster.get("MachineConfig", "99-worker-pinned-images") is None
    assert "crio.service" in check["diff"][0]["after"] and "(absent)" in check["diff"][0]["before_header"]


def test_an_edited_entry_is_drift_and_is_not_fought_over(cluster, capsys):
    add_machine_configuration(cluster)
    args = dict(cluster.auth, pools=["worker"], images=[A], apply=True)
    assert run(args, capsys)["rc"] == 0
    edited = dict(OUR_ENTRY, actions=[{"type": "Restart", "restart": {"serviceName": "crio.service"}}])
    # kubectl edit: a merge patch of the whole list.
    cluster.handle(
        "PATCH",
        "/apis/operator.openshift.io/v1/machineconfigurations/cluster",
        {"fieldManager": "kubectl-edit"},
        "application/merge-patch+json",
        {"spec": {"nodeDisruptionPolicy": {"files": [edited]}}},
        "admin",
    )

    drift = run(args, capsys, check_mode=True, diff=True)
    assert drift["rc"] == 1 and "was changed by another field manager" in drift["msg"]
    assert "kubectl-edit" in drift["msg"] and "disruption_policy to false" in drift["msg"]
    assert "it is Restart crio.service, not Reload crio.service" in drift["msg"]
    real = run(args, capsys)
    assert real["rc"] == 1 and "kubectl-edit" in real["msg"]
    assert files_of(cluster) == [edited]

    # Left to the admins: their Restart is no reboot, so the MachineConfigs go on.
    changed = run(dict(args, images=[A, B], disruption_policy=False), capsys)
    assert changed["rc"] == 0 and changed["applied"] == ["99-worker-pinned-images"]
    assert files_of(cluster) == [edited]


def test_refused_with_the_number_of_nodes_when_the_status_lacks_the_path(cluster, capsys):
    add_machine_configuration(cluster)
    cluster.add(
        {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": "master"},
            "spec": {"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/master": ""}}},
            "status": {"machineCount": 3},
        }
    )
    args = dict(cluster.auth, pools=["worker", "master"], images=[A], apply=True, disruption_policy=False)

    refused = run(args, capsys)
    assert refused["rc"] == 1
    assert refused["msg"].startswith(
        "applying the MachineConfigs would drain and reboot 6 nodes (3 of pool worker, "
        "3 of pool master): status.nodeDisruptionPolicyStatus.clusterPolicies of "
        f"MachineConfiguration 'cluster' has no policy for {DROPIN}"
    )
    assert "allow_reboot" in refused["msg"]
    assert refused["reboot"]["nodes"] == 6
    assert refused["reboot"]["pools"] == [{"pool": "worker", "nodes": 3}, {"pool": "master", "nodes": 3}]
    assert cluster.get("MachineConfig", "99-worker-pinned-images") is None
    assert cluster.get("MachineConfig", "99-master-pinned-images") is None
    assert run(args, capsys, check_mode=True)["reboot"]["nodes"] == 6

    allowed = run(dict(args, allow_reboot=True), capsys)
    assert allowed["rc"] == 0 and allowed["applied"] == ["99-worker-pinned-images", "99-master-pinned-images"]
    # Nothing changes now: nothing would reboot, so nothing is refused.
    assert run(args, capsys)["rc"] == 0


def test_refused_on_a_cluster_that_predates_the_policy(cluster, capsys):
    add_machine_configuration(cluster, supports_policies=False)
    refused = run(dict(cluster.auth, pools=["worker"], images=[A], apply=True), capsys)
    assert refused["rc"] == 1 and refused["reboot"]["nodes"] == 3
    assert "has no status.nodeDisruptionPolicyStatus" in refused["reboot"]["reason"]
    assert cluster.get("MachineConfig", "99-worker-pinned-images") is None


def test_refused_with_the_nodes_per_pool_when_the_cluster_does_not_serve_the_kind(cluster, capsys):
    # OpenShift before 4.14, or plain Kubernetes: no MachineConfiguration kind at all.
    cluster.remove_kind("MachineConfiguration")
    cluster.add(
        {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": "master"},
            "spec": {},
            "status": {"machineCount": 1},
        }
    )
    args = dict(cluster.auth, pools=["worker", "master"], images=[A], apply=True, disruption_policy=False)
    refused = run(args, capsys)
    assert refused["rc"] == 1
    assert refused["msg"].startswith(
        "applying the MachineConfigs would drain and reboot 4 nodes (3 of pool worker, "
        "1 of pool master): the cluster has no MachineConfiguration 'cluster'"
    )
    assert refused["reboot"]["pools"] == [{"pool": "worker", "nodes": 3}, {"pool": "master", "nodes": 1}]
    assert run(args, capsys, check_mode=True)["reboot"]["nodes"] == 4
    assert cluster.mutating_requests() == []
    # With the policy on, the missing object is named with the option that turns it off.
    failed = run(dict(args, disruption_policy=True), capsys)
    assert failed["rc"] == 1 and "disruption_policy to false" in failed["msg"] and "does not exist" in failed["msg"]


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_crd_without_the_policy_field_is_an_error_not_applied_every_run(cluster, capsys, check_mode):
    # OpenShift 4.14 to 4.16: the MachineConfiguration CRD has no spec.nodeDisruptionPolicy; the server prunes it.
    kind = cluster.kinds["MachineConfiguration"]
    kind.schema = copy.deepcopy(kind.schema)
    del kind.schema["properties"]["spec"]["properties"]["nodeDisruptionPolicy"]
    add_machine_configuration(cluster, supports_policies=False)
    args = dict(cluster.auth, pools=["worker"], images=[A], apply=True, allow_reboot=True)
    failed = run(args, capsys, check_mode=check_mode)
    assert failed["rc"] == 1
    assert failed["msg"].startswith(
        f"the API server dropped the node disruption policy for {DROPIN}: its "
        "MachineConfiguration 'cluster' (operator.openshift.io/v1) has no "
        "spec.nodeDisruptionPolicy (OpenShift before 4.17)"
    )
    assert "disruption_policy to false" in failed["msg"] and "allow_reboot" in failed["msg"]
    assert "nodeDisruptionPolicy" not in cluster.get("MachineConfiguration", "cluster")["spec"]
    assert cluster.get("MachineConfig", "99-worker-pinned-images") is None
    assert run(dict(args, disruption_policy=False), capsys, check_mode=check_mode)["rc"] == 0


def test_refused_when_the_mco_does_not_show_the_policy_in_time(cluster, capsys):
    add_machine_configuration(cluster, reconciling=False)
    refused = run(dict(cluster.auth, pools=["worker"], images=[A], apply=True, disruption_policy_timeout=0), capsys)
    assert refused["rc"] == 1 and "is not reconciled yet" in refused["reboot"]["reason"]
    assert refused["msg"].endswith(
        "the machine-config-operator did not show the policy within "
        "disruption_policy_timeout (0 s): run again, or give it longer, once the MCO is "
        "reconciling"
    )
    # The entry itself was applied; the MachineConfig was not.
    assert refused["disruption_policy"]["applied"] and files_of(cluster) == [OUR_ENTRY]
    assert cluster.get("MachineConfig", "99-worker-pinned-images") is None


@pytest.mark.parametrize("timeout", ["-1", "inf", "nan"])
def test_a_negative_or_endless_timeout_is_refused_before_anything(cluster, capsys, timeout):
    failed = run(
        dict(cluster.auth, pools=["worker"], images=[A], apply=True, disruption_policy_timeout=timeout), capsys
    )
    assert failed["rc"] == 1
    assert f"disruption_policy_timeout must be 0 or more seconds (finite), got {float(timeout)}" in failed["msg"]
    assert cluster.requests == []


def test_a_cluster_without_the_object_is_an_error_naming_the_option(cluster, capsys):
    failed = run(dict(cluster.auth, pools=["worker"], images=[A], apply=True), capsys)
    assert failed["rc"] == 1 and "MachineConfiguration 'cluster'" in failed["msg"]
    assert "disruption_policy to false" in failed["msg"] and cluster.mutating_requests() == []


def test_the_policy_file_is_byte_stable_and_valid(cluster, capsys, tmp_path):
    dest = tmp_path / "machineconfigs"
    first = run({"pools": ["worker"], "images": [A], "dest": str(dest)}, capsys)
    path = dest / "machineconfiguration-cluster-pinned-images.yaml"
    assert first["disruption_policy"]["file"] == str(path)
    content = path.read_bytes()
    assert content == (
        b"# Rendered by pinned.images (annotation pinned.images/rendered-by): a later render changes or removes it.\n"
        b"apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  annotations:\n"
        b"    argocd.argoproj.io/sync-options: Prune=false,Delete=false,ServerSideApply=true\n"
        b"    argocd.argoproj.io/sync-wave: '-1'\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"
        b"    pinned.images/rendered-by: pinned.images\n  name: cluster\nspec:\n"
        b"  nodeDisruptionPolicy:\n    files:\n    - actions:\n      - reload:\n          serviceName: crio.service\n"
        b"        type: Reload\n      path: /etc/crio/crio.conf.d/50-pinned-images\n"
    )
    # Another image changes the MachineConfig's file only.
    second = run({"pools": ["worker"], "images": [B], "dest": str(dest)}, capsys)["file_changes"]
    assert second == {"created": [], "changed": [str(dest / "99-worker-pinned-images.yaml")], "removed": []}
    assert path.read_bytes() == content
    path.write_text(content.decode().replace("Reload", "Reboot"))
    drift = run({"pools": ["worker"], "images": [B], "dest": str(dest)}, capsys, check_mode=True)
    assert str(path) in drift["file_changes"]["changed"]
    assert run({"pools": ["worker"], "images": [B], "dest": str(dest)}, capsys)["changed"]
    assert path.read_bytes() == content
    off = run({"pools": ["worker"], "images": [B], "dest": str(tmp_path / "off"), "disruption_policy": False}, capsys)
    assert off["disruption_policy"]["file"] is None and not (tmp_path / "off" / path.name).exists()

    # Both rendered files validate against the CRDs (and the policy's CEL rules) as the API server takes them.
    add_machine_configuration(cluster)
    for name, plural in ((path.name, "machineconfigurations"), ("99-worker-pinned-images.yaml", "machineconfigs")):
        obj = yaml.safe_load((dest / name).read_bytes())
        status, stored, warnings = cluster.handle(
            "PATCH",
            f"/apis/{obj['apiVersion']}/{plural}/{obj['metadata']['name']}",
            {"fieldManager": "gitops", "dryRun": "All", "fieldValidation": "Strict"},
            "application/apply-patch+yaml",
            obj,
            "admin",
        )
        assert (status, stored["kind"], warnings) == (200, obj["kind"], [])


@pytest.mark.parametrize(
    "actions, message",
    [
        ([{"type": "Reload"}], "reload is required when type is Reload, and forbidden otherwise"),
        ([{"type": "Reboot"}, {"type": "Drain"}], "Reboot action can only be specified standalone"),
        ([{"type": "Reload", "reload": {"serviceName": "crio"}}], "Invalid ${SERVICETYPE} in service name"),
    ],
)
def test_the_fake_refuses_what_the_crds_cel_rules_refuse(cluster, actions, message):
    from support.apiserver.schema import ApiError

    add_machine_configuration(cluster)
    body = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": "cluster"},
        "spec": {"nodeDisruptionPolicy": {"files": [{"path": "/etc/x", "actions": actions}]}},
    }
    with pytest.raises(ApiError) as raised:
        cluster.handle(
            "PATCH",
            "/apis/operator.openshift.io/v1/machineconfigurations/cluster",
            {"fieldManager": "t"},
            "application/apply-patch+yaml",
            body,
            "admin",
        )
    assert raised.value.code == 422 and message in raised.value.message
    assert "spec.nodeDisruptionPolicy.files[0].actions" in raised.value.message
