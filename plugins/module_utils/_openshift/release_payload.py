# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read an OpenShift release payload from its registry and turn it into PinnedImageSets (controller side).

A release image carries the label ``io.openshift.release=<version>``; one of its layers holds
``release-manifests/image-references`` (an ImageStream whose ``spec.tags[].from.name`` are the component images by
digest) and ``release-manifests/release-metadata`` (JSON with ``version``). Layers are streamed, gunzipped and
walked as a tar stream, last layer first (where ``oc adm release new`` puts the manifests), and reading stops as
soon as both files are read: nothing is kept whole in memory or on disk.
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import re
import tarfile
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageRef,
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import YAMLError, load_yaml
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import estimate, human_size
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import (
    PullEstimator,
    RetryPolicy,
    read_from_sources,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import (
    DockerConfig,
    RegistryCredentials,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.client import RegistryClient
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import ManifestInfo
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import Platform
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    PullSource,
    RegistriesConf,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import check_dns_subdomain
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    MAX_PINNED_IMAGES,
    PINNED_IMAGE_SET_KIND,
    ROLE_LABEL,
    validate_set,
)

__all__ = [
    "IMAGE_REFERENCES",
    "MAX_CONFIG_SIZE",
    "MAX_MANIFEST_FILE",
    "RELEASE_LABEL",
    "RELEASE_METADATA",
    "ReleasePayload",
    "ReleasePayloadError",
    "build_sets",
    "default_set_name",
    "estimate_payload",
    "parse_image_references",
    "parse_release_metadata",
    "read_release",
    "scan_layer",
    "select_components",
]

RELEASE_LABEL = "io.openshift.release"
IMAGE_REFERENCES = "release-manifests/image-references"
RELEASE_METADATA = "release-manifests/release-metadata"
# image-references of a 4.x release is about 100 KiB; refuse anything absurd before parsing it.
MAX_MANIFEST_FILE = 16 * 1024 * 1024
MAX_CONFIG_SIZE = 4 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _Readable(Protocol):
    def read(self, size: int = -1) -> bytes: ...


class ReleasePayloadError(CollectionError):
    """The image is not a readable release payload; the message names the image and what was found."""


@dataclass
class ReleasePayload:
    """What a release image holds; ``bytes_read`` counts the blob bytes received from the registry."""

    reference: str
    digest: str
    version: str
    components: Dict[str, str]
    metadata: Dict[str, Any] = field(default_factory=dict)
    source: str = ""
    platform: str = ""
    layer: Dict[str, Any] = field(default_factory=dict)
    bytes_read: int = 0


class _Peeked:
    """A file whose first bytes were already read (to tell gzip from tar)."""

    def __init__(self, head: bytes, stream: _Readable) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: Optional[int] = -1) -> bytes:
        """As a file's ``read``: the peeked bytes first."""
        if self._head:
            if size is None or size < 0:
                data, self._head = self._head + self._stream.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            if len(data) < size:
                data += self._stream.read(size - len(data))
            return data
        return self._stream.read(-1 if size is None else size)


def _read_entry(tar: tarfile.TarFile, member: tarfile.TarInfo, what: str) -> bytes:
    if member.size > MAX_MANIFEST_FILE:
        raise ReleasePayloadError(f"{what} is {member.size} bytes; at most {MAX_MANIFEST_FILE} are read")
    handle = tar.extractfile(member)
    return handle.read() if handle is not None else b""


def _entry_name(name: str) -> str:
    """``./release-manifests/x`` and ``/release-manifests/x`` as ``release-manifests/x``."""
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def scan_layer(blob: _Readable, image: str, layer_digest: str) -> Dict[str, bytes]:
    """{path: bytes} of the release-manifests files in one layer stream; stops once both are read."""
    head = blob.read(4)
    where = f"release image {image}: layer {layer_digest}"
    if head.startswith(_ZSTD_MAGIC):
        raise ReleasePayloadError(f"{where} is zstd-compressed, which is not supported; gzip or plain tar is")
    stream: Any = _Peeked(head, blob)
    if head.startswith(_GZIP_MAGIC):
        stream = gzip.GzipFile(fileobj=stream, mode="rb")
    found: Dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                name = _entry_name(member.name)
                if name in (IMAGE_REFERENCES, RELEASE_METADATA) and member.isfile():
                    found[name] = _read_entry(tar, member, f"{where}: {name}")
                    if len(found) == 2:
                        break
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        kind = "gzip-compressed tar" if head.startswith(_GZIP_MAGIC) else "tar (nor gzip)"
        raise ReleasePayloadError(
            f"{where} is not a valid {kind}: {type(exc).__name__}: {str(exc)[:120]} (first bytes {head.hex()})"
        ) from None
    return found


