# SPDX-License-Identifier: GPL-3.0-or-later
"""_doctor/checks: each check finds what voids a pin or a prefetch, with its severity, meaning and fix, and says
nothing on a node that is fine for it. The lab shows them on real runtimes: tests/functional/test_doctor_lab.py."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._doctor import checks
from ansible_collections.pinned.images.plugins.module_utils._doctor.checks import NodeFacts, diagnose

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


def test_transfer_mode_with_a_list_config_path_pulls_from_upstream():
    config = {
        "version": 3,
        "plugins": {V3: {"registry": {"config_path": "/etc/containerd/certs.d:/etc/docker/certs.d"}}},
    }
    item = only(checks.check_transfer_mode("2.1.4", config, "/etc/containerd/config.toml"))
    assert (item["check"], item["severity"]) == ("transfer_mode_config_path", "error")
    assert "use_local_image_pull = true" in item["fix"]
    # containerd 2.2's default is that list.
    assert only(checks.check_transfer_mode("v2.2.1", {}, "defaults"))["check"] == "transfer_mode_config_path"


@pytest.mark.parametrize(
    "version, images",
    [
        ("2.0.5", {"registry": {"config_path": "/a:/b"}}),
        ("2.1.4", {"registry": {"config_path": "/etc/containerd/certs.d"}}),
        ("2.1.4", {"registry": {"config_path": "/a:/b"}, "use_local_image_pull": True}),
        ("2.2.0", {"registry": {"config_path": "/a:/b"}, "discard_unpacked_layers": True}),
        ("2.1.4", {}),
    ],
)
def test_local_pulls_one_directory_or_before_2_1_are_fine(version, images):
    assert checks.check_transfer_mode(version, {"version": 3, "plugins": {V3: images}}, "c") == []


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


def test_gc_maximum_age_and_thresholds_against_the_wanted_bytes():
    kubelet = {"imageMaximumGCAge": "72h", "imageGCHighThresholdPercent": 80}
    found = checks.check_gc(kubelet, "k.yaml", 30 * GIB, fs_total=100 * GIB, fs_used=60 * GIB, pinned=False)
    assert [(f["check"], f["severity"]) for f in found] == [("gc_maximum_age", "warning"), ("gc_threshold", "error")]
    assert "would be 90% full; the kubelet's imageGCHighThresholdPercent is 80" in found[1]["detail"]
    # Pinned: the age removes nothing of ours, the threshold still every other image.
    found = checks.check_gc(kubelet, "k.yaml", 30 * GIB, fs_total=100 * GIB, fs_used=60 * GIB, pinned=True)
    assert [(f["check"], f["severity"]) for f in found] == [("gc_threshold", "warning")]
    # The defaults: age off, 85%.
    assert checks.check_gc({}, "k", 10 * GIB, fs_total=100 * GIB, fs_used=60 * GIB, pinned=False) == []
    assert checks.check_gc({"imageMaximumGCAge": "0s"}, "k", 0, fs_total=None, fs_used=None, pinned=False) == []


def test_an_image_filesystem_smaller_than_the_sets():
    item = only(checks.check_image_filesystem(120 * GIB, 100 * GIB, "/var/lib/containerd", 2))
    assert item["severity"] == "error" and "(2 more images not on the node, not counted)" in item["detail"]
    assert checks.check_image_filesystem(10 * GIB, 100 * GIB, "/x", 0) == []
    assert checks.check_image_filesystem(10 * GIB, None, "/x", 0) == []


def test_no_python_suggests_the_pod_mode():
    item = checks.no_python_finding("talos-1")
    assert item["check"] == "no_python" and "cluster_node_access=pod" in item["fix"]


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
