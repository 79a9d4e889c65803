# SPDX-License-Identifier: GPL-3.0-or-later
"""_doctor/checks: each check finds what voids a pin or a prefetch, with its severity, meaning and fix, and says
nothing on a node that is fine for it. The lab shows them on real runtimes: tests/functional/test_doctor_lab.py."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._doctor import checks
from ansible_collections.pinned.images.plugins.module_utils._doctor.checks import NodeFacts, diagnose
from ansible_collections.pinned.images.plugins.module_utils._prefetch.preflight import SourceSettings, layout_report
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import RegistriesConf

A = "quay.io/org/a@sha256:" + "a" * 64
B = "registry.example.com/team/b:1.0"
GIB = 1024**3


def only(found):
    assert len(found) == 1, found
    item = found[0]
    assert set(item) == {"check", "severity", "detail", "meaning", "fix"} and all(item.values())
    return item


def test_always_verify_voids_every_prefetch():
    item = only(
        checks.check_credential_policy({"imagePullCredentialsVerificationPolicy": "AlwaysVerify"}, "k.yaml", [A])
    )
    assert (item["check"], item["severity"]) == ("kubelet_credential_policy", "error")
    assert "k.yaml: imagePullCredentialsVerificationPolicy is AlwaysVerify" == item["detail"]


def test_an_allowlist_names_the_wanted_images_it_omits():
    kubelet = {
        "imagePullCredentialsVerificationPolicy": "NeverVerifyAllowlistedImages",
        "preloadedImagesVerificationAllowlist": ["quay.io/org/*"],
    }
    item = only(checks.check_credential_policy(kubelet, "k.yaml", [A, B]))
    assert "omits 1 wanted images (registry.example.com/team/b)" in item["detail"]
    kubelet["preloadedImagesVerificationAllowlist"].append("registry.example.com/team/b")
    assert checks.check_credential_policy(kubelet, "k.yaml", [A, B]) == []


@pytest.mark.parametrize("policy", [None, "NeverVerify", "NeverVerifyPreloadedImages"])
def test_the_default_policies_are_fine(policy):
    assert checks.check_credential_policy({"imagePullCredentialsVerificationPolicy": policy}, "k", [A]) == []


V3 = "io.containerd.cri.v1.images"
V2 = "io.containerd.grpc.v1.cri"
TWO_DIRS = "/etc/containerd/certs.d:/etc/docker/certs.d"


def hosts_report(tmp_path, version, files):
    """cri_image_info's layout.hosts for a containerd ``version`` node whose host root holds ``files``
    ({host path: text}; no /etc/containerd/config.toml: containerd's defaults), read by the disk guard's code."""
    root = tmp_path / "host"
    root.mkdir(parents=True)
    for path, text in files.items():
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.lstrip("/")).write_text(text)
    runtime = {"runtime_name": "containerd", "runtime_version": version, "endpoint": f"{root}/run/containerd.sock"}
    settings = SourceSettings(registries=RegistriesConf(), overrides=RegistriesConf(), host_root=str(root))
    return layout_report(settings, runtime, dict)["hosts"]


CONFIG = "/etc/containerd/config.toml"
# Talos 2.2+: config_path and use_local_image_pull are in an imported file, not in the config the flag names.
TALOS_MAIN = 'version = 3\nimports = ["/etc/cri/conf.d/cri.toml"]\n'
TALOS_CRI = f"""version = 3
[plugins."{V3}"]
  use_local_image_pull = true
[plugins."{V3}".registry]
  config_path = "{TWO_DIRS}"
"""


def test_transfer_mode_with_a_list_config_path_pulls_from_upstream(tmp_path):
    v3 = f'version = 3\n[plugins."{V3}".registry]\n  config_path = "{TWO_DIRS}"\n'
    item = only(checks.check_transfer_mode("2.1.4", hosts_report(tmp_path, "2.1.4", {CONFIG: v3})))
    assert (item["check"], item["severity"]) == ("transfer_mode_config_path", "error")
    assert item["detail"] == (
        f"containerd 2.1.4 pulls through its transfer service, and config_path is '{TWO_DIRS}', a list of "
        f"directories (from {CONFIG}, containerd's default path (no process found that serves the socket))"
    )
    assert "use_local_image_pull = true" in item["fix"]


def test_a_version_2_config_s_list_and_its_local_pull_settings_are_read_as_containerd_migrates_them(tmp_path):
    v2 = f'version = 2\n[plugins."{V2}".registry]\n  config_path = "/a:/b"\n'
    assert only(checks.check_transfer_mode("2.1.4", hosts_report(tmp_path / "list", "2.1.4", {CONFIG: v2})))
    # discard_unpacked_layers is under .containerd in version 2: containerd pulls locally and reads the list.
    local = v2 + f'[plugins."{V2}".containerd]\n  discard_unpacked_layers = true\n'
    hosts = hosts_report(tmp_path / "local", "2.1.4", {CONFIG: local})
    assert hosts["pull_mode"] == "local" and checks.check_transfer_mode("2.1.4", hosts) == []


def test_an_imported_file_s_use_local_image_pull_counts_as_on_talos(tmp_path):
    hosts = hosts_report(tmp_path / "talos", "2.2.1", {CONFIG: TALOS_MAIN, "/etc/cri/conf.d/cri.toml": TALOS_CRI})
    assert hosts["config_path"] == TWO_DIRS.split(":") and hosts["pull_mode"] == "local"
    assert checks.check_transfer_mode("2.2.1", hosts) == []
    # The same import without use_local_image_pull: its list is taken as one directory.
    transfer = TALOS_CRI.replace("use_local_image_pull = true", "")
    hosts = hosts_report(tmp_path / "transfer", "2.2.1", {CONFIG: TALOS_MAIN, "/etc/cri/conf.d/cri.toml": transfer})
    assert f"config_path is '{TWO_DIRS}'" in only(checks.check_transfer_mode("2.2.1", hosts))["detail"]


def test_containerd_2_2_s_default_list_without_a_config_file(tmp_path):
    item = only(checks.check_transfer_mode("v2.2.1", hosts_report(tmp_path, "v2.2.1", {})))
    assert item["detail"].endswith(
        f"config_path is '{TWO_DIRS}', a list of directories (from containerd's built-in defaults)"
    )


@pytest.mark.parametrize(
    "version, config",
    [
        ("2.0.5", f'version = 3\n[plugins."{V3}".registry]\n  config_path = "/a:/b"\n'),
        ("2.1.4", f'version = 3\n[plugins."{V3}".registry]\n  config_path = "/etc/containerd/certs.d"\n'),
        ("2.2.0", f'version = 3\n[plugins."{V3}"]\n  image_pull_with_sync_fs = true\n'),
        ("2.1.4", "version = 3\n"),
    ],
)
def test_local_pulls_one_directory_or_before_2_1_are_fine(tmp_path, version, config):
    assert checks.check_transfer_mode(version, hosts_report(tmp_path, version, {CONFIG: config})) == []


def test_containerd_1_x_s_hosts_from_cri_status_or_an_unreadable_config_name_no_pull_mode():
    assert checks.check_transfer_mode("1.7.24", {"config_path": ["/a:/b"], "pull_mode": None}) == []
    assert checks.check_transfer_mode("2.1.4", {"error": "containerd config file /c: not valid TOML"}) == []


def test_a_lazy_snapshotter_or_a_snapshot_proxy_plugin_is_named():
    config = {
        "plugins": {V3: {"snapshotter": "overlaybd"}},
        "proxy_plugins": {"stargz": {"type": "snapshot", "address": "/run/stargz.sock"}},
    }
    item = only(checks.check_lazy_pulling(config, "c.toml"))
    assert item["severity"] == "warning" and "'overlaybd'" in item["detail"] and "'stargz'" in item["detail"]
    # containerd 1.x's table.
    old = {"plugins": {"io.containerd.grpc.v1.cri": {"containerd": {"snapshotter": "stargz"}}}}
    assert only(checks.check_lazy_pulling(old, "c.toml"))["check"] == "lazy_pulling"
    assert checks.check_lazy_pulling({"plugins": {V3: {"snapshotter": "overlayfs"}}}, "c") == []
    assert checks.check_lazy_pulling(None, "c") == []


def test_containerd_before_1_7_3_ignores_the_label():
    assert only(checks.check_old_containerd("containerd", "1.6.36"))["severity"] == "error"
    assert only(checks.check_old_containerd("containerd", "v1.7.2"))["check"] == "old_containerd"
    assert checks.check_old_containerd("containerd", "1.7.3") == []
    assert checks.check_old_containerd("cri-o", "1.6.0") == []


def test_images_with_both_pin_labels_lose_theirs_at_k3s_start():
    item = only(checks.check_k3s_labels(["docker.io/rancher/a:1"]))
    assert item["severity"] == "warning" and "docker.io/rancher/a:1" in item["detail"]
    assert checks.check_k3s_labels([]) == []


def test_a_later_crio_drop_in_that_drops_our_images_is_an_error():
    ours = "/etc/crio/crio.conf.d/50-pinned-images"
    later = "/etc/crio/crio.conf.d/99-other"
    item = only(checks.check_crio_override(ours, [A, B], later, [B]))
    assert item["severity"] == "error" and "1 of the 2 images" in item["detail"] and later in item["fix"]
    assert only(checks.check_crio_override(ours, [A], later, [A, B]))["severity"] == "info"
    assert checks.check_crio_override(ours, [A], ours, [A]) == []
    assert checks.check_crio_override(ours, [], None, []) == []


def test_a_kubelet_before_the_fix_ignores_runtime_pins():
    assert only(checks.check_kubelet_version("v1.27.9"))["severity"] == "error"
    assert only(checks.check_kubelet_version("v1.28.2"))["severity"] == "warning"
    assert checks.check_kubelet_version("v1.29.0") == []
    assert checks.check_kubelet_version(None) == []


def test_gc_maximum_age_and_the_threshold_against_the_filesystem_s_use():
    kubelet = {"imageMaximumGCAge": "72h", "imageGCHighThresholdPercent": 80}
    found = checks.check_gc(kubelet, "k.yaml", fs_total=100 * GIB, fs_used=80 * GIB, missing=0, pinned=False)
    assert [(f["check"], f["severity"]) for f in found] == [("gc_maximum_age", "warning"), ("gc_threshold", "error")]
    assert (
        found[1]["detail"]
        == "the image filesystem is 80% full; the kubelet's imageGCHighThresholdPercent is 80 (k.yaml)"
    )
    # Pinned: the age removes nothing of ours, the threshold still every other image.
    found = checks.check_gc(kubelet, "k.yaml", fs_total=100 * GIB, fs_used=90 * GIB, missing=0, pinned=True)
    assert [(f["check"], f["severity"]) for f in found] == [("gc_threshold", "warning")]
    # The defaults: age off, 85%.
    assert checks.check_gc({}, "k", fs_total=100 * GIB, fs_used=84 * GIB, missing=0, pinned=False) == []
    assert checks.check_gc({"imageMaximumGCAge": "0s"}, "k", fs_total=None, fs_used=None, missing=0, pinned=False) == []


def test_gc_threshold_names_the_missing_images_it_cannot_weigh():
    (item,) = checks.check_gc({}, "k", fs_total=100 * GIB, fs_used=86 * GIB, missing=2, pinned=False)
    assert item["detail"].endswith(
        "; 2 wanted images not on the node are not counted (the doctor reads no registry: pinned.images.prefetch "
        "in check mode has its disk guard estimate them)"
    )


def test_the_wanted_images_on_the_node_are_counted_once_inside_the_filesystem_s_use():
    """70% used, of which the 20 GiB of wanted images the node has: not 90%."""
    facts = NodeFacts(
        runtime_name="cri-o",
        runtime_version="1.33.2",
        wanted=(A,),
        wanted_present_bytes=20 * GIB,
        fs_total=100 * GIB,
        fs_used=70 * GIB,
    )
    assert diagnose(facts) == []


def test_wanted_images_that_take_the_gc_threshold_s_share_of_the_image_filesystem():
    item = only(checks.check_image_filesystem({}, "k", 85 * GIB, 100 * GIB, "/var/lib/containerd", 0))
    assert (item["check"], item["severity"]) == ("image_filesystem_size", "error")
    assert item["detail"] == (
        "the wanted images on the node take 85.0 GiB, 85% of the 100.0 GiB image filesystem /var/lib/containerd; "
        "the kubelet's imageGCHighThresholdPercent is 85 (k)"
    )
    item = only(checks.check_image_filesystem({"imageGCHighThresholdPercent": 50}, "k", 60 * GIB, 100 * GIB, "/x", 2))
    assert "; 2 wanted images not on the node are not counted" in item["detail"]
    assert checks.check_image_filesystem({}, "k", 84 * GIB, 100 * GIB, "/x", 3) == []
    assert checks.check_image_filesystem({}, "k", 10 * GIB, None, "/x", 0) == []
    # Not pinned: the GC removes them, rather than everything else.
    unpinned = only(checks.check_image_filesystem({}, "k", 90 * GIB, 100 * GIB, "/x", 0, pinned=False))
    assert "removes unused unpinned images, these among them" in unpinned["meaning"]


def test_a_high_threshold_of_100_turns_the_kubelet_s_image_gc_off():
    off = {"imageGCHighThresholdPercent": 100}
    assert checks.check_gc(off, "k", fs_total=100 * GIB, fs_used=100 * GIB, missing=0, pinned=False) == []
    assert checks.check_image_filesystem(off, "k", 100 * GIB, 100 * GIB, "/x", 0) == []
    # 99 still collects.
    near = {"imageGCHighThresholdPercent": 99}
    assert only(checks.check_gc(near, "k", fs_total=100 * GIB, fs_used=99 * GIB, missing=0, pinned=True))


def test_no_python_names_the_playbooks_with_a_pod_mode_and_not_the_doctor():
    item = checks.no_python_finding("talos-1")
    assert item["check"] == "no_python"
    assert item["fix"].startswith(
        "the prefetch and audit playbooks reach such a node in pod mode (-e cluster_node_access=pod)"
    )
    assert item["fix"].endswith("the doctor has no pod mode: its checks need python3 on the node")


def test_diagnose_runs_the_runtime_s_checks_errors_first():
    facts = NodeFacts(
        runtime_name="containerd",
        runtime_version="1.6.36",
        kubelet={"imageMaximumGCAge": "1h"},
        kubelet_source="k.yaml",
        containerd_config={"plugins": {V3: {"snapshotter": "stargz"}}},
        containerd_config_source="c.toml",
        dropin_path="/d/50",
        dropin_listed=(A,),
        dropin_source="/d/99",
        dropin_kept=(),
    )
    assert [f["check"] for f in diagnose(facts)] == ["old_containerd", "gc_maximum_age", "lazy_pulling"]
    crio = NodeFacts(
        runtime_name="cri-o",
        runtime_version="1.33.2",
        dropin_path="/d/50",
        dropin_listed=(A,),
        dropin_source="/d/99",
        dropin_kept=(),
    )
    assert [f["check"] for f in diagnose(crio)] == ["crio_dropin_override"]
