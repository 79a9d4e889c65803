# SPDX-License-Identifier: GPL-3.0-or-later
"""_release_payload: the tar/gzip walk over real archives made here, the ImageStream parsing, the set building.
Reading from a registry is covered by tests/functional/test_release_lab.py."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile

import pytest

from ansible_collections.pinned.images.plugins.module_utils._openshift.release_payload import (
    IMAGE_REFERENCES,
    RELEASE_METADATA,
    ReleasePayloadError,
    build_sets,
    default_set_name,
    parse_image_references,
    scan_layer,
    select_components,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.model import MAX_PINNED_IMAGES

DIGEST = "sha256:" + "ab" * 32
IMAGE = "quay.example.com/ocp/release@" + DIGEST
STREAM = {
    "kind": "ImageStream",
    "apiVersion": "image.openshift.io/v1",
    "spec": {
        "tags": [
            {"name": "cli", "from": {"kind": "DockerImage", "name": "quay.example.com/ocp/art@sha256:" + "01" * 32}},
            {"name": "etcd", "from": {"kind": "DockerImage", "name": "quay.example.com/ocp/art@sha256:" + "02" * 32}},
        ]
    },
}


class Counting(io.BytesIO):
    """A layer stream that counts what the reader took."""

    taken = 0

    def read(self, size=-1):
        data = super().read(size)
        self.taken += len(data)
        return data


def tar_bytes(files) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def manifests(padding: int = 0, prefix: str = ""):
    files = [
        (prefix + IMAGE_REFERENCES, json.dumps(STREAM).encode()),
        (prefix + RELEASE_METADATA, b'{"version": "4.16.3"}'),
    ]
    return files + ([("release-manifests/zz-padding", os.urandom(padding))] if padding else [])


@pytest.mark.parametrize("compress", [True, False])
def test_the_walk_stops_after_both_files(compress):
    data = tar_bytes(manifests(padding=4 * 1024 * 1024))
    blob = Counting(gzip.compress(data, compresslevel=1) if compress else data)
    found = scan_layer(blob, IMAGE, DIGEST)
    assert set(found) == {IMAGE_REFERENCES, RELEASE_METADATA}
    assert json.loads(found[RELEASE_METADATA]) == {"version": "4.16.3"}
    assert blob.taken < 256 * 1024 < len(blob.getvalue())


def test_dot_slash_names_and_other_files_first():
    data = tar_bytes([("./usr/bin/cluster-version-operator", b"x" * 5000)] + manifests(prefix="./"))
    assert set(scan_layer(io.BytesIO(gzip.compress(data)), IMAGE, DIGEST)) == {IMAGE_REFERENCES, RELEASE_METADATA}


@pytest.mark.parametrize(
    "blob, expected",
    [
        (b"this is no archive at all" * 40, "is not a valid tar (nor gzip)"),
        (gzip.compress(b"x" * 2000)[:40], "is not a valid gzip-compressed tar"),
        (b"\x28\xb5\x2f\xfd" + b"\0" * 100, "is zstd-compressed, which is not supported"),
    ],
)
def test_a_layer_that_is_not_gzip_or_tar_is_named(blob, expected):
    with pytest.raises(ReleasePayloadError) as info:
        scan_layer(io.BytesIO(blob), IMAGE, DIGEST)
    assert f"release image {IMAGE}: layer {DIGEST} {expected}" in str(info.value)


def test_image_references_are_read_as_digest_references():
    assert parse_image_references(json.dumps(STREAM).encode(), IMAGE) == {
        "cli": "quay.example.com/ocp/art@sha256:" + "01" * 32,
        "etcd": "quay.example.com/ocp/art@sha256:" + "02" * 32,
    }


@pytest.mark.parametrize(
    "document, expected",
    [
        ({"kind": "ConfigMap"}, "is not an ImageStream (kind 'ConfigMap')"),
        ({"kind": "ImageStream", "spec": {}}, "has no spec.tags"),
        (
            {
                "kind": "ImageStream",
                "spec": {
                    "tags": [{"name": "cli", "from": {"kind": "DockerImage", "name": "quay.example.com/ocp/art:4.16"}}]
                },
            },
            "every component must be a digest reference: spec.tags[0] (cli): image reference "
            "'quay.example.com/ocp/art:4.16' is not pinned by digest",
        ),
        (
            {
                "kind": "ImageStream",
                "spec": {"tags": [{"name": "cli", "from": {"kind": "ImageStreamTag", "name": "x"}}]},
            },
            "from.kind is 'ImageStreamTag'; only DockerImage is read",
        ),
    ],
)
def test_bad_image_references_are_named(document, expected):
    with pytest.raises(ReleasePayloadError) as info:
        parse_image_references(json.dumps(document).encode(), IMAGE)
    assert str(info.value).startswith(f"release image {IMAGE}: {IMAGE_REFERENCES}")
    assert expected in str(info.value)


def test_select_components_and_default_name():
    components = {"cli": "a", "machine-config-operator": "b", "machine-os-content": "c", "etcd": "d"}
    assert select_components(components, ["machine-*"], ["*-content"]) == {"machine-config-operator": "b"}
    assert select_components(components) == dict(sorted(components.items()))
    assert default_set_name("4.16.0-0.nightly-2024-05-01-000000") == "release-4.16.0-0.nightly-2024-05-01-000000"
    assert default_set_name("4.16.3+Build_7") == "release-4.16.3-build-7"


def test_sets_per_pool_are_valid_and_a_too_long_list_is_refused():
    images = ["quay.example.com/ocp/art@sha256:%064x" % n for n in range(3)]
    sets = build_sets(images, "release-4.16.3", {"team": "ops"}, ["master", "worker"])
    assert [s["metadata"]["name"] for s in sets] == ["release-4.16.3-master", "release-4.16.3-worker"]
    assert sets[0]["metadata"]["labels"] == {"team": "ops", "machineconfiguration.openshift.io/role": "master"}
    assert [i["name"] for i in sets[1]["spec"]["pinnedImages"]] == images
    with pytest.raises(ReleasePayloadError, match=f"lists {MAX_PINNED_IMAGES + 1} images; a PinnedImageSet holds"):
        build_sets(["quay.example.com/ocp/art@sha256:%064x" % n for n in range(MAX_PINNED_IMAGES + 1)], "r")
    with pytest.raises(ReleasePayloadError, match="name"):
        build_sets(images, "Not_A_Name")
