# SPDX-License-Identifier: GPL-3.0-or-later
"""MachineConfig rendering: CRD-valid, Ignition-shaped, byte-stable, and carrying the exact drop-in."""

from __future__ import annotations

import base64

import jsonschema
import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import AtomicFileError
from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import HEADER, rendered_text
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import dump_yaml
from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import (
    MachineConfigError,
    data_url,
    image_changes,
    images_in_machine_config,
    machine_config_name,
    render_for_pools,
    render_machine_config,
    sync_cluster,
    sync_files,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import render_pinned_images
from ansible_collections.pinned.images.plugins.module_utils._sets.model import ROLE_LABEL, validate_set
from fixtures.reference import OPENSHIFT_CRDS_PARTS, reference_path

A = "quay.io/openshift-release-dev/ocp-release@sha256:" + "0" * 64
B = "registry.example.com/team/app@sha256:" + "1" * 64

# The whole file, literally: keys sorted, block style, two-space indent, lists not indented under their key.
EXPECTED_YAML = (
    "apiVersion: machineconfiguration.openshift.io/v1\n"
    "kind: MachineConfig\n"
    "metadata:\n"
    "  labels:\n"
    "    machineconfiguration.openshift.io/role: worker\n"
    "  name: 99-worker-pinned-images\n"
    "spec:\n"
    "  config:\n"
    "    ignition:\n"
    "      version: 3.2.0\n"
    "    storage:\n"
    "      files:\n"
    "      - contents:\n"
    "          source: data:;base64,"
    + base64.b64encode(
        b'[crio]\n  [crio.image]\n    pinned_images = ["quay.io/openshift-release-dev/ocp-release@sha256:'
        + b"0" * 64
        + b'", "registry.example.com/team/app@sha256:'
        + b"1" * 64
        + b'"]\n'
    ).decode()
    + "\n"
    "        mode: 420\n"
    "        overwrite: true\n"
    "        path: /etc/crio/crio.conf.d/50-pinned-images\n"
)


def drop_in(machine_config) -> bytes:
    """The bytes the MachineConfig's single file carries (its base64 data URL, decoded)."""
    (item,) = machine_config["spec"]["config"]["storage"]["files"]
    prefix, payload = item["contents"]["source"].split(",", 1)
    assert prefix == "data:;base64"
    return base64.b64decode(payload, validate=True)


def schema():
    crd = yaml.safe_load(reference_path(*OPENSHIFT_CRDS_PARTS, "machineconfigs.crd.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_render_is_crd_valid_and_carries_the_drop_in():
    mc = render_machine_config("worker", [A, B])
    assert mc["metadata"] == {"name": "99-worker-pinned-images", "labels": {ROLE_LABEL: "worker"}}
    files = mc["spec"]["config"]["storage"]["files"]
    assert files == [
        {
            "path": "/etc/crio/crio.conf.d/50-pinned-images",
            "mode": 420,
            "overwrite": True,
            "contents": {"source": files[0]["contents"]["source"]},
        }
    ]
    assert files[0]["contents"]["source"].startswith("data:;base64,")
    assert drop_in(mc) == render_pinned_images([A, B]).encode()
    jsonschema.validate(mc, schema())  # last: skips without the upstream CRD


def test_yaml_is_byte_stable_and_exact():
    text = dump_yaml(render_machine_config("worker", [A, B]))
    assert text == EXPECTED_YAML
    assert dump_yaml(render_machine_config("worker", [A, B])) == text
    loaded = yaml.safe_load(text)
    assert loaded == render_machine_config("worker", [A, B])
    jsonschema.validate(loaded, schema())


@pytest.mark.parametrize("version", ["3.1.0", "3.2.0", "3.3.0", "3.4.0"])
def test_ignition_versions(version):
    mc = render_machine_config("master", [A], ignition_version=version)
    assert mc["spec"]["config"]["ignition"]["version"] == version


@pytest.mark.parametrize("version", ["2.2.0", "3.0.0", "3.5.0", "3.2", None])
def test_other_ignition_versions_are_refused(version):
    with pytest.raises(MachineConfigError, match="not supported"):
        render_machine_config("master", [A], ignition_version=version)


def test_names():
    assert machine_config_name("infra") == "99-infra-pinned-images"
    assert machine_config_name("infra", "50-pins-{pool}") == "50-pins-infra"
    with pytest.raises(MachineConfigError, match="RFC 1123"):
        machine_config_name("infra", "Pins_{pool}")
    with pytest.raises(MachineConfigError):
        machine_config_name("infra", "")


@pytest.mark.parametrize("template", ["99-{pool}-pins\n", "\n99-{pool}", "99-{pool}.", "-99-{pool}", "x" * 254])
def test_names_that_are_not_rfc_1123_subdomains(template):
    with pytest.raises(MachineConfigError, match="RFC 1123"):
        machine_config_name("infra", template)


def test_data_urls():
    assert data_url("x") == "data:;base64,eA=="
    assert data_url(b"\x00\xff") == "data:;base64,AP8="


def test_render_for_pools_from_sets():
    sets = [
        validate_set(
            {
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "PinnedImageSet",
                "metadata": {"name": "w", "labels": {ROLE_LABEL: "worker"}},
                "spec": {"pinnedImages": [{"name": B}, {"name": A}]},
            }
        ),
    ]
    entries = render_for_pools(["worker", "master"], sets=sets)
    assert [(e["pool"], e["name"], e["images"], e["set_names"]) for e in entries] == [
        ("worker", "99-worker-pinned-images", [A, B], ["w"]),
        ("master", "99-master-pinned-images", [], []),
    ]
    assert entries[1]["machine_config"] is None
    assert drop_in(entries[0]["machine_config"]) == render_pinned_images([A, B]).encode()


def test_render_for_pools_needs_distinct_names():
    with pytest.raises(MachineConfigError, match="both get the MachineConfig name"):
        render_for_pools(["worker", "master"], images=[A], name_template="99-pins")


def test_render_needs_images():
    with pytest.raises(MachineConfigError, match="no images"):
        render_machine_config("worker", [])


def test_sync_files_atomic_and_stable(tmp_path):
    dest = tmp_path / "mcs"
    entries = render_for_pools(["worker", "master"], images=[A, B])
    check = sync_files(entries, str(dest), check_mode=True)
    assert check["changed"] and not dest.exists()
    first = sync_files(entries, str(dest))
    both = [str(dest / "99-worker-pinned-images.yaml"), str(dest / "99-master-pinned-images.yaml")]
    assert first["changed"] and first["files"] == both
    # The file carries the ownership mark: the header line and the annotation.
    marked_yaml = EXPECTED_YAML.replace(
        "metadata:\n", "metadata:\n  annotations:\n    pinned.images/rendered-by: pinned.images\n", 1
    )
    assert (dest / "99-worker-pinned-images.yaml").read_text() == HEADER + marked_yaml
    again = sync_files(render_for_pools(["worker", "master"], images=[B, A][::-1]), str(dest))
    assert not again["changed"] and again["diffs"] == []
    # Pools left without images lose their files.
    emptied = render_for_pools(["worker", "master"], images=None, sets=[])
    assert sync_files(emptied, str(dest))["files"] == both
    assert sorted(p.name for p in dest.iterdir()) == []


@pytest.mark.parametrize("below", ["", "sub"])
def test_sync_files_under_a_regular_file_is_a_clean_error(tmp_path, below):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    dest = blocker / below if below else blocker
    entries = render_for_pools(["worker"], images=[A])
    with pytest.raises(AtomicFileError) as info:
        sync_files(entries, str(dest))
    assert str(dest) in str(info.value) and info.value.errno is not None
    assert blocker.read_text() == "x"


def test_sync_files_absent_under_a_regular_file_is_a_clean_error(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(AtomicFileError) as info:
        sync_files(render_for_pools(["worker"], images=[A]), str(blocker / "sub"), state="absent")
    assert str(blocker / "sub") in str(info.value)


class FakeK8s:
    def __init__(self, objects=None):
        self.objects = dict(objects or {})
        self.calls = []

    def get(self, api_version, kind, name):
        self.calls.append(("get", name))
        return self.objects.get(name)

    def apply(self, obj, field_manager="pinned-images", dry_run=False):
        self.calls.append(("apply", obj["metadata"]["name"], field_manager, dry_run))
        if not dry_run:
            stored = dict(obj)
            stored["metadata"] = dict(obj["metadata"], uid="u", resourceVersion="1")
            self.objects[obj["metadata"]["name"]] = stored
        return obj

    def delete(self, api_version, kind, name, dry_run=False):
        self.calls.append(("delete", name, dry_run))
        if name not in self.objects:
            return False
        if not dry_run:
            del self.objects[name]
        return True


def test_sync_cluster_applies_only_differences():
    client = FakeK8s()
    entries = render_for_pools(["worker"], images=[A])
    result = sync_cluster(entries, client, check_mode=True)
    assert result["applied"] == ["99-worker-pinned-images"] and client.objects == {}
    assert client.calls[-1] == ("apply", "99-worker-pinned-images", "pinned-images", True)
    result = sync_cluster(entries, client)
    assert result["changed"] and "99-worker-pinned-images" in client.objects
    client.calls.clear()
    result = sync_cluster(entries, client)
    assert not result["changed"] and client.calls == [("get", "99-worker-pinned-images")]
    changed = sync_cluster(render_for_pools(["worker"], images=[A, B]), client)
    assert changed["applied"] == ["99-worker-pinned-images"]
    assert "pinned_images" not in changed["diffs"][0]["before"]  # the data URL holds it; the diff shows the object
    gone = sync_cluster(entries, client, state="absent")
    assert gone["deleted"] == ["99-worker-pinned-images"] and client.objects == {}
    assert not sync_cluster(entries, client, state="absent")["changed"]


def test_sync_files_lists_created_changed_and_removed_by_bytes(tmp_path):
    dest = tmp_path / "mcs"
    worker, master = str(dest / "99-worker-pinned-images.yaml"), str(dest / "99-master-pinned-images.yaml")
    entries = render_for_pools(["worker", "master"], images=[A])
    first = sync_files(entries, str(dest))
    assert first["file_changes"] == {"created": [worker, master], "changed": [], "removed": []}
    assert first["previous_images"] == {"99-worker-pinned-images": [], "99-master-pinned-images": []}
    # A mode-only fix changes no bytes: not drift.
    (dest / "99-master-pinned-images.yaml").chmod(0o600)
    with open(worker, "a", encoding="utf-8") as handle:
        handle.write("# edited\n")
    check = sync_files(entries, str(dest), check_mode=True)
    assert check["changed"] and check["file_changes"] == {"created": [], "changed": [worker], "removed": []}
    assert check["previous_images"]["99-worker-pinned-images"] == [A]
    emptied = render_for_pools(["worker", "master"], images=None, sets=[])
    assert sync_files(emptied, str(dest))["file_changes"] == {"created": [], "changed": [], "removed": [worker, master]}


def test_images_in_machine_config_reads_the_drop_in_and_tolerates_anything_else():
    assert images_in_machine_config(render_machine_config("worker", [B, A])) == [A, B]
    for junk in (None, "", {"kind": "MachineConfig"}, {"spec": {"config": {"storage": {"files": 1}}}}):
        assert images_in_machine_config(junk) == []
    assert images_in_machine_config(render_machine_config("worker", [A], path="/etc/other")) == []


def test_sync_files_reads_the_images_of_each_previous_file(tmp_path):
    dest = tmp_path / "mcs"
    dest.mkdir()
    worker = dest / "99-worker-pinned-images.yaml"
    for junk in (b"", b"kind: MachineConfig\n", b"[not yaml", b"spec: {config: {storage: {files: 1}}}"):
        worker.write_bytes(junk)
        assert sync_files(render_for_pools(["worker"], images=[A]), str(dest), check_mode=True)["previous_images"] == {
            "99-worker-pinned-images": []
        }
    worker.write_text(rendered_text(render_machine_config("worker", [A, B])))
    for images in ([A], [A, B]):  # a changed file is read back; an unchanged one pins the entry's images
        outcome = sync_files(render_for_pools(["worker"], images=images), str(dest), check_mode=True)
        assert outcome["previous_images"] == {"99-worker-pinned-images": [A, B]}
        assert outcome["changed"] is (images == [A])


def test_image_changes():
    assert image_changes([A], [A, B]) == {"added": [B], "removed": []}
    assert image_changes([A, B], []) == {"added": [], "removed": [A, B]}
