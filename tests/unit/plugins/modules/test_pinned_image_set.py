# SPDX-License-Identifier: GPL-3.0-or-later
"""pinned_image_set main(): server-side apply and delete against the fake API server (real HTTP, real
``kubernetes`` client), files in dest, validation before any write, check and diff mode.
"""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import marked
from ansible_collections.pinned.images.plugins.modules import pinned_image_set as module
from fixtures.module_runner import run_module

API = "machineconfiguration.openshift.io/v1"
KIND = "PinnedImageSet"
ROLE = "machineconfiguration.openshift.io/role"
A = "quay.io/openshift/app-a@sha256:" + "a" * 64
B = "quay.io/openshift/app-b@sha256:" + "b" * 64


def warnings_of(result):
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings", [])]


def run(args, capsys, check_mode=False, diff=False):
    return run_module(module, args, capsys, check_mode, diff)


@pytest.fixture
def conn(fake_apiserver):
    return {"host": fake_apiserver.url, "api_key": fake_apiserver.token}


def worker_set(conn, images=(A,), **extra):
    return {"name": "worker-pins", "images": list(images), "labels": {ROLE: "worker"}, **conn, **extra}


def patches(server):
    return [r for r in server.requests if r.method == "PATCH"]


# ---------------------------------------------------------------- cluster


def test_create_then_no_change(fake_apiserver, conn, capsys):
    first = run(worker_set(conn), capsys)
    assert first["rc"] == 0 and first["changed"] is True
    stored = fake_apiserver.get(KIND, "worker-pins")
    assert stored["spec"]["pinnedImages"] == [{"name": A}]
    assert stored["metadata"]["labels"] == {ROLE: "worker"}
    assert first["object"]["spec"] == stored["spec"]
    assert "managedFields" not in first["object"]["metadata"] and "resourceVersion" not in first["object"]["metadata"]
    (patch,) = patches(fake_apiserver)
    assert patch.content_type == "application/apply-patch+yaml"
    assert patch.query == {"fieldManager": "pinned-images", "force": "false"}
    assert first["definition"] == {
        "apiVersion": API,
        "kind": KIND,
        "metadata": {"name": "worker-pins", "labels": {ROLE: "worker"}},
        "spec": {"pinnedImages": [{"name": A}]},
    }
    version = stored["metadata"]["resourceVersion"]
    second = run(worker_set(conn), capsys)
    assert second["rc"] == 0 and second["changed"] is False
    assert fake_apiserver.get(KIND, "worker-pins")["metadata"]["resourceVersion"] == version
    assert fake_apiserver.token not in first["_raw"] + second["_raw"]


def test_update_with_diff(fake_apiserver, conn, capsys):
    run(worker_set(conn), capsys)
    result = run(worker_set(conn, images=(A, B)), capsys, diff=True)
    assert result["changed"] is True
    assert result["diff"]["before"]["spec"]["pinnedImages"] == [{"name": A}]
    assert result["diff"]["after"]["spec"]["pinnedImages"] == [{"name": A}, {"name": B}]
    assert "managedFields" not in result["diff"]["after"]["metadata"]
    assert result["diff"]["after_header"] == f"PinnedImageSet/worker-pins on {fake_apiserver.url}"
    assert [i["name"] for i in fake_apiserver.get(KIND, "worker-pins")["spec"]["pinnedImages"]] == [A, B]


def test_check_mode_uses_server_dry_run(fake_apiserver, conn, capsys):
    result = run(worker_set(conn), capsys, check_mode=True, diff=True)
    assert result["rc"] == 0 and result["changed"] is True
    assert result["diff"]["before"] == {} and result["diff"]["after"]["spec"]["pinnedImages"] == [{"name": A}]
    assert fake_apiserver.get(KIND, "worker-pins") is None
    assert [p.query.get("dryRun") for p in patches(fake_apiserver)] == ["All"]
    run(worker_set(conn), capsys)
    again = run(worker_set(conn), capsys, check_mode=True)
    assert again["changed"] is False