def parse_image_references(data: bytes, image: str) -> Dict[str, str]:
    """{tag name: digest reference} from an ImageStream document (JSON or YAML)."""
    where = f"release image {image}: {IMAGE_REFERENCES}"
    try:
        document = load_yaml(data.decode("utf-8"))
    except (YAMLError, UnicodeDecodeError) as exc:
        raise ReleasePayloadError(f"{where} is not JSON or YAML: {str(exc)[:120]}") from None
    if not isinstance(document, dict) or document.get("kind") != "ImageStream":
        kind = document.get("kind") if isinstance(document, dict) else type(document).__name__
        raise ReleasePayloadError(f"{where} is not an ImageStream (kind {kind!r})")
    tags = (document.get("spec") or {}).get("tags")
    if not isinstance(tags, list) or not tags:
        raise ReleasePayloadError(f"{where} has no spec.tags")
    components: Dict[str, str] = {}
    problems: List[str] = []
    for index, tag in enumerate(tags):
        name = tag.get("name") if isinstance(tag, dict) else None
        source = tag.get("from") if isinstance(tag, dict) else None
        value = source.get("name") if isinstance(source, dict) else None
        label = f"spec.tags[{index}]" + (f" ({name})" if isinstance(name, str) else "")
        if not isinstance(name, str) or not name:
            problems.append(f"{label} has no name")
            continue
        if not isinstance(source, dict) or source.get("kind", "DockerImage") != "DockerImage":
            problems.append(
                f"{label}: from.kind is {source.get('kind') if isinstance(source, dict) else None!r}; "
                "only DockerImage is read"
            )
            continue
        try:
            ref = parse_image_ref(value, require_digest=True)
        except ImageReferenceError as exc:
            problems.append(f"{label}: {exc}")
            continue
        if name in components:
            problems.append(f"{label} repeats the tag name {name!r}")
            continue
        components[name] = str(ref)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ReleasePayloadError(f"{where}: every component must be a digest reference: {shown}")
    return components


