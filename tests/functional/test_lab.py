# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab of hack/lab.py: both registries, containerd nodes pulling through CRI, and a clean up/down."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import importlib
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_tools import protoc

from fixtures.reference import CRI_PROTO_PARTS, reference_path
from support.images import HOST_PLATFORM, OCI_INDEX, OCI_MANIFEST
from support.lab import Lab

pytestmark = pytest.mark.lab

LAB_PY = Path(__file__).resolve().parents[2] / "hack" / "lab.py"
# The upstream proto, not the project's stubs: this test checks the lab, not the project's CRI client.


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(tmp_path_factory.mktemp("lab"))
    lab.up(nodes=2, control_plane=1, tmpfs_nodes={"worker-0": "64M"})
    yield lab
    lab.down()
    assert processes_under(lab.path) == [] and mounts_under(lab.path) == [] and not lab.path.exists()


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """runtime.v1 messages compiled under a private package name: they cannot clash in protobuf's registry
    with the project's own stubs, and the wire format (field numbers) is unchanged."""
    out = tmp_path_factory.mktemp("cri")
    text = reference_path(*CRI_PROTO_PARTS).read_text()
    assert "package runtime.v1;" in text
    (out / "lab_test_cri.proto").write_text(text.replace("package runtime.v1;", "package lab_test.runtime.v1;"))
    assert protoc.main(["protoc", "-I%s" % out, "--python_out=%s" % out, str(out / "lab_test_cri.proto")]) == 0
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("lab_test_cri_pb2")
    finally:
        sys.path.remove(str(out))


class ImageService:
    """PullImage and ImageStatus on the upstream method paths."""

    def __init__(self, pb, endpoint: str) -> None:
        self.pb = pb
        self.channel = grpc.insecure_channel(endpoint)

    def _call(self, method: str, request, response_type):
        stub = self.channel.unary_unary(
            "/runtime.v1.ImageService/" + method,
            request_serializer=type(request).SerializeToString,
            response_deserializer=response_type.FromString,
        )
        return stub(request, timeout=60)

    def pull(self, image: str, username: str | None = None, password: str | None = None) -> str:
        auth = self.pb.AuthConfig(username=username, password=password) if username else None
        request = self.pb.PullImageRequest(image=self.pb.ImageSpec(image=image), auth=auth)
        return self._call("PullImage", request, self.pb.PullImageResponse).image_ref

    def status(self, image: str):
        request = self.pb.ImageStatusRequest(image=self.pb.ImageSpec(image=image))
        response = self._call("ImageStatus", request, self.pb.ImageStatusResponse)
        return response.image if response.HasField("image") else None


@pytest.fixture
def image_service(lab, pb):
    services = []

    def connect(node: str) -> ImageService:
        services.append(ImageService(pb, lab.state["nodes"][node]["endpoint"]))
        return services[-1]

    yield connect
    for service in services:
        service.channel.close()


def get(registry: dict, path: str, credentials=None, context: ssl.SSLContext | None = None):
    """(status, headers, body) of a GET; plain http.client, so no proxy settings interfere."""
    if registry["tls"]:
        context = context or ssl.create_default_context(cafile=registry["ca"])
        conn = http.client.HTTPSConnection(registry["host"], timeout=10, context=context)
    else:
        conn = http.client.HTTPConnection(registry["host"], timeout=10)
    headers = {"Accept": "%s, %s" % (OCI_MANIFEST, OCI_INDEX)}
    if credentials:
        headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % credentials).encode()).decode()
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def processes_under(path: Path) -> list[int]:
    needle = str(path).encode() + b"/"
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and needle in Path("/proc", entry, "cmdline").read_bytes():
                pids.append(int(entry))
        except OSError:
            pass
    return pids


def mounts_under(path: Path) -> list[str]:
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if p == str(path) or p.startswith(str(path) + "/")]


def cli(*args) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LAB_PY), *map(str, args)], capture_output=True, text=True, check=False, timeout=120
    )


def test_registries_answer_and_the_login_registry_wants_good_credentials_over_tls(lab):
    plain, auth = lab.state["registries"]["plain"], lab.state["registries"]["auth"]
    username, password = lab.credentials()
    assert get(plain, "/v2/")[0] == 200
    status, headers, _body = get(auth, "/v2/")
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    assert get(auth, "/v2/", (username, password + "x"))[0] == 401
    assert get(auth, "/v2/", (username, password))[0] == 200
    with pytest.raises(ssl.SSLCertVerificationError):
        get(auth, "/v2/", (username, password), ssl.create_default_context())  # only the lab CA trusts it


