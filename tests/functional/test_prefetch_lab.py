# SPDX-License-Identifier: GPL-3.0-or-later
"""pinned.images.prefetch and cri_image_info through real `ansible`, against real containerd and registries."""

from __future__ import annotations

import os
import socket as socket_module
import threading
import time

import pytest

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.ansible_runs import adhoc, node_socket, remove_all_images
from support.node import RUNTIMES

# The lab's images are small; a small reserve keeps these tests independent of the host's free disk.
GUARD = dict(min_free="64Mi")


def prefetch_args(**args):
    return dict(GUARD, **args)


def plain_images(lab):
    images = lab.images()
    return [images[name].reference for name in ("plain-small", "plain-shared-a", "plain-shared-b", "plain-multiarch")]


def repo_digests(socket):
    with CriClient(socket) as client:
        return sorted(d for image in client.list_images() for d in image["repo_digests"])


def test_pull_into_empty_node_then_rerun_is_unchanged(lab, runtime_empty_node):
    """On every runtime: pulls, the present check, and the disk guard on the image filesystem CRI names."""
    empty_node = runtime_empty_node["endpoint"]
    refs = plain_images(lab)
    rc, result, output = adhoc("pinned.images.prefetch", prefetch_args(images=refs + refs[:1], cri_socket=empty_node))
    assert rc == 0, output
    assert result["changed"] is True
    assert [r["status"] for r in result["images"]] == ["pulled"] * 4
    assert result["totals"]["requested"] == 4
    assert result["totals"]["bytes_pulled"] == sum(r["size"] for r in result["images"]) > 0
    runtime = RUNTIMES[runtime_empty_node["runtime"]]
    assert result["runtime"]["runtime_name"] == runtime.kind
    assert result["runtime"]["runtime_version"].startswith(runtime.version)
    # CRI's ImageFsInfo names a directory under the node's own root: the guard measured that filesystem.
    assert result["disk_guard"]["filesystem"].startswith(runtime_empty_node["root"])
    for ref in refs:
        assert ref in repo_digests(empty_node)

    rc, again, output = adhoc("pinned.images.prefetch", prefetch_args(images=refs, cri_socket=empty_node))
    assert rc == 0, output
    assert again["changed"] is False
    assert [r["status"] for r in again["images"]] == ["present"] * 4


def test_check_mode_pulls_nothing(lab, empty_node):
    refs = plain_images(lab)
    rc, result, output = adhoc(
        "pinned.images.prefetch", prefetch_args(images=refs, cri_socket=empty_node), check=True, diff=True
    )
    assert rc == 0, output
    assert result["changed"] is True
    # The default callback prints the diff as text instead of returning it in the result.
    assert "+++ after: requested images on the node" in output
    for ref in refs:
        assert f"+{ref}\n" in output
    assert [r["status"] for r in result["images"]] == ["would_pull"] * 4
    assert repo_digests(empty_node) == []


def test_multiarch_index_resolves_to_node_platform(lab, empty_node):
    record = lab.images()["plain-multiarch"]
    rc, result, output = adhoc(
        "pinned.images.prefetch", prefetch_args(images=[record.reference], cri_socket=empty_node)
    )
    assert rc == 0, output
    assert result["images"][0]["image_id"] == record.image_id


def test_login_registry_with_good_credentials(lab, runtime_empty_node):
    auth = lab.status()["registries"]["auth"]
    ref = lab.images()["auth-small"].reference
    rc, result, output = adhoc(
        "pinned.images.prefetch",
        prefetch_args(images=[ref], cri_socket=runtime_empty_node["endpoint"], auth_file=auth["docker_config"]),
    )
    assert rc == 0, output
    assert result["images"][0]["status"] == "pulled"
    _user, password = lab.credentials()
    assert password not in output