def parse_release_metadata(data: bytes, image: str) -> Dict[str, Any]:
    """The release-metadata JSON object (``version``, ``previous``, ``metadata``)."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ReleasePayloadError(f"release image {image}: {RELEASE_METADATA} is not JSON") from None
    if not isinstance(document, dict):
        raise ReleasePayloadError(f"release image {image}: {RELEASE_METADATA} is not a JSON object")
    return document


def _config_labels(
    client: RegistryClient,
    source: PullSource,
    info: ManifestInfo,
    credentials: Optional[RegistryCredentials],
    insecure: bool,
    image: str,
) -> Dict[str, Any]:
    data = client.read_blob(source.reference, info.config_digest, credentials, insecure, MAX_CONFIG_SIZE)
    try:
        config = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ReleasePayloadError(f"release image {image}: its config {info.config_digest} is not JSON") from None
    labels = (config.get("config") or {}).get("Labels") if isinstance(config, dict) else None
    return labels if isinstance(labels, dict) else {}


def _read_from(
    client: RegistryClient,
    source: PullSource,
    credentials: Optional[RegistryCredentials],
    insecure: bool,
    platform: Optional[Platform],
    image: str,
) -> ReleasePayload:
    info = client.manifest_info(source.reference, credentials, insecure, platform)
    labels = _config_labels(client, source, info, credentials, insecure, image)
    if RELEASE_LABEL not in labels:
        shown = ", ".join(sorted(labels)[:10]) or "none"
        raise ReleasePayloadError(
            f"{image} is not an OpenShift release image: its config has no {RELEASE_LABEL} label (labels: {shown})"
        )
    found: Dict[str, bytes] = {}
    read = 0
    layer: Dict[str, Any] = {}
    # oc adm release new appends the manifests as the last layer; earlier layers are read only if it is not there.
    for layer_digest, layer_size in reversed(info.layers):
        with client.open_blob(source.reference, layer_digest, credentials, insecure) as blob:
            found = scan_layer(blob, image, layer_digest)
            read += blob.bytes_read
        if IMAGE_REFERENCES in found:
            layer = {"digest": layer_digest, "size": layer_size}
            break
    if IMAGE_REFERENCES not in found:
        raise ReleasePayloadError(
            f"{image} carries the {RELEASE_LABEL} label but none of its {len(info.layers)} layers holds "
            f"{IMAGE_REFERENCES}"
        )
    components = parse_image_references(found[IMAGE_REFERENCES], image)
    metadata = parse_release_metadata(found[RELEASE_METADATA], image) if RELEASE_METADATA in found else {}
    version = metadata.get("version") or labels[RELEASE_LABEL]
    if not isinstance(version, str) or not version:
        raise ReleasePayloadError(f"release image {image} names no version ({RELEASE_LABEL} is empty)")
    return ReleasePayload(
        reference="",
        digest=info.digest,
        version=version,
        components=components,
        metadata=metadata,
        source=str(source.reference),
        platform=info.platform,
        layer=layer,
        bytes_read=read,
    )


def read_release(
    client: RegistryClient,
    ref: ImageRef,
    registries: RegistriesConf,
    docker_config: DockerConfig,
    platform: Optional[Platform] = None,
) -> ReleasePayload:
    """Read release image ``ref`` (an ImageRef, by digest or tag) from its first pull source that answers.

    Raises ReleasePayloadError (not a release image, bad payload), RegistriesConfError, SourcesFailedError.
    """
    image = str(ref)
    payload: ReleasePayload
    payload, _source = read_from_sources(
        ref,
        registries,
        docker_config,
        lambda source, credentials, insecure: _read_from(client, source, credentials, insecure, platform, image),
    )
    # Sets name the release by its own repository; the runtime applies mirrors to pulls.
    payload.reference = f"{ref.name}@{payload.digest}"
    return payload


def select_components(
    components: Mapping[str, str], include: Optional[Sequence[str]] = None, exclude: Optional[Sequence[str]] = None
) -> Dict[str, str]:
    """Components whose tag name matches a pattern of ``include`` (all when empty) and none of ``exclude``."""
    return {
        name: image
        for name, image in sorted(components.items())
        if (not include or any(fnmatch.fnmatchcase(name, p) for p in include))
        and not any(fnmatch.fnmatchcase(name, p) for p in exclude or ())
    }


def default_set_name(version: str) -> str:
    """``release-<version>`` as a Kubernetes name: lower case, characters other than ``[a-z0-9.-]`` as ``-``."""
    name = re.sub(r"[^a-z0-9.-]+", "-", f"release-{version}".lower()).strip("-.")
    return name[:200].rstrip("-.")


def build_sets(
    images: Iterable[str], name: str, labels: Optional[Mapping[str, str]] = None, pools: Optional[Sequence[str]] = None
) -> List[Dict[str, Any]]:
    """One PinnedImageSet object, or one per pool (``<name>-<pool>``, labelled for the pool's role); validated."""
    unique = sorted(set(images))
    if len(unique) > MAX_PINNED_IMAGES:
        raise ReleasePayloadError(
            f"the release lists {len(unique)} images; a PinnedImageSet holds at most {MAX_PINNED_IMAGES}: "
            "narrow it with include or exclude"
        )
    problem = check_dns_subdomain(name, "name")
    if problem:
        raise ReleasePayloadError(problem)
    targets = (
        [(f"{name}-{pool}", dict(labels or {}, **{ROLE_LABEL: pool})) for pool in pools]
        if pools
        else [(name, dict(labels or {}))]
    )
    sets: List[Dict[str, Any]] = []
    for set_name, set_labels in targets:
        obj = {
            "apiVersion": API_VERSION,
            "kind": PINNED_IMAGE_SET_KIND,
            "metadata": {"name": set_name, "labels": set_labels} if set_labels else {"name": set_name},
            "spec": {"pinnedImages": [{"name": image} for image in unique]},
        }
        validate_set(obj, "release")
        sets.append(obj)
    return sets


def estimate_payload(
    client: RegistryClient,
    images: Iterable[str],
    registries: RegistriesConf,
    docker_config: DockerConfig,
    platform: Optional[Platform],
    expansion_factor: float,
) -> Dict[str, Any]:
    """The disk guard's estimate for ``images`` on one node, with the manifests that could not be read."""
    estimator = PullEstimator(client, registries, docker_config, RetryPolicy(retries=2), platform)
    before = client.request_count
    manifests, unreadable = estimator.read([parse_image_ref(image) for image in images])
    counted = estimate(manifests, expansion_factor)
    return {
        "images": counted["images"],
        "layers": counted["layers"],
        "compressed_bytes": counted["compressed_bytes"],
        "required_bytes": counted["required_bytes"],
        "expansion_factor": expansion_factor,
        "required": human_size(counted["required_bytes"]),
        "unreadable": {image: error for image, (error, _kind) in unreadable.items()},
        "registry_requests": client.request_count - before,
    }