def test_auth_files_are_private_and_hold_right_and_wrong_credentials(lab):
    auth = lab.state["registries"]["auth"]
    username, password = lab.credentials()
    for key in ("credentials", "docker_config", "bad_docker_config", "htpasswd"):
        assert os.stat(auth[key]).st_mode & 0o777 == 0o600, key
    good = json.loads(Path(auth["docker_config"]).read_text())["auths"][auth["host"]]["auth"]
    assert base64.b64decode(good).decode() == "%s:%s" % (username, password)
    bad = json.loads(Path(auth["bad_docker_config"]).read_text())["auths"][auth["host"]]["auth"]
    bad_user, bad_password = base64.b64decode(bad).decode().split(":", 1)
    assert bad_user == username and get(auth, "/v2/", (bad_user, bad_password))[0] == 401
    # The password lives in the 0600 files only.
    assert password not in lab.state_file.read_text()
    assert all(password not in log.read_text() for log in (lab.path / "logs").iterdir())


@pytest.mark.parametrize("node", ["cp-0", "worker-0"])
def test_each_node_pulls_plain_login_and_multiarch_images_through_cri(lab, image_service, node):
    cri = image_service(node)
    images = lab.images()
    username, password = lab.credentials()
    for name, credentials in (("plain-small", ()), ("auth-small", (username, password)), ("plain-multiarch", ())):
        record = images[name]
        assert cri.pull(record.reference, *credentials) == record.image_id, name
        status = cri.status(record.reference)
        assert status.id == record.image_id and record.reference in status.repo_digests, name
    multiarch = images["plain-multiarch"]
    assert multiarch.media_type == OCI_INDEX
    assert {"linux/amd64", "linux/arm64"} <= {m.platform for m in multiarch.manifests}
    assert multiarch.image_id == next(m.image_id for m in multiarch.manifests if m.platform == HOST_PLATFORM)
    with pytest.raises(grpc.RpcError):
        cri.pull(images["auth-shared-a"].reference)  # anonymous
    with pytest.raises(grpc.RpcError):
        cri.pull(images["auth-shared-a"].reference, username, password + "x")


def test_tmpfs_node_root_is_its_own_mount(lab):
    nodes = lab.state["nodes"]
    assert nodes["worker-0"]["tmpfs"] == "64M"
    assert mounts_under(lab.path) == [nodes["worker-0"]["root"]]


def test_images_are_valid_deterministic_and_share_layers(lab):
    plain = lab.state["registries"]["plain"]
    images = lab.images()
    shared_a, shared_b = images["plain-shared-a"], images["plain-shared-b"]
    assert shared_a.layers[0] == shared_b.layers[0]
    assert len({layer.digest for layer in shared_a.layers + shared_b.layers}) == 4

    status, headers, body = get(plain, "/v2/lab/shared-a/manifests/" + shared_a.digest)
    assert status == 200 and "sha256:" + hashlib.sha256(body).hexdigest() == shared_a.digest
    manifest = json.loads(body)
    assert [(x["digest"], x["size"]) for x in manifest["layers"]] == [(x.digest, x.size) for x in shared_a.layers]
    config = json.loads(get(plain, "/v2/lab/shared-a/blobs/" + manifest["config"]["digest"])[2])
    assert "%s/%s" % (config["os"], config["architecture"]) == HOST_PLATFORM
    diff_ids = []
    for layer in manifest["layers"]:
        blob = get(plain, "/v2/lab/shared-a/blobs/" + layer["digest"])[2]
        assert len(blob) == layer["size"]
        diff_ids.append("sha256:" + hashlib.sha256(gzip.decompress(blob)).hexdigest())
    assert config["rootfs"]["diff_ids"] == diff_ids == [x.diff_id for x in shared_a.layers]

    assert lab.push_image("lab/small", [64 * 1024], name="small-again").digest == images["plain-small"].digest


