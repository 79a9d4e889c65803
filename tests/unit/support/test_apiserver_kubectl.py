# SPDX-License-Identifier: GPL-3.0-or-later
"""The fake API server checked with a second real client: Debian's kubectl 1.32 (hack/debian_debs.sh unpacks it),
over HTTPS (kubectl sends no bearer token over plain HTTP) with a kubeconfig in the test's tmp dir.

Each case is what kubectl shows against a real kube-apiserver. kubectl runs with ``--validate=false``: the fake
serves no OpenAPI documents, and validation is the server's job here anyway."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from fixtures.openshift_objects import pinned_image_set

KUBECTL = Path(__file__).resolve().parents[3] / ".build" / "trixie" / "kubectl" / "usr" / "bin" / "kubectl"
IMAGE = "quay.io/openshift/app-a@sha256:" + "a" * 64
PIS = "pinnedimagesets.machineconfiguration.openshift.io"


@pytest.fixture
def kubectl(fake_apiserver_tls, tmp_path):
    server = fake_apiserver_tls
    server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"role": "worker"}}})
    server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")

    def run(*args, stdin=None, context=None):
        command = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
        if context:
            command += ["--context", context]
        proc = subprocess.run(
            command + list(args), input=stdin, capture_output=True, text=True, timeout=60, check=False
        )
        return proc.returncode, proc.stdout + proc.stderr

    run.server = server
    return run


def manifest(**changes):
    obj = pinned_image_set("s1", [IMAGE], {"team": "a"})
    obj.update(changes)
    return yaml.safe_dump(obj)


def test_get_list_and_field_selectors(kubectl):
    rc, out = kubectl("get", "nodes", "-o", "name")
    assert rc == 0 and out.split() == ["node/n1", "node/n2"]
    rc, out = kubectl("get", "nodes", "-l", "role=worker", "-o", "name")
    assert out.split() == ["node/n1"]
    rc, out = kubectl("get", "nodes", "--field-selector", "metadata.name!=n1", "-o", "name")
    assert rc == 0 and out.split() == ["node/n2"]
    rc, out = kubectl("get", "nodes", "--field-selector", "spec.unschedulable=true")
    assert rc == 1 and "field label not supported: spec.unschedulable" in out
    rc, out = kubectl("get", "node", "n9")
    assert rc == 1 and 'Error from server (NotFound): nodes "n9" not found' in out


def test_create_apply_replace_and_generation(kubectl, crd_schemas):
    rc, out = kubectl("create", "--validate=false", "-f", "-", stdin=manifest())
    assert rc == 0 and f"{PIS}/s1 created" in out.replace("pinnedimageset.", "pinnedimagesets.")
    rc, out = kubectl("create", "--validate=false", "-f", "-", stdin=manifest())
    assert rc == 1 and "(AlreadyExists)" in out and f'{PIS} "s1" already exists' in out
    rc, out = kubectl("apply", "--server-side", "--validate=false", "-f", "-", stdin=manifest())
    assert rc == 0 and "serverside-applied" in out
    assert kubectl.server.get("PinnedImageSet", "s1")["metadata"]["generation"] == 1
    changed = pinned_image_set("s1", [IMAGE, IMAGE.replace("app-a", "app-b")], {"team": "a"})
    rc, out = kubectl("replace", "--validate=false", "-f", "-", stdin=yaml.safe_dump(changed))
    assert rc == 0 and "replaced" in out
    assert kubectl.server.get("PinnedImageSet", "s1")["metadata"]["generation"] == 2
    rc, out = kubectl(
        "apply",
        "--server-side",
        "--validate=false",
        "--field-manager",
        "other",
        "-f",
        "-",
        stdin=manifest(metadata={"name": "s1", "labels": {"team": "b"}}),
    )
    # The label is owned by kubectl's apply and by the create (the replace left it as it was): one conflict per owner.
    assert rc == 1 and "Apply failed with 2 conflicts" in out
    assert 'conflict with "kubectl" using machineconfiguration.openshift.io/v1: .metadata.labels.team' in out
    assert 'conflict with "kubectl-create" using machineconfiguration.openshift.io/v1: .metadata.labels.team' in out


def test_stale_resource_versions_are_conflicts(kubectl):
    kubectl("create", "--validate=false", "-f", "-", stdin=manifest())
    stale = kubectl.server.get("PinnedImageSet", "s1")["metadata"]["resourceVersion"]
    kubectl("label", "pinnedimageset", "s1", "x=y")
    body = pinned_image_set("s1", [IMAGE], {"team": "a"})
    body["metadata"]["resourceVersion"] = stale
    rc, out = kubectl("replace", "--validate=false", "-f", "-", stdin=yaml.safe_dump(body))
    assert rc == 1 and "the object has been modified; please apply your changes to the latest version" in out
    patch = json.dumps({"metadata": {"resourceVersion": stale, "labels": {"z": "1"}}})
    rc, out = kubectl("patch", "pinnedimageset", "s1", "--type=merge", "-p", patch)
    assert rc == 1 and "(Conflict)" in out and "the object has been modified" in out
    rc, out = kubectl("apply", "--server-side", "--validate=false", "-f", "-", stdin=yaml.safe_dump(body))
    assert rc == 1 and "the object has been modified" in out
    assert "z" not in kubectl.server.get("PinnedImageSet", "s1")["metadata"]["labels"]


def test_json_patch_and_delete_dry_run(kubectl):
    rc, out = kubectl(
        "patch",
        "node",
        "n1",
        "--type=json",
        "-p",
        '[{"op": "add", "path": "/metadata/labels/x", "value": "y"}, {"op": "remove", "path": "/metadata/labels/role"}]',
    )
    assert rc == 0, out
    assert kubectl.server.get("Node", "n1")["metadata"]["labels"] == {"x": "y"}
    rc, out = kubectl(
        "patch", "node", "n1", "--type=json", "-p", '[{"op": "test", "path": "/metadata/labels/x", "value": "no"}]'
    )
    assert rc == 1 and "testing value /metadata/labels/x failed" in out
    rc, out = kubectl("delete", "node", "n1", "--dry-run=server")
    assert rc == 0 and "(server dry run)" in out
    assert kubectl.server.get("Node", "n1") is not None
    rc, out = kubectl("delete", "node", "n1")
    assert rc == 0 and kubectl.server.get("Node", "n1") is None


def test_auth_errors(kubectl):
    rc, out = kubectl("get", "nodes", context="wrong-token")
    assert rc == 1 and "error: You must be logged in to the server" in out
    kubectl.server.forbid("delete", "nodes")
    rc, out = kubectl("delete", "node", "n2")
    assert rc == 1 and 'Error from server (Forbidden): nodes "n2" is forbidden' in out


def test_validation_errors_read_as_the_real_server_s(kubectl, crd_schemas):
    rc, out = kubectl(
        "create", "--validate=false", "-f", "-", stdin=yaml.safe_dump(pinned_image_set("t", ["quay.io/a/b:v1"]))
    )
    assert rc == 1 and 'The PinnedImageSet "t" is invalid: \n* spec.pinnedImages[0].name: Invalid value' in out
    many = pinned_image_set("many", ["quay.io/a/b@sha256:%064x" % n for n in range(501)])
    rc, out = kubectl("create", "--validate=false", "-f", "-", stdin=yaml.safe_dump(many))
    assert rc == 1
    assert 'The PinnedImageSet "many" is invalid: spec.pinnedImages: Too many: 501: must have at most 500 items' in out
    assert len(out) < 2000


def test_list_map_entries_of_the_machine_configuration_have_one_owner_each(kubectl, crd_schemas):
    from support.apiserver.mco import add_machine_configuration

    add_machine_configuration(kubectl.server)

    def policy(path, service, manager):
        body = {
            "apiVersion": "operator.openshift.io/v1",
            "kind": "MachineConfiguration",
            "metadata": {"name": "cluster"},
            "spec": {
                "nodeDisruptionPolicy": {
                    "files": [{"path": path, "actions": [{"type": "Reload", "reload": {"serviceName": service}}]}]
                }
            },
        }
        return kubectl(
            "apply",
            "--server-side",
            "--validate=false",
            "--field-manager",
            manager,
            "-f",
            "-",
            stdin=yaml.safe_dump(body),
        )

    assert policy("/etc/a", "a.service", "team-a")[0] == 0
    assert policy("/etc/b", "b.service", "team-b")[0] == 0
    files = kubectl.server.get("MachineConfiguration", "cluster")["spec"]["nodeDisruptionPolicy"]["files"]
    assert [f["path"] for f in files] == ["/etc/a", "/etc/b"]
    rc, out = policy("/etc/a", "other.service", "team-b")
    assert rc == 1 and 'conflict with "team-a" using operator.openshift.io/v1' in out
    assert '.spec.nodeDisruptionPolicy.files[path="/etc/a"].actions' in out
    rc, out = kubectl("get", "machineconfiguration", "cluster", "-o", "json")
    assert rc == 0 and "b.service" in out and json.loads(out)["status"]["observedGeneration"] == 3
    rc, out = policy("/etc/c", "not a service", "team-c")
    assert rc == 1 and 'The MachineConfiguration "cluster" is invalid' in out
    assert "spec.nodeDisruptionPolicy.files[2].actions[0].reload.serviceName" in out
