# SPDX-License-Identifier: GPL-3.0-or-later
"""pinned_image_set_info main(): sets, pools and nodes from the fake API server (real HTTP, real ``kubernetes``
client) and from files; per-node image lists as the machine-config-operator computes them."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.pinned.images.plugins.modules import pinned_image_set_info as module
from fixtures.module_runner import run_module
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set, role_pool

A = "quay.io/openshift/app-a@sha256:" + "a" * 64
B = "quay.io/openshift/app-b@sha256:" + "b" * 64
C = "quay.io/openshift/app-c@sha256:" + "c" * 64


def run(args, capsys, check_mode=False):
    return run_module(module, args, capsys, check_mode)


def warnings_of(result):
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings", [])]


def pis(name, images, role=None):
    return pinned_image_set(name, images, {ROLE: role} if role else None)


def pool(name, set_roles=None):
    return role_pool(
        name,
        set_roles or [name],
        f"node-role.kubernetes.io/{name}",
        labels={f"pools.operator.machineconfiguration.openshift.io/{name}": ""},
    )


def node(name, *roles):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {f"node-role.kubernetes.io/{r}": "" for r in roles}},
    }


@pytest.fixture
def cluster(fake_apiserver):
    for obj in (
        pis("worker-set", [B, A], "worker"),
        pis("master-set", [C], "master"),
        pis("infra-set", [C, A], "infra"),
        pool("worker"),
        pool("master"),
        pool("infra", set_roles=["worker", "infra"]),
        node("master-0", "master"),
        node("worker-0", "worker"),
        node("infra-0", "worker", "infra"),
    ):
        fake_apiserver.add(obj)
    return {"cluster": True, "host": fake_apiserver.url, "api_key": fake_apiserver.token}


def by_name(items):
    return {item["name"]: item for item in items}


def test_cluster_nodes_sets_and_pools(fake_apiserver, cluster, capsys):
    result = run(cluster, capsys, check_mode=True)
    assert result["rc"] == 0 and result["changed"] is False
    nodes = by_name(result["nodes"])
    assert list(nodes) == ["infra-0", "master-0", "worker-0"]
    assert nodes["worker-0"] == {"name": "worker-0", "pools": ["worker"], "images": [A, B], "sets": ["worker-set"]}
    assert nodes["master-0"] == {"name": "master-0", "pools": ["master"], "images": [C], "sets": ["master-set"]}
    # infra-0 is in the custom pool and in worker; the custom pool selects worker and infra sets.
    assert nodes["infra-0"]["pools"] == ["infra", "worker"]
    assert nodes["infra-0"]["images"] == [A, B, C]
    assert sorted(nodes["infra-0"]["sets"]) == ["infra-set", "worker-set"]
    sets = by_name(result["sets"])
    assert sets["worker-set"]["images"] == [B, A] and sets["worker-set"]["source"] == "cluster"
    assert sets["worker-set"]["pools"] == ["infra", "worker"]
    pools = by_name(result["pools"])
    assert pools["worker"]["images"] == [A, B] and pools["worker"]["sets"] == ["worker-set"]
    assert pools["worker"]["missing_sets"] == [] and pools["worker"]["source"] == "cluster"
    assert {r.method for r in fake_apiserver.requests} == {"GET"}
    lists = {
        r.path for r in fake_apiserver.requests if r.path.endswith(("pinnedimagesets", "machineconfigpools", "nodes"))
    }
    assert lists == {
        "/apis/machineconfiguration.openshift.io/v1/pinnedimagesets",
        "/apis/machineconfiguration.openshift.io/v1/machineconfigpools",
        "/api/v1/nodes",
    }


def test_given_nodes_replace_the_cluster_nodes(fake_apiserver, cluster, capsys):
    result = run(
        dict(cluster, nodes=[{"name": "new-worker", "labels": {"node-role.kubernetes.io/worker": ""}}]), capsys
    )
    assert result["nodes"] == [{"name": "new-worker", "pools": ["worker"], "images": [A, B], "sets": ["worker-set"]}]
    assert not any(r.path == "/api/v1/nodes" for r in fake_apiserver.requests)


def test_files_override_cluster_sets_with_a_warning(cluster, capsys, tmp_path):
    (tmp_path / "worker.yaml").write_text(yaml.safe_dump(pis("worker-set", [C], "worker")))
    result = run(dict(cluster, paths=[str(tmp_path)]), capsys)
    assert result["rc"] == 0
    assert by_name(result["nodes"])["worker-0"]["images"] == [C]
    assert by_name(result["sets"])["worker-set"]["source"] == str(tmp_path / "worker.yaml")
    assert warnings_of(result) == [
        f"PinnedImageSet 'worker-set' from {tmp_path / 'worker.yaml'} replaces the one from cluster"
    ]


def test_set_objects_and_paths_together(capsys, tmp_path):
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(pis("master-set", [B], "master")))
    args = {
        "sets": [
            {"apiVersion": "v1", "kind": "List", "items": [pis("worker-set", [A], "worker")]},
            str(tmp_path / "master.yaml"),
        ],
        "nodes": [
            {"name": "w", "labels": {"node-role.kubernetes.io/worker": ""}},
            {"name": "m", "labels": {"node-role.kubernetes.io/master": ""}},
        ],
    }
    result = run(args, capsys)
    assert result["rc"] == 0
    assert [(s["name"], s["source"]) for s in result["sets"]] == [
        ("worker-set", "sets[0] items[0]"),
        ("master-set", str(tmp_path / "master.yaml")),
    ]
    assert [(n["name"], n["images"]) for n in result["nodes"]] == [("w", [A]), ("m", [B])]


def test_a_bad_set_object_is_named(capsys):
    result = run({"sets": [pis("Bad_Name", [A], "worker")]}, capsys)
    assert result["rc"] == 1 and "sets[0]" in result["msg"] and "Bad_Name" in result["msg"]


def test_offline_from_files_with_default_pools(fake_apiserver, capsys, tmp_path):
    docs = [pis("worker-set", [A], "worker"), pis("master-set", [B], "master"), {"kind": "ConfigMap"}]
    (tmp_path / "sets.yaml").write_text(yaml.safe_dump_all(docs))
    args = {
        "paths": [str(tmp_path / "sets.yaml")],
        "nodes": [
            {"name": "w", "labels": {"node-role.kubernetes.io/worker": ""}},
            {"name": "m", "labels": {"node-role.kubernetes.io/master": ""}},
            {"name": "bare"},
        ],
    }
    result = run(args, capsys)
    assert result["rc"] == 0
    assert [(p["name"], p["source"]) for p in result["pools"]] == [("master", "default"), ("worker", "default")]
    assert result["nodes"] == [
        {"name": "w", "pools": ["worker"], "images": [A], "sets": ["worker-set"]},
        {"name": "m", "pools": ["master"], "images": [B], "sets": ["master-set"]},
        {"name": "bare", "pools": [], "images": [], "sets": []},
    ]
    assert fake_apiserver.requests == []


def test_pools_option_and_pool_files(capsys, tmp_path):
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(pool("gpu", set_roles=["gpu"])))
    (tmp_path / "set.yaml").write_text(yaml.safe_dump(pis("gpu-set", [C], "gpu")))
    result = run(
        {
            "paths": [str(tmp_path)],
            "pools": ["worker"],
            "nodes": [{"name": "g", "labels": {"node-role.kubernetes.io/gpu": ""}}],
        },
        capsys,
    )
    assert [(p["name"], p["source"]) for p in result["pools"]] == [
        ("gpu", str(tmp_path / "pool.yaml")),
        ("worker", "pools"),
    ]
    assert result["nodes"] == [{"name": "g", "pools": ["gpu"], "images": [C], "sets": ["gpu-set"]}]


def test_pool_reference_to_missing_set(capsys):
    referencing = pool("worker")
    referencing["spec"]["pinnedImageSets"] = [{"name": "not-there"}]
    result = run({"pools": [referencing]}, capsys)
    assert result["pools"][0]["missing_sets"] == ["not-there"]


def test_ambiguous_node_gets_an_error_entry(capsys):
    pools = [pool("gpu"), pool("infra"), pool("worker")]
    labels = {"node-role.kubernetes.io/gpu": "", "node-role.kubernetes.io/infra": ""}
    result = run({"pools": pools, "nodes": [{"name": "x", "labels": labels}]}, capsys)
    assert result["rc"] == 0
    (entry,) = result["nodes"]
    assert entry["images"] == [] and "custom pools" in entry["error"]


def test_invalid_files_list_every_problem(capsys, tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(pis("a", ["quay.io/openshift/app:latest"])))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(pis("B", [A])))
    result = run({"paths": [str(tmp_path)]}, capsys)
    assert result["rc"] == 1
    assert len(result["problems"]) == 2
    assert any("a.yaml" in p and "tag" in p for p in result["problems"])
    assert any("b.yaml" in p and "metadata.name" in p for p in result["problems"])


def test_forbidden_nodes(fake_apiserver, cluster, capsys):
    fake_apiserver.forbid("list", "nodes")
    result = run(cluster, capsys)
    assert result["rc"] == 1 and result["status"] == 403
    assert "may not list nodes" in result["msg"]


def test_crd_missing_on_plain_kubernetes(fake_apiserver, cluster, capsys):
    fake_apiserver.remove_kind("PinnedImageSet")
    result = run(cluster, capsys)
    assert result["rc"] == 1 and "CustomResourceDefinition" in result["msg"]


def test_a_dict_kubeconfig_and_a_proxy_password_are_never_shown(fake_apiserver, cluster, capsys):
    from support.ports import free_port

    config = yaml.safe_load(fake_apiserver.kubeconfig_path.read_text())
    read = run({"cluster": True, "kubeconfig": config}, capsys)
    assert read["rc"] == 0 and sorted(by_name(read["nodes"])) == ["infra-0", "master-0", "worker-0"]
    rejected = run({"cluster": True, "kubeconfig": config, "context": "wrong-token"}, capsys)
    assert rejected["rc"] == 1 and rejected["status"] == 401
    proxy = f"http://proxy-user:pr0xy-pa55word@127.0.0.1:{free_port()}"
    proxied = run(dict(cluster, proxy=proxy), capsys)
    assert proxied["rc"] == 1 and "cannot reach the Kubernetes API server" in proxied["msg"]
    for result in (read, rejected, proxied):
        for secret in (fake_apiserver.token, "not-the-token", "pr0xy-pa55word"):
            assert secret not in result["_raw"]