@pytest.mark.parametrize(
    "disk_guard, pull_attempts, expected",
    [
        # The estimate reads the manifest with the same credentials and stops before any pull.
        ("estimate", 0, "registry {host} rejected the credentials of user"),
        ("free_only", 1, "registry {host} rejected the pull credentials (credentials for {host} from {config})"),
    ],
)
def test_login_registry_with_bad_credentials_fails_once_clearly(lab, empty_node, disk_guard, pull_attempts, expected):
    auth = lab.status()["registries"]["auth"]
    ref = lab.images()["auth-shared-a"].reference
    rc, result, output = adhoc(
        "pinned.images.prefetch",
        prefetch_args(
            images=[ref],
            cri_socket=empty_node,
            auth_file=auth["bad_docker_config"],
            retry_delay=5,
            disk_guard=disk_guard,
        ),
    )
    assert rc != 0
    image = result["images"][0]
    assert image["status"] == "failed"
    assert image["error_kind"] == "auth"
    assert image["attempts"] == pull_attempts
    assert expected.format(host=auth["host"], config=auth["bad_docker_config"]) in result["msg"]
    bad_config = open(auth["bad_docker_config"]).read()
    for secret in _secrets_of(bad_config) | {lab.credentials()[1]}:
        assert secret not in output
    assert repo_digests(empty_node) == []


def _secrets_of(docker_config_text):
    import base64
    import json

    secrets = set()
    for entry in json.loads(docker_config_text)["auths"].values():
        if "auth" in entry:
            secrets.add(entry["auth"])
            secrets.add(base64.b64decode(entry["auth"]).decode().split(":", 1)[1])
    return secrets


def test_anonymous_pull_from_login_registry_is_an_auth_failure(lab, empty_node, tmp_path):
    no_credentials = tmp_path / "config.json"
    no_credentials.write_text('{"auths": {}}')
    auth = lab.status()["registries"]["auth"]
    ref = lab.images()["auth-small"].reference
    rc, result, output = adhoc(
        "pinned.images.prefetch", prefetch_args(images=[ref], cri_socket=empty_node, auth_file=str(no_credentials))
    )
    assert rc != 0
    image = result["images"][0]
    assert image["error_kind"] == "auth"
    assert image["attempts"] == 0
    assert f"registry {auth['host']} requires authentication" in image["error"]
    assert "no credentials were found for it" in image["error"]


@pytest.mark.parametrize("disk_guard, pull_attempts", [("estimate", 0), ("free_only", 1)])
def test_unknown_digest_fails_without_retries(lab, empty_node, disk_guard, pull_attempts):
    small = lab.images()["plain-small"]
    missing = small.reference.rsplit("@", 1)[0] + "@sha256:" + "0" * 64
    rc, result, output = adhoc(
        "pinned.images.prefetch",
        prefetch_args(images=[missing], cri_socket=empty_node, retry_delay=5, disk_guard=disk_guard),
    )
    assert rc != 0
    image = result["images"][0]
    assert image["status"] == "failed"
    assert image["error_kind"] == "not_found"
    assert image["attempts"] == pull_attempts
    assert "not found" in image["error"] or "manifest unknown" in image["error"]


def test_fail_on_error_false_reports_and_succeeds(lab, empty_node):
    small = lab.images()["plain-small"]
    missing = small.reference.rsplit("@", 1)[0] + "@sha256:" + "1" * 64
    rc, result, output = adhoc(
        "pinned.images.prefetch",
        prefetch_args(images=[small.reference, missing], cri_socket=empty_node, fail_on_error=False),
    )
    assert rc == 0, output
    assert [r["status"] for r in result["images"]] == ["pulled", "failed"]
    assert result["totals"]["failed"] == 1


def test_registry_stopped_mid_run_retries_then_fails_clearly(lab, empty_node):
    refs = plain_images(lab)
    lab.stop_registry("plain")
    try:
        rc, result, output = adhoc(
            "pinned.images.prefetch",
            # free_only: the estimate would meet the stopped registry first; this test is about pull retries.
            prefetch_args(
                images=refs[:2],
                cri_socket=empty_node,
                retries=2,
                retry_delay=0.2,
                concurrency=1,
                disk_guard="free_only",
            ),
        )
    finally:
        lab.start_registry("plain")
    assert rc != 0
    for image in result["images"]:
        assert image["status"] == "failed"
        assert image["attempts"] == 3
        assert "gave up after 3 attempts" in image["error"]
        assert "connection refused" in image["error"]


def restart_after_failed_pull(lab, node: str, ref: str) -> threading.Thread:
    """Start the plain registry once the node's containerd has logged a failed pull of ``ref``."""
    log = lab.status()["nodes"][node]["log"]
    offset = os.path.getsize(log)
    failure = f'PullImage \\"{ref}\\" failed'

    def watch():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with open(log, encoding="utf-8", errors="replace") as handle:
                handle.seek(offset)
                if failure in handle.read():
                    break
            time.sleep(0.1)
        lab.start_registry("plain")

    thread = threading.Thread(target=watch)
    thread.start()
    return thread


