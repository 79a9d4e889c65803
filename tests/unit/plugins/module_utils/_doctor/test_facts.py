# SPDX-License-Identifier: GPL-3.0-or-later
"""_doctor/facts: the kubelet's files and drop-ins merged in order, containerd's config, CRI-O's drop-ins, the
labels and the kubelet's version, each from paths the test gives; what cannot be read is a note."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._doctor import facts

A = "quay.io/org/a@sha256:" + "a" * 64


def test_the_kubelet_files_and_drop_ins_are_merged_in_order(tmp_path):
    main = tmp_path / "config.yaml"
    main.write_text("imageGCHighThresholdPercent: 85\nimageMaximumGCAge: 0s\n")
    dropins = tmp_path / "kubelet.conf.d"
    dropins.mkdir()
    (dropins / "10-a.conf").write_text('{"imageMaximumGCAge": "24h"}')
    (dropins / "20-b.yaml").write_text("imagePullCredentialsVerificationPolicy: AlwaysVerify\n")
    (dropins / "30-bad.conf").write_text("- not\n- a mapping\n")
    (dropins / "README").write_text("ignored")
    config = facts.read_kubelet_config([str(main), str(dropins), str(tmp_path / "absent.yaml")])
    assert config.settings == {
        "imageGCHighThresholdPercent": 85,
        "imageMaximumGCAge": "24h",
        "imagePullCredentialsVerificationPolicy": "AlwaysVerify",
    }
    assert config.sources == [str(main), str(dropins / "10-a.conf"), str(dropins / "20-b.yaml")]
    assert config.notes == [f"kubelet config {dropins / '30-bad.conf'} not read: not a mapping"]
    assert facts.read_kubelet_config([str(tmp_path / "none")]).source.startswith("the kubelet's defaults")


def test_containerd_s_config_is_read_or_noted(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('version = 3\n[plugins."io.containerd.cri.v1.images"]\nsnapshotter = "stargz"\n')
    config, notes = facts.read_containerd_config(str(path))
    assert config["plugins"]["io.containerd.cri.v1.images"]["snapshotter"] == "stargz" and notes == []
    path.write_text("not = [toml")
    config, notes = facts.read_containerd_config(str(path))
    assert config is None and notes[0].startswith(f"containerd config {path} not read")
    assert facts.read_containerd_config(str(tmp_path / "absent")) == (None, [])


def test_crio_pins_follow_the_drop_ins_in_crio_s_order(tmp_path):
    ours = tmp_path / "50-pinned-images"
    ours.write_text(f'[crio.image]\npinned_images = ["{A}"]\n')
    pins = facts.crio_pins(str(ours))
    assert (pins.listed, pins.source, pins.kept) == ((A,), str(ours), (A,))
    (tmp_path / "99-other.conf").write_text('[crio.image]\npinned_images = ["quay.io/x/*"]\n')
    pins = facts.crio_pins(str(ours))
    assert (pins.source, pins.kept) == (str(tmp_path / "99-other.conf"), ("quay.io/x/*",))


def test_both_pin_labels():
    records = [
        {"name": "a", "labels": {facts.K3S_PIN_LABEL_KEY: "pinned", "io.cri-containerd.pinned": "pinned"}},
        {"name": "b", "labels": {"io.cri-containerd.pinned": "pinned"}},
        {"name": "c", "labels": {}},
    ]
    assert facts.both_pin_labels(records) == ["a"]


def test_the_kubelet_version_from_the_first_binary_there(tmp_path):
    binary = tmp_path / "kubelet"
    binary.write_text("")
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "Kubernetes v1.31.4+k3s1\n", ""

    assert facts.kubelet_version([str(tmp_path / "none"), str(binary)], run) == "v1.31.4+k3s1"
    assert calls == [[str(binary), "--version"]]
    assert facts.kubelet_version([str(tmp_path / "none")], run) is None
