# SPDX-License-Identifier: GPL-3.0-or-later
"""cri_image_info main(): a runtime that is not there is named; without grpcio it fails, flagged for the role.
The module against real containerd runs in tests/functional/test_prefetch_lab.py and test_disk_guard_lab.py."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._node_python import deps
from ansible_collections.pinned.images.plugins.modules import cri_image_info
from fixtures.module_runner import run_module


def test_a_socket_without_a_runtime_fails_naming_it(tmp_path, capsys):
    socket = tmp_path / "none.sock"
    result = run_module(cri_image_info, dict(cri_socket=str(socket), cri_connect_timeout=0.5), capsys)
    assert result["rc"] == 1 and result["failed"]
    assert str(socket) in result["msg"] and result["problems"] == [result["msg"]]


def test_without_grpcio_it_fails_flagged_node_deps_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(deps, "HAS_NODE_DEPS", False)
    monkeypatch.setitem(deps.NODE_DEPS, "error", "cannot import grpc")
    monkeypatch.setenv(deps.ENV_DIR, str(tmp_path))
    result = run_module(cri_image_info, dict(cri_socket=str(tmp_path / "none.sock")), capsys)
    assert result["rc"] == 1 and result["failed"] and result["node_deps_missing"] is True
    assert result["msg"].startswith("grpcio and protobuf are missing for ")
    assert result["node_deps"]["problem"] == "cannot import grpc"


class FakeRuntime:
    """Stands in for the CRI and containerd clients of cri_image_info (the real ones: test_doctor_lab.py)."""

    def __init__(self, name="containerd", version="1.6.36"):
        self.name, self.version_text = name, version
        self.endpoint = "/run/fake.sock"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def version(self):
        return dict(runtime_name=self.name, runtime_version=self.version_text, runtime_api_version="v1")

    def image_fs_info(self):
        return [dict(mountpoint="/var/lib/containerd", used_bytes=1, inodes_used=1)]

    def image_status(self, name):
        return dict(id="sha256:1", repo_tags=[], repo_digests=[name], size=10, pinned=True)

    def list_images(self):
        return []

    def status_info(self):
        return {}

    def list_records(self):
        labels = {"io.cattle.k3s.pinned": "pinned", "io.cri-containerd.pinned": "pinned"}
        return [dict(name="docker.io/rancher/mirrored-pause:3.6", labels=labels, target={})]


def test_checks_report_the_doctor_s_findings_from_the_node_paths_given(tmp_path, capsys, monkeypatch):
    from ansible_collections.pinned.images.plugins.module_utils._runs import cri_image_info as info_run

    runtime = FakeRuntime()
    monkeypatch.setattr(info_run, "cri_client", lambda options: runtime)
    monkeypatch.setattr(info_run, "containerd_client", lambda options: runtime)
    kubelet = tmp_path / "etc/kubernetes/kubelet.yaml"
    kubelet.parent.mkdir(parents=True)
    kubelet.write_text("imagePullCredentialsVerificationPolicy: AlwaysVerify\n")
    args = dict(
        images=["quay.io/org/a@sha256:" + "a" * 64],
        host_root=str(tmp_path),
        kubelet_config=["/etc/kubernetes/kubelet.yaml"],
        kubelet_binary=["/usr/bin/kubelet"],
    )
    plain = run_module(cri_image_info, args, capsys)
    assert plain["rc"] == 0 and "checks" not in plain
    result = run_module(cri_image_info, dict(args, checks=True), capsys)
    assert result["rc"] == 0, result
    assert [f["check"] for f in result["checks"]] == ["kubelet_credential_policy", "old_containerd", "k3s_pin_label"]
    assert result["checks"][0]["detail"].startswith(f"{kubelet}: ")
    assert result["notes"] == []


class SizedRuntime(FakeRuntime):
    """CRI-O whose image store reports ``store_bytes`` used, with one image of ``size`` bytes under every name but
    those with "missing"."""

    def __init__(self, size, store_bytes):
        super().__init__("cri-o", "1.33.2")
        self.size, self.store_bytes = size, store_bytes

    def image_fs_info(self):
        return [dict(mountpoint="/var/lib/containers/storage", used_bytes=self.store_bytes, inodes_used=1)]

    def image_status(self, name):
        return None if "missing" in name else dict(FakeRuntime.image_status(self, name), size=self.size)


GIB = 1024**3
TWO_NAMES = ["quay.io/org/a:1", "quay.io/org/a@sha256:" + "a" * 64]


def checks_on(tmp_path, capsys, monkeypatch, runtime, free, images):
    """The checks of ``runtime`` on a 100 GiB image filesystem with ``free`` bytes available (statvfs)."""
    from ansible_collections.pinned.images.plugins.module_utils._runs import cri_image_info as info_run

    monkeypatch.setattr(info_run, "cri_client", lambda options: runtime)
    monkeypatch.setattr(info_run, "filesystem_stats", lambda path: (100 * GIB, free))
    args = dict(images=images, host_root=str(tmp_path), checks=True, kubelet_config=["/none"], kubelet_binary=[])
    result = run_module(cri_image_info, args, capsys)
    assert result["rc"] == 0, result
    return {item["check"]: item for item in result["checks"]}


def test_the_image_filesystem_s_use_is_statvfs_s_and_holds_the_wanted_images_once(tmp_path, capsys, monkeypatch):
    # 70% used (statvfs), 20 GiB of it the wanted image under two names; the image store's own figure is not it.
    runtime = SizedRuntime(20 * GIB, store_bytes=95 * GIB)
    assert checks_on(tmp_path, capsys, monkeypatch, runtime, 30 * GIB, TWO_NAMES) == {}
    found = checks_on(tmp_path, capsys, monkeypatch, runtime, 10 * GIB, TWO_NAMES + ["quay.io/org/missing:1"])
    assert list(found) == ["gc_threshold"] and found["gc_threshold"]["severity"] == "warning"
    assert found["gc_threshold"]["detail"].startswith("the image filesystem is 90% full;")
    assert "; 1 wanted images not on the node are not counted" in found["gc_threshold"]["detail"]


def test_wanted_images_that_fill_the_gc_threshold_s_share_alone(tmp_path, capsys, monkeypatch):
    found = checks_on(tmp_path, capsys, monkeypatch, SizedRuntime(85 * GIB, store_bytes=85 * GIB), 10 * GIB, TWO_NAMES)
    assert list(found) == ["image_filesystem_size", "gc_threshold"]
    assert found["image_filesystem_size"]["detail"].startswith("the wanted images on the node take 85.0 GiB, 85% of")


def test_registry_hosts_it_cannot_read_are_a_note(tmp_path, capsys, monkeypatch):
    from ansible_collections.pinned.images.plugins.module_utils._runs import cri_image_info as info_run

    runtime = FakeRuntime(version="2.1.4")
    monkeypatch.setattr(info_run, "cri_client", lambda options: runtime)
    monkeypatch.setattr(info_run, "containerd_client", lambda options: runtime)
    config = tmp_path / "etc/containerd/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('version = 3\nimports = "not a list"\n')
    args = dict(host_root=str(tmp_path), checks=True, kubelet_config=["/none"], kubelet_binary=[])
    result = run_module(cri_image_info, args, capsys)
    assert result["rc"] == 0, result
    assert result["notes"] == [
        f"containerd's registry hosts not read: containerd config file {config}: imports must be a list of paths"
    ]
