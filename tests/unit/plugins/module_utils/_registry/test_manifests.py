# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry/manifests: decoding a manifest, guessing a type without mediaType, its layers, an index's platform."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    ManifestFormatError,
    PlatformNotFoundError,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import (
    DOCKER_SCHEMA1,
    OCI_INDEX,
    OCI_MANIFEST,
    decode_manifest,
    guess_type,
    manifest_layers,
    select_platform,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import Platform

REF = parse_image_ref("quay.io/a/b:1", require_digest=False)
DIGEST = "sha256:" + "1" * 64


def entry(os_name, arch, variant="", digest=DIGEST):
    platform = {"os": os_name, "architecture": arch}
    if variant:
        platform["variant"] = variant
    return {"digest": digest, "platform": platform}


def test_a_manifest_must_be_a_json_object():
    assert decode_manifest(REF, DIGEST, b'{"a": 1}') == {"a": 1}
    for body, why in ((b"nope", "is not JSON"), (b"[1]", "is not a JSON object"), (b"\xff", "is not JSON")):
        with pytest.raises(ManifestFormatError, match=why):
            decode_manifest(REF, DIGEST, body)


@pytest.mark.parametrize(
    "document, media_type",
    [
        ({"manifests": []}, OCI_INDEX),
        ({"layers": []}, OCI_MANIFEST),
        ({"schemaVersion": 1}, DOCKER_SCHEMA1[0]),
        ({"config": {}}, ""),
    ],
)
def test_the_type_of_a_manifest_without_media_type_is_guessed(document, media_type):
    assert guess_type(document) == media_type


def test_layers_and_config_size_are_read_and_malformed_entries_refused():
    layer = "sha256:" + "2" * 64
    assert manifest_layers(REF, DIGEST, {"config": {"size": 7}, "layers": [{"digest": layer, "size": 5}]}) == (
        ((layer, 5),),
        7,
    )
    for bad in (
        {"layers": [{"digest": layer, "size": True}]},
        {"layers": [{"digest": "x", "size": 1}]},
        {"layers": [{"size": 1}]},
        {"config": {"size": -1}},
    ):
        with pytest.raises(ManifestFormatError, match="malformed config or layer entry"):
            manifest_layers(REF, DIGEST, bad)


def test_an_index_entry_is_chosen_for_the_platform_and_its_variants():
    v8, v7 = "sha256:" + "8" * 64, "sha256:" + "7" * 64
    index = {"manifests": [entry("linux", "amd64"), entry("linux", "arm64", "v8", v8), entry("linux", "arm", "v7", v7)]}
    assert select_platform(REF, DIGEST, index, Platform("linux", "amd64")) == DIGEST
    assert select_platform(REF, DIGEST, index, Platform("linux", "arm64")) == v8
    # arm/v8 hardware runs v7 images.
    assert select_platform(REF, DIGEST, index, Platform("linux", "arm", "v8")) == v7
    with pytest.raises(PlatformNotFoundError, match="available: linux/amd64, linux/arm/v7, linux/arm64/v8"):
        select_platform(REF, DIGEST, index, Platform("linux", "s390x"))
    with pytest.raises(ManifestFormatError, match="unsupported digest"):
        select_platform(
            REF, DIGEST, {"manifests": [entry("linux", "amd64", digest="md5:x")]}, Platform("linux", "amd64")
        )