def test_invalid_set_lists_every_problem_and_touches_nothing(fake_apiserver, conn, capsys, tmp_path):
    args = {
        "name": "Bad_Name",
        "images": ["quay.io/openshift/app:latest", A, A],
        "labels": {ROLE: "worker"},
        "dest": str(tmp_path / "out"),
        "apply": True,
        **conn,
    }
    result = run(args, capsys)
    assert result["rc"] == 1 and result["failed"] is True
    problems = result["problems"]
    assert len(problems) == 3
    assert any("metadata.name" in p for p in problems)
    assert any("spec.pinnedImages[0].name" in p and "tag" in p for p in problems)
    assert any("spec.pinnedImages[2].name" in p and "duplicates" in p for p in problems)
    assert result["msg"].startswith("invalid PinnedImageSet, nothing was applied or written: 3 problems found")
    assert fake_apiserver.requests == []
    assert not (tmp_path / "out").exists()


def test_state_absent(fake_apiserver, conn, capsys):
    run(worker_set(conn), capsys)
    check = run({"name": "worker-pins", "state": "absent", **conn}, capsys, check_mode=True)
    assert check["changed"] is True and fake_apiserver.get(KIND, "worker-pins") is not None
    assert [r.query for r in fake_apiserver.requests if r.method == "DELETE"] == [{"dryRun": "All"}]
    gone = run({"name": "worker-pins", "state": "absent", **conn}, capsys, diff=True)
    assert gone["changed"] is True and fake_apiserver.get(KIND, "worker-pins") is None
    assert gone["diff"]["after"] == {} and gone["diff"]["before"]["metadata"]["name"] == "worker-pins"
    again = run({"name": "worker-pins", "state": "absent", **conn}, capsys)
    assert again["rc"] == 0 and again["changed"] is False


def test_conflict_fails_then_force_takes_over(fake_apiserver, conn, capsys):
    fake_apiserver.add(
        {
            "apiVersion": API,
            "kind": KIND,
            "metadata": {"name": "worker-pins", "labels": {ROLE: "master"}},
            "spec": {"pinnedImages": [{"name": A}]},
        },
        manager="argocd",
        operation="Apply",
    )
    failed = run(worker_set(conn), capsys)
    assert failed["rc"] == 1 and failed["status"] == 409
    assert "argocd" in failed["msg"] and ".metadata.labels.machineconfiguration.openshift.io/role" in failed["msg"]
    assert fake_apiserver.get(KIND, "worker-pins")["metadata"]["labels"] == {ROLE: "master"}
    forced = run(worker_set(conn, force_conflicts=True), capsys)
    assert forced["changed"] is True
    assert fake_apiserver.get(KIND, "worker-pins")["metadata"]["labels"] == {ROLE: "worker"}


def test_forbidden_and_bad_token_are_reported_without_the_token(fake_apiserver, conn, capsys):
    fake_apiserver.forbid("patch", "pinnedimagesets")
    forbidden = run(worker_set(conn), capsys)
    assert forbidden["rc"] == 1 and forbidden["status"] == 403
    assert "may not patch pinnedimagesets.machineconfiguration.openshift.io" in forbidden["msg"]
    bad = run(worker_set({"host": fake_apiserver.url, "api_key": "wrong-token-0123456789"}), capsys)
    assert bad["rc"] == 1 and bad["status"] == 401
    assert "wrong-token-0123456789" not in bad["_raw"]
    assert fake_apiserver.token not in forbidden["_raw"]


def test_crd_not_installed(fake_apiserver, conn, capsys):
    fake_apiserver.remove_kind(KIND)
    result = run(worker_set(conn), capsys)
    assert result["rc"] == 1 and result["status"] == 404
    assert "CustomResourceDefinition" in result["msg"]


