# SPDX-License-Identifier: GPL-3.0-or-later
"""machine_config main(): files in dest, server-side apply and delete against the fake API server, check/diff mode."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import HEADER, marked
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import dump_yaml
from ansible_collections.pinned.images.plugins.module_utils._openshift.disruption_policy import POLICY_FILE_NAME
from ansible_collections.pinned.images.plugins.modules import machine_config as module
from fixtures.module_runner import run_module
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set
from support.apiserver.mco import add_machine_configuration

A = "quay.io/org/a@sha256:" + "a" * 64
B = "quay.io/org/b@sha256:" + "b" * 64
DROP_IN_AB = (
    '[crio]\n  [crio.image]\n    pinned_images = ["quay.io/org/a@sha256:'
    + "a" * 64
    + '", "quay.io/org/b@sha256:'
    + "b" * 64
    + '"]\n'
)


def run(args, capsys, check_mode=False, diff=False):
    return run_module(module, args, capsys, check_mode, diff)


def drop_in(mc) -> str:
    source = mc["spec"]["config"]["storage"]["files"][0]["contents"]["source"]
    assert source.startswith("data:;base64,")
    return base64.b64decode(source[len("data:;base64,") :]).decode()


def test_render_only(capsys):
    result = run({"pools": ["worker"], "images": [B, A], "return_objects": True, "return_images": True}, capsys)
    assert result["rc"] == 0 and not result["changed"]
    assert result["files"] == [] and result["applied"] == [] and result["deleted"] == []
    (mc,) = result["machine_configs"]
    assert mc["metadata"] == {"name": "99-worker-pinned-images", "labels": {ROLE: "worker"}}
    assert mc["spec"]["config"]["ignition"]["version"] == "3.2.0"
    assert drop_in(mc) == DROP_IN_AB
    assert result["pools"] == [
        {"pool": "worker", "name": "99-worker-pinned-images", "image_count": 2, "set_names": [], "images": [A, B]}
    ]


def test_the_result_is_a_summary_unless_images_or_objects_are_asked_for(tmp_path, capsys):
    images = [f"quay.io/org/app-{n}@sha256:{n:064x}" for n in range(300)]
    result = run({"pools": ["worker"], "images": images, "dest": str(tmp_path)}, capsys)
    assert "machine_configs" not in result
    assert result["pools"] == [
        {
            "pool": "worker",
            "name": "99-worker-pinned-images",
            "image_count": 300,
            "set_names": [],
            "added": sorted(images),
            "removed": [],
        }
    ]
    again = run({"pools": ["worker"], "images": images[1:], "dest": str(tmp_path)}, capsys)
    assert (again["pools"][0]["added"], again["pools"][0]["removed"]) == ([], [images[0]])
    # No image is repeated in the result (Ansible's invocation echoes the options): it stays small.
    summary = {key: value for key, value in again.items() if key not in ("invocation", "_raw")}
    assert len(json.dumps(summary)) < 1000
    assert "added" not in run({"pools": ["worker"], "images": images}, capsys)["pools"][0]


def test_dest_files_are_written_once_and_stable(tmp_path, capsys):
    dest = tmp_path / "gitops" / "machineconfigs"
    args = {
        "pools": ["worker", "master"],
        "images": [A, B],
        "dest": str(dest),
        "ignition_version": "3.4.0",
        "name": "50-{pool}-pins",
    }
    check = run(args, capsys, check_mode=True, diff=True)
    # Two MachineConfigs and the node disruption policy.
    assert check["changed"] and not dest.exists() and len(check["diff"]) == 3
    first = run(dict(args, return_objects=True), capsys)
    assert first["changed"]
    assert first["files"] == [
        str(dest / "50-worker-pins.yaml"),
        str(dest / "50-master-pins.yaml"),
        str(dest / POLICY_FILE_NAME),
    ]
    assert first["disruption_policy"] == {"file": str(dest / POLICY_FILE_NAME), "applied": False}
    content = (dest / "50-worker-pins.yaml").read_bytes()
    loaded = yaml.safe_load(content)
    assert loaded == marked(first["machine_configs"][0])
    assert loaded["spec"]["config"]["ignition"]["version"] == "3.4.0"
    assert drop_in(loaded) == DROP_IN_AB
    again = run(dict(args, images=[B, A, A]), capsys)
    assert not again["changed"] and (dest / "50-worker-pins.yaml").read_bytes() == content
    gone = run({"pools": ["worker", "master"], "dest": str(dest), "state": "absent", "name": "50-{pool}-pins"}, capsys)
    # state=absent leaves the policy: removing the file from the nodes is a change it covers too.
    assert gone["changed"] and sorted(p.name for p in dest.iterdir()) == [POLICY_FILE_NAME]
    assert gone["disruption_policy"] == {"file": None, "applied": False}


def test_sets_pick_images_per_pool(tmp_path, capsys):
    sets_dir = tmp_path / "sets"
    sets_dir.mkdir()
    (sets_dir / "w.yaml").write_text(yaml.safe_dump(pinned_image_set("w", [B, A], {ROLE: "worker"})))
    (sets_dir / "m.yml").write_text(yaml.safe_dump(pinned_image_set("m", [A], {ROLE: "master"})))
    result = run(
        {
            "pools": ["worker", "master", "infra"],
            "sets": [str(sets_dir)],
            "return_objects": True,
            "return_images": True,
        },
        capsys,
    )
    assert [(p["pool"], p["images"], p["image_count"], p["set_names"]) for p in result["pools"]] == [
        ("worker", [A, B], 2, ["w"]),
        ("master", [A], 1, ["m"]),
        ("infra", [], 0, []),
    ]
    names = [mc["metadata"]["name"] for mc in result["machine_configs"]]
    assert names == ["99-worker-pinned-images", "99-master-pinned-images"]


def test_bad_sets_fail_with_every_problem_and_nothing_is_written(tmp_path, capsys, fake_apiserver):
    dest = tmp_path / "out"
    bad = pinned_image_set(
        "Bad_Name", ["quay.io/org/a:v1", A, A] + [f"quay.io/org/x@sha256:{n:064x}" for n in range(498)]
    )
    result = run(
        {
            "pools": ["worker"],
            "sets": [bad],
            "dest": str(dest),
            "apply": True,
            "host": fake_apiserver.url,
            "api_key": fake_apiserver.token,
        },
        capsys,
    )
    assert result["rc"] == 1
    assert len(result["problems"]) == 4
    text = "\n".join(result["problems"])
    assert "sets[0]: PinnedImageSet 'Bad_Name': metadata.name" in text
    assert "501 items" in text and "is a tag reference" in text and "duplicates" in text
    assert not dest.exists()
    assert fake_apiserver.mutating_requests() == [] and fake_apiserver.objects == {}
    assert fake_apiserver.token not in json.dumps(result)


def test_option_errors(capsys):
    assert "ignition_version" in run({"pools": ["worker"], "images": [A], "ignition_version": "2.2.0"}, capsys)["msg"]
    assert "any of the following are missing: images, sets" in run({"pools": ["worker"]}, capsys)["msg"]
    assert "no pools" in run({"images": [A]}, capsys)["msg"]
    bad_name = run({"pools": ["worker"], "images": [A], "name": "Pins_{pool}"}, capsys)
    assert bad_name["rc"] == 1 and "RFC 1123" in bad_name["msg"]


def test_apply_and_delete_against_the_api_server(capsys, fake_apiserver):
    add_machine_configuration(fake_apiserver)
    auth = {"host": fake_apiserver.url, "api_key": fake_apiserver.token}
    args = dict(auth, pools=["worker"], images=[A, B], apply=True)

    check = run(args, capsys, check_mode=True, diff=True)
    assert check["rc"] == 0 and check["changed"] and check["applied"] == ["99-worker-pinned-images"]
    assert check["disruption_policy"] == {"file": None, "applied": True}
    assert list(fake_apiserver.objects) == [("MachineConfiguration", "cluster")]
    assert "nodeDisruptionPolicy" not in fake_apiserver.get("MachineConfiguration", "cluster")["spec"]
    assert "crio.service" in check["diff"][0]["after"]
    assert "99-worker-pinned-images" in check["diff"][1]["after"]

    first = run(args, capsys)
    assert first["rc"] == 0, first
    assert first["changed"] and first["applied"] == ["99-worker-pinned-images"]
    assert (first["pools"][0]["added"], first["pools"][0]["removed"]) == ([A, B], [])
    stored = fake_apiserver.get("MachineConfig", "99-worker-pinned-images")
    assert stored["metadata"]["labels"] == {ROLE: "worker"}
    assert drop_in(stored) == DROP_IN_AB
    assert ("pinned-images", "Apply") in fake_apiserver.managers("MachineConfig", "99-worker-pinned-images")

    fake_apiserver.clear_requests()
    again = run(args, capsys)
    assert not again["changed"] and again["applied"] == []
    assert fake_apiserver.mutating_requests() == []

    changed = run(dict(args, images=[A]), capsys, diff=True)
    assert changed["changed"] and changed["applied"] == ["99-worker-pinned-images"]
    # Without dest, added and removed compare with the MachineConfig the cluster had.
    assert (changed["pools"][0]["added"], changed["pools"][0]["removed"]) == ([], [B])
    assert drop_in(fake_apiserver.get("MachineConfig", "99-worker-pinned-images")).count("sha256:") == 1
    assert len(changed["diff"]) == 1 and changed["diff"][0]["before"] != changed["diff"][0]["after"]

    check_delete = run(dict(auth, pools=["worker"], apply=True, state="absent"), capsys, check_mode=True)
    assert check_delete["deleted"] == ["99-worker-pinned-images"]
    assert fake_apiserver.get("MachineConfig", "99-worker-pinned-images") is not None
    deleted = run(dict(auth, pools=["worker"], apply=True, state="absent"), capsys)
    assert deleted["changed"] and deleted["deleted"] == ["99-worker-pinned-images"]
    assert fake_apiserver.get("MachineConfig", "99-worker-pinned-images") is None
    assert not run(dict(auth, pools=["worker"], apply=True, state="absent"), capsys)["changed"]


def test_empty_pool_deletes_its_machine_config(capsys, fake_apiserver):
    add_machine_configuration(fake_apiserver)
    auth = {"host": fake_apiserver.url, "api_key": fake_apiserver.token}
    assert run(dict(auth, pools=["worker"], images=[A], apply=True), capsys)["changed"]
    emptied = run(dict(auth, pools=["worker"], images=[], apply=True, return_objects=True), capsys)
    assert emptied["changed"] and emptied["deleted"] == ["99-worker-pinned-images"] and emptied["machine_configs"] == []
    assert emptied["pools"][0]["image_count"] == 0 and emptied["pools"][0]["removed"] == [A]
    assert fake_apiserver.get("MachineConfig", "99-worker-pinned-images") is None


def test_api_errors_are_reported_without_the_token(tmp_path, capsys, fake_apiserver):
    add_machine_configuration(fake_apiserver)
    fake_apiserver.forbid("patch", "machineconfigs")
    result = run(
        {
            "host": fake_apiserver.url,
            "api_key": fake_apiserver.token,
            "pools": ["worker"],
            "images": [A],
            "apply": True,
            "dest": str(tmp_path),
        },
        capsys,
    )
    assert result["rc"] == 1 and ("403" in result["msg"] or "forbidden" in result["msg"].lower())
    assert result["status"] == 403 and result["changed"]
    # The file was written before the cluster refused: the failure says so.
    assert result["file_changes"]["created"] == [
        str(tmp_path / "99-worker-pinned-images.yaml"),
        str(tmp_path / POLICY_FILE_NAME),
    ]
    assert fake_apiserver.token not in json.dumps(result)
    wrong = run(
        {"host": fake_apiserver.url, "api_key": "wrong-token-value", "pools": ["worker"], "images": [A], "apply": True},
        capsys,
    )
    assert wrong["rc"] == 1 and "wrong-token-value" not in json.dumps(wrong)


@pytest.mark.parametrize("below", ["", "sub"])
def test_dest_under_a_regular_file_fails_cleanly(tmp_path, capsys, below):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    dest = blocker / below if below else blocker
    result = run({"pools": ["worker"], "images": [A], "dest": str(dest)}, capsys)
    assert result["rc"] == 1 and result["failed"]
    assert str(dest) in result["msg"] and "Traceback" not in result["_raw"] and "exception" not in result
    assert "files" not in result and "machine_configs" not in result
    assert blocker.read_text() == "x"


def test_a_dict_kubeconfig_never_shows_its_token(capsys, fake_apiserver):
    add_machine_configuration(fake_apiserver)
    config = yaml.safe_load(fake_apiserver.kubeconfig_path.read_text())
    args = {"kubeconfig": config, "pools": ["worker"], "images": [A], "apply": True}
    applied = run(args, capsys)
    assert applied["rc"] == 0 and applied["applied"] == ["99-worker-pinned-images"]
    rejected = run(dict(args, context="wrong-token"), capsys)
    assert rejected["rc"] == 1 and "unauthorized" in rejected["msg"]
    unknown = run(dict(args, context="no-such-context"), capsys)
    assert unknown["rc"] == 1
    for result in (applied, rejected, unknown):
        assert fake_apiserver.token not in result["_raw"] and "not-the-token" not in result["_raw"]


def test_a_proxy_password_is_never_shown(capsys, fake_apiserver):
    from support.ports import free_port

    proxy = f"http://proxy-user:pr0xy-pa55word@127.0.0.1:{free_port()}"
    result = run(
        {
            "host": fake_apiserver.url,
            "api_key": fake_apiserver.token,
            "proxy": proxy,
            "pools": ["worker"],
            "images": [A],
            "apply": True,
        },
        capsys,
    )
    assert result["rc"] == 1 and "cannot reach the Kubernetes API server" in result["msg"]
    assert "pr0xy-pa55word" not in result["_raw"] and fake_apiserver.token not in result["_raw"]


def test_dest_reports_each_file_and_the_images_added_and_removed_per_pool(tmp_path, capsys):
    dest = tmp_path / "machineconfigs"
    worker = str(dest / "99-worker-pinned-images.yaml")
    first = run({"pools": ["worker"], "images": [A], "dest": str(dest)}, capsys)
    assert first["file_changes"] == {"created": [worker, str(dest / POLICY_FILE_NAME)], "changed": [], "removed": []}
    assert first["pools"][0]["added"] == [A] and first["pools"][0]["removed"] == []
    check = run({"pools": ["worker"], "images": [B], "dest": str(dest)}, capsys, check_mode=True)
    assert check["file_changes"] == {"created": [], "changed": [worker], "removed": []}
    assert (check["pools"][0]["added"], check["pools"][0]["removed"]) == ([B], [A])
    same = run({"pools": ["worker"], "images": [A], "dest": str(dest)}, capsys, check_mode=True)
    assert same["file_changes"] == {"created": [], "changed": [], "removed": []}
    assert (same["pools"][0]["added"], same["pools"][0]["removed"]) == ([], [])


def test_importing_the_module_imports_no_grpc():
    # The render path runs on the controller: grpc costs about 0.6 s cold, and only the node needs it.
    code = (
        "import sys\nimport ansible_collections.pinned.images.plugins.modules.machine_config\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('grpc', 'google')))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_a_users_file_of_the_same_name_is_never_replaced_and_an_earlier_renders_file_is_taken_over(tmp_path, capsys):
    args = {"pools": ["worker", "master"], "images": [A, B], "dest": str(tmp_path), "return_objects": True}
    mine = tmp_path / "99-master-pinned-images.yaml"
    mine.write_text("# my own\nkind: MachineConfig\nmetadata: {name: 99-master-pinned-images}\n")
    for check_mode in (True, False):
        failed = run(args, capsys, check_mode=check_mode)
        assert failed["rc"] == 1
        assert failed["msg"] == (
            f"{mine} is not ours (it has no pinned.images/rendered-by mark and is not a file an earlier render "
            "wrote); nothing was written: move it away, or give it the mark to let the render replace it"
        )
        assert sorted(p.name for p in tmp_path.iterdir()) == ["99-master-pinned-images.yaml"]
    # The bytes the version before the mark wrote are taken over and marked.
    earlier = run(dict(args, dest=None), capsys)["machine_configs"][1]
    mine.write_text(dump_yaml(earlier))
    taken = run(args, capsys)
    assert taken["rc"] == 0 and str(mine) in taken["file_changes"]["changed"]
    assert mine.read_text().startswith(HEADER)
    # state=absent removes the MachineConfigs, which are ours now, and leaves the policy.
    assert run(dict(args, state="absent"), capsys)["rc"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [POLICY_FILE_NAME]
