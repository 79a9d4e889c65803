# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Manifests: their media types, an image's layers (``ManifestInfo``), and reading a manifest document: decoding,
guessing its type, its layers, the entry of an index for a platform."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    ManifestFormatError,
    PlatformNotFoundError,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import Platform, variant_preference

__all__ = [
    "ACCEPT",
    "DOCKER_LIST",
    "DOCKER_MANIFEST",
    "DOCKER_SCHEMA1",
    "INDEX_TYPES",
    "KNOWN_TYPES",
    "MANIFEST_TYPES",
    "MAX_INDEX_DEPTH",
    "MAX_MANIFEST_SIZE",
    "OCI_INDEX",
    "OCI_MANIFEST",
    "ManifestInfo",
    "decode_manifest",
    "guess_type",
    "manifest_layers",
    "select_platform",
]

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_SCHEMA1 = (
    "application/vnd.docker.distribution.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v1+prettyjws",
)
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
ACCEPT = ", ".join(INDEX_TYPES + MANIFEST_TYPES)
KNOWN_TYPES = INDEX_TYPES + MANIFEST_TYPES + DOCKER_SCHEMA1
# distribution refuses manifests above 4 MiB; so do we.
MAX_MANIFEST_SIZE = 4 * 1024 * 1024
# An index may point to an index; real images never nest deeper.
MAX_INDEX_DEPTH = 3
_DIGEST_RE = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")


@dataclass(frozen=True)
class ManifestInfo:
    """``digest``/``media_type`` of what was asked for; ``platform_digest`` of the image manifest used."""

    digest: str
    media_type: str
    platform_digest: str
    layers: Tuple[Tuple[str, int], ...]
    config_size: int
    platform: str = ""
    reference: str = ""
    config_digest: str = ""


def decode_manifest(ref: ImageRef, digest: str, body: bytes) -> Dict[str, Any]:
    try:
        document = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ManifestFormatError(f"{ref}: manifest {digest} is not JSON", ref.registry) from None
    if not isinstance(document, dict):
        raise ManifestFormatError(f"{ref}: manifest {digest} is not a JSON object", ref.registry)
    return document


def guess_type(document: Dict[str, Any]) -> str:
    # OCI allows manifests without mediaType; registries then send a generic Content-Type.
    if isinstance(document.get("manifests"), list):
        return OCI_INDEX
    if isinstance(document.get("layers"), list):
        return OCI_MANIFEST
    if document.get("schemaVersion") == 1:
        return DOCKER_SCHEMA1[0]
    return ""


def _size(value: object) -> int:
    # bool is an int in Python but never a size.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(value)
    return value


def manifest_layers(ref: ImageRef, digest: str, document: Dict[str, Any]) -> Tuple[Tuple[Tuple[str, int], ...], int]:
    try:
        config = document.get("config") or {}
        config_size = _size(config.get("size", 0))
        layers = []
        for layer in document.get("layers") or []:
            layer_digest = layer["digest"]
            if not isinstance(layer_digest, str) or not _DIGEST_RE.match(layer_digest):
                raise ValueError(layer_digest)
            layers.append((layer_digest, _size(layer["size"])))
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ManifestFormatError(
            f"{ref}: manifest {digest} has a malformed config or layer entry", ref.registry
        ) from None
    return tuple(layers), config_size


def select_platform(ref: ImageRef, digest: str, document: Dict[str, Any], wanted: Platform) -> str:
    candidates: List[Tuple[str, str, str, str]] = []
    for entry in document.get("manifests") or []:
        plat = entry.get("platform") if isinstance(entry, dict) else None
        if not isinstance(plat, dict) or not isinstance(entry.get("digest"), str):
            continue
        candidates.append(
            (
                str(plat.get("os", "")),
                str(plat.get("architecture", "")),
                str(plat.get("variant", "") or ""),
                entry["digest"],
            )
        )
    for variant in variant_preference(wanted):
        for os_name, arch, entry_variant, entry_digest in candidates:
            if os_name == wanted.os and arch == wanted.architecture and entry_variant == variant:
                if not re.match(r"^sha256:[0-9a-f]{64}$", entry_digest):
                    raise ManifestFormatError(
                        f"{ref}: index {digest} names {wanted} by an unsupported digest {entry_digest[:80]!r}",
                        ref.registry,
                    )
                return entry_digest
    available = sorted({str(Platform(o, a, v)) for o, a, v, _digest in candidates if o != "unknown"})
    raise PlatformNotFoundError(
        f"{ref}: index {digest} has no manifest for platform {wanted}; available: {', '.join(available) or 'none'}",
        ref.registry,
    )