def test_environment_connection(fake_apiserver, capsys, monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", fake_apiserver.url)
    monkeypatch.setenv("K8S_AUTH_API_KEY", fake_apiserver.token)
    result = run(worker_set({}), capsys)
    assert result["rc"] == 0 and result["changed"] is True
    assert fake_apiserver.get(KIND, "worker-pins") is not None


def test_kubeconfig_and_context(fake_apiserver, capsys):
    args = worker_set({"kubeconfig": str(fake_apiserver.kubeconfig_path), "context": "wrong-token"})
    assert run(args, capsys)["status"] == 401
    args["context"] = "fake"
    assert run(args, capsys)["changed"] is True


def test_pool_selector_is_pruned_by_the_v1_api_with_a_warning(fake_apiserver, conn, capsys, crd_schemas):
    result = run(
        worker_set(
            conn, pool_selector={"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}}
        ),
        capsys,
    )
    assert result["rc"] == 0
    assert result["definition"]["spec"]["machineConfigPoolSelector"]
    assert "machineConfigPoolSelector" not in fake_apiserver.get(KIND, "worker-pins")["spec"]
    assert warnings_of(result) == ['API server: unknown field "spec.machineConfigPoolSelector"']


def test_definition_with_annotations_and_dropped_fields(fake_apiserver, conn, capsys):
    definition = {
        "apiVersion": API,
        "kind": KIND,
        "metadata": {"name": "from-file", "annotations": {"owner": "team-a"}, "namespace": "ignored"},
        "spec": {"pinnedImages": [{"name": B}]},
        "status": {"x": 1},
    }
    result = run({"definition": definition, **conn}, capsys)
    assert result["rc"] == 0 and result["changed"] is True
    assert fake_apiserver.get(KIND, "from-file")["metadata"]["annotations"] == {"owner": "team-a"}
    assert warnings_of(result) == [
        "definition fields not used for a PinnedImageSet were dropped: status, metadata.namespace"
    ]


def test_unknown_option_combinations_fail(conn, capsys):
    assert "nothing to do" in run({"name": "x", "images": [A], "apply": False}, capsys)["msg"]
    missing = run({"name": "x", **conn}, capsys)
    assert missing["rc"] == 1 and "images" in missing["msg"]
    both = run({"name": "x", "definition": {"metadata": {"name": "x"}}, **conn}, capsys)
    assert both["rc"] == 1 and "mutually exclusive" in both["msg"]


# ---------------------------------------------------------------- files


def test_dest_writes_byte_stable_yaml_without_the_cluster(tmp_path, capsys):
    dest = tmp_path / "gitops" / "sets"
    args = {"name": "worker-pins", "images": [A, B], "labels": {"b": "2", ROLE: "worker", "a": "1"}, "dest": str(dest)}
    check = run(args, capsys, check_mode=True, diff=True)
    assert check["changed"] is True and not dest.exists()
    assert check["diff"]["before"] == "" and "worker-pins" in check["diff"]["after"]
    first = run(args, capsys)
    path = dest / "worker-pins.yaml"
    assert first["changed"] is True and first["path"] == str(path)
    assert "object" not in first
    content = path.read_bytes()
    assert yaml.safe_load(content) == marked(first["definition"])
    assert (
        content
        == (
            "# Rendered by pinned.images (annotation pinned.images/rendered-by): a later render changes or removes it.\n"
            "apiVersion: machineconfiguration.openshift.io/v1\n"
            "kind: PinnedImageSet\n"
            "metadata:\n"
            "  annotations:\n"
            "    pinned.images/rendered-by: pinned.images\n"
            "  labels:\n"
            "    a: '1'\n"
            "    b: '2'\n"
            "    machineconfiguration.openshift.io/role: worker\n"
            "  name: worker-pins\n"
            "spec:\n"
            "  pinnedImages:\n"
            f"  - name: {A}\n"
            f"  - name: {B}\n"
        ).encode()
    )
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    reordered = dict(args, labels={"a": "1", ROLE: "worker", "b": "2"})
    second = run(reordered, capsys)
    assert second["changed"] is False and path.read_bytes() == content
    removed = run({"name": "worker-pins", "state": "absent", "dest": str(dest)}, capsys, diff=True)
    assert removed["changed"] is True and not path.exists()
    assert "worker-pins" in removed["diff"]["before"]


def test_dest_and_apply(fake_apiserver, conn, capsys, tmp_path):
    result = run(worker_set(conn, dest=str(tmp_path), apply=True), capsys, diff=True)
    assert result["changed"] is True
    assert (tmp_path / "worker-pins.yaml").is_file() and fake_apiserver.get(KIND, "worker-pins") is not None
    assert isinstance(result["diff"], list) and len(result["diff"]) == 2


def test_failed_apply_writes_no_file(fake_apiserver, conn, capsys, tmp_path):
    fake_apiserver.forbid("*", "pinnedimagesets")
    dest = tmp_path / "out"
    result = run(worker_set(conn, dest=str(dest), apply=True), capsys)
    assert result["rc"] == 1 and result["status"] == 403
    assert not dest.exists()


def test_dest_that_is_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    result = run({"name": "x", "images": [A], "dest": str(tmp_path / "f")}, capsys)
    assert result["rc"] == 1 and "is not a directory" in result["msg"]


@pytest.mark.parametrize("name", ["worker-pins\n", "Worker", "-x", "x" * 254, ""])
def test_absent_refuses_a_name_that_is_not_an_rfc_1123_subdomain(tmp_path, capsys, name):
    # A trailing newline slipped through a `re.match(...$)` check and named the file "worker-pins\n.yaml".
    (tmp_path / "worker-pins.yaml").write_text("kept")
    result = run({"name": name, "state": "absent", "dest": str(tmp_path)}, capsys)
    assert result["rc"] == 1 and "it must be an RFC 1123 subdomain" in result["msg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["worker-pins.yaml"]


def test_a_dict_kubeconfig_and_a_proxy_password_are_never_shown(fake_apiserver, capsys):
    config = yaml.safe_load(fake_apiserver.kubeconfig_path.read_text())
    created = run(worker_set({"kubeconfig": config}), capsys)
    assert created["rc"] == 0 and created["changed"] is True
    rejected = run(worker_set({"kubeconfig": config, "context": "wrong-token"}), capsys)
    assert rejected["rc"] == 1 and rejected["status"] == 401
    from support.ports import free_port

    proxy = f"http://proxy-user:pr0xy-pa55word@127.0.0.1:{free_port()}"
    proxied = run(worker_set({"host": fake_apiserver.url, "api_key": fake_apiserver.token, "proxy": proxy}), capsys)
    assert proxied["rc"] == 1 and "cannot reach the Kubernetes API server" in proxied["msg"]
    for result in (created, rejected, proxied):
        for secret in (fake_apiserver.token, "not-the-token", "pr0xy-pa55word"):
            assert secret not in result["_raw"]


def test_dest_reports_the_file_as_created_changed_or_removed(tmp_path, capsys):
    path = str(tmp_path / "worker-pins.yaml")
    args = {"name": "worker-pins", "images": [A], "dest": str(tmp_path)}
    assert run(args, capsys)["file_changes"] == {"created": [path], "changed": [], "removed": []}
    assert run(args, capsys)["file_changes"] == {"created": [], "changed": [], "removed": []}
    edited = run(dict(args, images=[A, B]), capsys, check_mode=True)
    assert edited["file_changes"] == {"created": [], "changed": [path], "removed": []}
    gone = run({"name": "worker-pins", "state": "absent", "dest": str(tmp_path)}, capsys)
    assert gone["file_changes"] == {"created": [], "changed": [], "removed": [path]}


def test_a_definition_copied_from_the_cluster_with_a_stale_resource_version_applies(fake_apiserver, conn, capsys):
    # Server-side apply is declarative: the module sends no resourceVersion, so a definition taken from
    # `kubectl get -o yaml` long ago does not meet the API server's 409 for a stale one.
    fake_apiserver.add(
        {"apiVersion": API, "kind": KIND, "metadata": {"name": "copied"}, "spec": {"pinnedImages": [{"name": A}]}}
    )
    stale = fake_apiserver.get(KIND, "copied")
    fake_apiserver.add(dict(stale, spec={"pinnedImages": [{"name": A}, {"name": B}]}))
    definition = dict(stale, spec={"pinnedImages": [{"name": B}]})
    assert (
        definition["metadata"]["resourceVersion"] != fake_apiserver.get(KIND, "copied")["metadata"]["resourceVersion"]
    )
    result = run({"definition": definition, **conn}, capsys)
    assert result["rc"] == 0, result["msg"] if "msg" in result else result
    applied = [r for r in fake_apiserver.requests if r.method == "PATCH"]
    assert "resourceVersion" not in applied[-1].body["metadata"]
    assert {"name": B} in fake_apiserver.get(KIND, "copied")["spec"]["pinnedImages"]


def test_a_users_file_of_the_sets_name_is_never_replaced_nor_removed(tmp_path, capsys):
    mine = tmp_path / "worker-pins.yaml"
    mine.write_text("keep: true\n")
    for args in (
        {"name": "worker-pins", "images": [A], "dest": str(tmp_path)},
        {"name": "worker-pins", "state": "absent", "dest": str(tmp_path)},
    ):
        failed = run(args, capsys)
        assert failed["rc"] == 1 and failed["msg"].startswith(f"{mine} is not ours"), failed
        assert mine.read_text() == "keep: true\n"