def test_bulk_images_are_distinct_and_pullable_by_digest(lab, image_service):
    started = time.monotonic()
    records = lab.push_bulk(40, 64 * 1024, prefix="fresh")
    print("40 bulk images pushed in %.1fs" % (time.monotonic() - started))
    assert len({r.digest for r in records}) == len({r.reference for r in records}) == 40
    assert all(r.reference.startswith(lab.state["registries"]["plain"]["host"] + "/fresh/") for r in records)
    assert lab.bulk("fresh") == records
    cri = image_service("cp-0")
    assert cri.pull(records[-1].reference) == records[-1].image_id


def test_a_registry_stops_and_starts_on_the_same_port(lab):
    plain = dict(lab.state["registries"]["plain"])
    lab.stop_registry("plain")
    with pytest.raises(ConnectionRefusedError):
        get(plain, "/v2/")
    assert not lab.running()
    lab.start_registry("plain")
    assert lab.state["registries"]["plain"]["port"] == plain["port"]
    assert get(plain, "/v2/")[0] == 200 and lab.running()


def test_a_node_added_later_pulls_too(lab, image_service):
    node = lab.add_node("worker-1", tmpfs_size="16M")
    assert node["role"] == "worker" and lab.running()
    assert node["root"] in mounts_under(lab.path)
    record = lab.images()["plain-shared-b"]
    assert image_service("worker-1").pull(record.reference) == record.image_id


def test_up_twice_is_harmless(lab):
    def pids(state):
        return {name: e["pid"] for name, e in [*state["registries"].items(), *state["nodes"].items()]}

    before = lab.status()
    second = cli("up", "--dir", lab.path, "--json")
    assert second.returncode == 0, second.stderr
    assert "already running" in second.stderr
    after = json.loads(second.stdout)
    assert after["running"] and pids(after) == pids(before)
    assert after["registries"]["plain"]["port"] == before["registries"]["plain"]["port"]
    assert pids(Lab(lab.path).up()) == pids(before)
    assert cli("status", "--dir", lab.path).returncode == 0
    exports = cli("env", "--dir", lab.path).stdout
    assert "PINNED_IMAGES_LAB_NODE_WORKER_0=unix://%s" % lab.state["nodes"]["worker-0"]["socket"] in exports


def test_the_command_line_adds_kills_and_starts_a_node_of_another_runtime(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli-lab")
    try:
        assert cli("up", "--dir", path, "--nodes", "0").returncode == 0
        added = cli("add-node", "worker-0", "--runtime", "containerd-2.1", "--dir", path)
        assert added.returncode == 0, added.stderr
        first = re.search(r"worker-0 .* up \(pid (\d+)\)\s+containerd 2\.1\.9", added.stdout)
        assert first, added.stdout
        killed = cli("stop-node", "worker-0", "--kill", "--dir", path)
        assert killed.returncode == 1 and re.search(r"worker-0 .* DOWN", killed.stdout), killed.stdout
        started = cli("start-node", "worker-0", "--dir", path)
        assert started.returncode == 0, started.stderr
        again = re.search(r"worker-0 .* up \(pid (\d+)\)", started.stdout)
        assert again and again.group(1) != first.group(1)
        wrong = cli("add-node", "worker-1", "--runtime", "podman", "--dir", path)
        assert wrong.returncode == 2 and "invalid choice: 'podman'" in wrong.stderr
    finally:
        cli("down", "--dir", path)
    assert processes_under(path) == []


def test_up_recovers_from_a_killed_run_and_down_leaves_nothing(tmp_path_factory):
    path = tmp_path_factory.mktemp("killed")
    args = ("--dir", path, "--nodes", "1", "--control-plane", "0", "--tmpfs-node", "worker-0:16M", "--json")
    first = cli("up", *args)
    assert first.returncode == 0, first.stderr
    old = json.loads(first.stdout)
    # A killed run: the node died (stale pid and socket, tmpfs still mounted), the state file is gone and the
    # registries still run unknown to anyone.
    os.kill(old["nodes"]["worker-0"]["pid"], signal.SIGKILL)
    (path / "state.json").unlink()
    second = cli("up", *args)
    assert second.returncode == 0, second.stderr
    new = json.loads(second.stdout)
    live = {e["pid"] for e in [*new["registries"].values(), *new["nodes"].values()]}
    assert new["running"] and set(processes_under(path)) == live
    assert mounts_under(path) == [new["nodes"]["worker-0"]["root"]]

    down = cli("down", "--dir", path)
    assert down.returncode == 0, down.stderr
    assert processes_under(path) == [] and mounts_under(path) == []
    assert not path.exists()