def test_registry_back_during_retries_succeeds(lab, empty_node):
    ref = lab.images()["plain-shared-b"].reference
    lab.stop_registry("plain")
    restarter = restart_after_failed_pull(lab, "worker-0", ref)
    try:
        rc, result, output = adhoc(
            "pinned.images.prefetch",
            prefetch_args(
                images=[ref],
                cri_socket=empty_node,
                retries=6,
                retry_delay=0.5,
                retry_max_delay=1,
                disk_guard="free_only",
            ),
        )
    finally:
        restarter.join()
    assert rc == 0, output
    assert result["images"][0]["status"] == "pulled"
    assert result["images"][0]["attempts"] > 1


def test_wrong_socket_path_fails_clearly_without_waiting_for_a_timeout(tmp_path):
    socket = str(tmp_path / "no-runtime.sock")
    # The message names the missing file, so the client never waited out its connect timeout.
    rc, result, output = adhoc("pinned.images.prefetch", prefetch_args(images=[], cri_socket=socket), timeout=60)
    assert rc != 0
    assert result["msg"] == f"nothing is listening at {socket} (no such file): is crio or containerd running?"


def test_a_runtime_that_accepts_but_never_answers_is_named_hung(tmp_path):
    """A listening socket whose server never accepts, as a stopped or deadlocked runtime's: the kernel queues the
    connection, nothing answers."""
    path = str(tmp_path / "containerd.sock")
    with socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(8)
        rc, result, output = adhoc(
            "pinned.images.prefetch", prefetch_args(images=[], cri_socket=path, cri_connect_timeout=1), timeout=60
        )
    assert rc != 0
    assert result["msg"] == (
        f"the runtime at {path} accepts connections but does not answer within 1 s (hung or overloaded?)"
    )


@pytest.mark.lab
def test_containerd_ttrpc_socket_is_named_as_not_cri(lab):
    ttrpc = lab.status()["nodes"]["worker-0"]["socket"] + ".ttrpc"
    rc, result, output = adhoc(
        "pinned.images.prefetch", prefetch_args(images=[], cri_socket=ttrpc, cri_connect_timeout=1), timeout=60
    )
    assert rc != 0
    assert result["msg"] == (
        f"could not connect to the CRI runtime at {ttrpc} within 1s: something there accepts connections but does "
        "not answer gRPC (HTTP/2): not a CRI socket (a .ttrpc socket is containerd's ttrpc API; its CRI socket is "
        "the same path without .ttrpc)"
    )


def test_invalid_references_are_all_named_and_nothing_is_pulled(lab, empty_node):
    rc, result, output = adhoc(
        "pinned.images.prefetch",
        prefetch_args(images=["quay.io/a/b:latest", plain_images(lab)[0], "bad name"], cri_socket=empty_node),
    )
    assert rc != 0
    assert "images[0]" in result["msg"] and "not pinned by digest" in result["msg"]
    assert "images[2]" in result["msg"] and "whitespace" in result["msg"]
    assert repo_digests(empty_node) == []


def test_cri_image_info_reports_runtime_images_and_filesystem(lab):
    socket = node_socket(lab, "worker-1")
    remove_all_images(socket)
    refs = plain_images(lab)
    rc, _result, output = adhoc("pinned.images.prefetch", prefetch_args(images=refs[:2], cri_socket=socket))
    assert rc == 0, output
    rc, info, output = adhoc("pinned.images.cri_image_info", dict(cri_socket=socket, images=refs))
    assert rc == 0, output
    assert info["runtime"]["runtime_name"] == "containerd"
    assert sorted(info["missing"]) == sorted(refs[2:])
    assert sorted(r for image in info["images"] for r in image["requested"]) == sorted(refs[:2])
    fs = info["image_filesystems"][0]
    assert fs["mountpoint"].startswith(lab.status()["dir"])
    assert fs["free_bytes"] > 0 and fs["total_bytes"] >= fs["free_bytes"]

    rc, everything, output = adhoc("pinned.images.cri_image_info", dict(cri_socket=socket))
    assert rc == 0, output
    assert len(everything["images"]) == 2
