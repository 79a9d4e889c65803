# SPDX-License-Identifier: GPL-3.0-or-later
"""Test images, built in memory and pushed with ``support.push.PushClient``: the lab's reproducible images (random
layers from a seed, OCI manifests and indexes, OpenShift release images) and the small images of the registry
client tests (OCI and Docker media types, attestation manifests)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import platform
import random
import re
import tarfile
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from support.push import PushClient, sha256

KIB = 1024
MIB = 1024 * KIB

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}
HOST_PLATFORM = "linux/" + _ARCH.get(platform.machine(), platform.machine())
# The host platform is always in the index so that the nodes (which run on this machine) resolve it.
MULTIARCH_PLATFORMS = tuple(sorted({"linux/amd64", "linux/arm64", HOST_PLATFORM}))
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


@dataclass
class Layer:
    digest: str
    size: int  # compressed bytes, as in the manifest
    diff_id: str  # sha256 of the uncompressed tar, as in the config's rootfs


@dataclass
class Manifest:
    platform: str
    digest: str
    image_id: str  # the config digest, which CRI reports as the image id
    layers: list[Layer]


@dataclass
class ImageRecord:
    name: str
    registry: str
    repository: str
    tag: str
    digest: str  # of the manifest, or of the index for a multi-arch image
    reference: str  # 127.0.0.1:<port>/<repository>@<digest>
    tag_reference: str  # 127.0.0.1:<port>/<repository>:<tag>
    media_type: str
    manifests: list[Manifest]  # one per platform
    # What a node of this machine pulls: the host platform's manifest (empty if the index lacks it).
    image_id: str
    layers: list[Layer]
    size: int  # compressed bytes of `layers`

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ImageRecord:
        fields = dict(data)
        fields["layers"] = [Layer(**layer) for layer in data["layers"]]
        fields["manifests"] = [
            Manifest(**{**m, "layers": [Layer(**layer) for layer in m["layers"]]}) for m in data["manifests"]
        ]
        return cls(**fields)


def canonical(obj: Any) -> bytes:
    """Compact JSON with sorted keys: the same object gives the same bytes, hence the same digest."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def layer_blob(key: str, size: int) -> tuple[bytes, str]:
    """A gzipped tar with one file of `size` random bytes derived from `key`; returns (blob, diff_id)."""
    data = random.Random(key).randbytes(size)
    raw = io.BytesIO()
    # USTAR with zero mtime/uid/gid: the same key gives the same bytes, hence the same digests.
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("lab-%s.bin" % hashlib.sha256(key.encode()).hexdigest()[:16])
        info.size = size
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    # Level 0 (stored deflate blocks) is still gzip: random content would not shrink, and it is 7x faster.
    return gzip.compress(tar_bytes, compresslevel=0, mtime=0), sha256(tar_bytes)


def platform_fields(plat: str) -> dict[str, str]:
    parts = plat.split("/")
    fields = {"os": parts[0], "architecture": parts[1]}
    if len(parts) > 2:
        fields["variant"] = parts[2]
    return fields


def parse_size(text: str) -> int:
    """'65536', '64K', '1M', '2G' -> bytes."""
    match = re.fullmatch(r"([0-9]+)([kKmMgG]?)i?[bB]?", text.strip())
    if not match:
        raise ValueError("not a size: %r" % text)
    factor = {"": 1, "k": KIB, "m": MIB, "g": 1024 * MIB}[match.group(2).lower()]
    return int(match.group(1)) * factor


def release_layer(components: Mapping[str, str], version: str, padding: int = 0, key: str = "") -> bytes:
    """An OpenShift release-manifests layer (gzip tar): image-references (an ImageStream of `components`, tag name
    to image) and release-metadata first, then `padding` random bytes in a third file, so a reader that stops
    after the manifests can be told from one that reads the whole layer."""
    stream = {
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": version, "creationTimestamp": None},
        "spec": {
            "lookupPolicy": {"local": False},
            "tags": [
                {"name": name, "from": {"kind": "DockerImage", "name": image}} for name, image in components.items()
            ],
        },
    }
    metadata = {"kind": "cincinnati-metadata-v0", "version": version, "previous": [], "metadata": {}}
    files = [
        ("release-manifests/image-references", json.dumps(stream, indent=2).encode()),
        ("release-manifests/release-metadata", json.dumps(metadata, indent=2).encode()),
    ]
    if padding:
        files.append(("release-manifests/0000_99_padding.bin", random.Random(key or version).randbytes(padding)))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=0, mtime=0)


def push_release_manifest(
    client: PushClient, repo: str, plat: str, version: str, layers: Sequence[bytes], labelled: bool = True
) -> tuple[str, bytes]:
    """Push `layers` (gzip blobs) and a config labelled io.openshift.release=`version`; return (digest, manifest)."""
    descriptors = [
        {"mediaType": OCI_LAYER, "digest": client.push_blob(repo, blob), "size": len(blob)} for blob in layers
    ]
    labels = {"io.openshift.release": version} if labelled else {"io.pinned-images.lab": repo}
    config = canonical(
        {
            **platform_fields(plat),
            "created": "1970-01-01T00:00:00Z",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": [sha256(gzip.decompress(blob)) for blob in layers]},
        }
    )
    body = canonical(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": client.push_blob(repo, config), "size": len(config)},
            "layers": descriptors,
        }
    )
    digest = sha256(body)
    client.push_manifest(repo, digest, body, OCI_MANIFEST)
    return digest, body


def push_lab_image(
    client: PushClient,
    seed: int,
    host: str,
    registry: str,
    repo: str,
    tag: str,
    layer_sizes: Sequence[int],
    shared_layers: Mapping[str, int],
    platforms: Sequence[str] | None,
    name: str | None,
) -> ImageRecord:
    """Build and push one lab image (see ``Lab.push_image``): its layers depend only on ``seed``, ``repo``, ``tag``,
    the platform and the sizes; ``host`` is the registry's ``127.0.0.1:<port>``, ``registry`` its lab name."""
    manifests, bodies = [], []
    for plat in platforms or [HOST_PLATFORM]:
        specs = [("shared:%s" % key, size) for key, size in shared_layers.items()]
        specs += [("%s:%s:%d" % (repo, tag, i), size) for i, size in enumerate(layer_sizes)]
        layers = []
        for key, size in specs:
            blob, diff_id = layer_blob("%d:%s:%s:%d" % (seed, plat, key, size), size)
            layers.append(Layer(client.push_blob(repo, blob), len(blob), diff_id))
        config = canonical(
            {
                **platform_fields(plat),
                "created": "1970-01-01T00:00:00Z",
                "config": {"Labels": {"io.pinned-images.lab": "%s:%s" % (repo, tag)}},
                "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
            }
        )
        config_digest = client.push_blob(repo, config)
        body = canonical(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config)},
                "layers": [{"mediaType": OCI_LAYER, "digest": x.digest, "size": x.size} for x in layers],
            }
        )
        manifests.append(Manifest(plat, sha256(body), config_digest, layers))
        bodies.append(body)
    if platforms is None:
        body, media_type = bodies[0], OCI_MANIFEST
    else:
        for manifest, child in zip(manifests, bodies):
            client.push_manifest(repo, manifest.digest, child, OCI_MANIFEST)
        index = {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": manifest.digest,
                    "size": len(child),
                    "platform": platform_fields(manifest.platform),
                }
                for manifest, child in zip(manifests, bodies)
            ],
        }
        body, media_type = canonical(index), OCI_INDEX
    client.push_manifest(repo, tag, body, media_type)
    digest = sha256(body)
    local = next((m for m in manifests if m.platform == HOST_PLATFORM), None)
    return ImageRecord(
        name=name or "%s/%s:%s" % (registry, repo, tag),
        registry=registry,
        repository=repo,
        tag=tag,
        digest=digest,
        reference="%s/%s@%s" % (host, repo, digest),
        tag_reference="%s/%s:%s" % (host, repo, tag),
        media_type=media_type,
        manifests=manifests,
        image_id=local.image_id if local else "",
        layers=local.layers if local else [],
        size=sum(layer.size for layer in local.layers) if local else 0,
    )


# ---- the small images of the registry client tests ---------------------------------------------------------


@dataclass
class PushedImage:
    repository: str
    digest: str
    media_type: str
    layers: list = field(default_factory=list)  # [(digest, size)] of the single manifest (or per platform)
    config_size: int = 0
    size: int = 0  # of the manifest itself
    platforms: dict = field(default_factory=dict)  # "linux/amd64" -> PushedImage for an index

    @property
    def layer_sum(self) -> int:
        return sum(size for _digest, size in self.layers)


def push_image(
    pusher: PushClient,
    repo: str,
    layer_blobs: list,
    *,
    tag: str | None = None,
    docker: bool = False,
    os_name: str = "linux",
    architecture: str = "amd64",
    variant: str = "",
) -> PushedImage:
    config = {"architecture": architecture, "os": os_name, "rootfs": {"type": "layers", "diff_ids": []}}
    if variant:
        config["variant"] = variant
    config_body = json.dumps(config).encode()
    config_digest = pusher.push_blob(repo, config_body)
    layers = [(pusher.push_blob(repo, blob), len(blob)) for blob in layer_blobs]
    media_type = DOCKER_MANIFEST if docker else OCI_MANIFEST
    document = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": {
            "mediaType": DOCKER_CONFIG if docker else OCI_CONFIG,
            "digest": config_digest,
            "size": len(config_body),
        },
        "layers": [{"mediaType": DOCKER_LAYER if docker else OCI_LAYER, "digest": d, "size": s} for d, s in layers],
    }
    body = json.dumps(document, indent=2).encode()
    digest = sha256(body)
    pusher.push_manifest(repo, tag or digest, body, media_type)
    return PushedImage(repo, digest, media_type, layers, len(config_body), len(body))


def push_index(
    pusher: PushClient, repo: str, children: dict, *, tag: str | None = None, docker: bool = False
) -> PushedImage:
    """``children``: {"linux/amd64": [layer bytes, ...], "linux/arm/v7": [...]} -> an index over them."""
    entries = []
    platforms = {}
    for platform_name, blobs in children.items():
        os_name, architecture, *rest = platform_name.split("/")
        variant = rest[0] if rest else ""
        child = push_image(
            pusher, repo, blobs, docker=docker, os_name=os_name, architecture=architecture, variant=variant
        )
        platforms[platform_name] = child
        plat = {"os": os_name, "architecture": architecture}
        if variant:
            plat["variant"] = variant
        entries.append({"mediaType": child.media_type, "digest": child.digest, "size": child.size, "platform": plat})
    media_type = DOCKER_LIST if docker else OCI_INDEX
    document = {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}
    body = json.dumps(document, indent=2).encode()
    digest = pusher.push_manifest(repo, tag or sha256(body), body, media_type)
    return PushedImage(repo, digest, media_type, platforms=platforms)


def layer(seed: str, size: int) -> bytes:
    """Deterministic incompressible-looking bytes, so equal seeds share a digest."""
    out = b""
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return out[:size]


# ---- runnable images of the lab's workloads (tests/support/cri_workloads.py) --------------------------------

BUSYBOX = "/bin/busybox"  # Debian's busybox-static (hack/programs.txt): one static binary, no libraries
BUSYBOX_APPLETS = ("sh", "sleep", "true", "kill")
# A pause that ends at once on SIGTERM (a PID 1 gets no default handlers) and takes its sleep with it.
PAUSE_COMMAND = ["/bin/sh", "-c", 'trap "kill $!; exit 0" TERM; sleep 2147483647 & wait']


def busybox_layer(name: str) -> tuple[bytes, str]:
    """A gzipped tar of /bin/busybox, its applets in ``BUSYBOX_APPLETS`` as symlinks, the directories a runtime
    mounts over, and /etc/pinned-images-lab naming ``name`` (so each image has its own layer); (blob, diff_id)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for directory in ("bin", "dev", "etc", "proc", "sys", "tmp"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755
            tar.addfile(info)
        with open(BUSYBOX, "rb") as handle:
            binary = handle.read()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(binary), 0o755
        tar.addfile(info, io.BytesIO(binary))
        for applet in BUSYBOX_APPLETS:
            info = tarfile.TarInfo("bin/" + applet)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, "busybox", 0o777
            tar.addfile(info)
        text = ("%s\n" % name).encode()
        info = tarfile.TarInfo("etc/pinned-images-lab")
        info.size, info.mode = len(text), 0o644
        tar.addfile(info, io.BytesIO(text))
    tar_bytes = raw.getvalue()
    return gzip.compress(tar_bytes, mtime=0), sha256(tar_bytes)


def push_busybox_image(
    client: PushClient, host: str, registry: str, repo: str, tag: str, cmd: Sequence[str], name: str
) -> ImageRecord:
    """Push a one-layer busybox image for this machine's platform whose default command is ``cmd``."""
    blob, diff_id = busybox_layer("%s:%s" % (repo, tag))
    layer = Layer(client.push_blob(repo, blob), len(blob), diff_id)
    config = canonical(
        {
            **platform_fields(HOST_PLATFORM),
            "created": "1970-01-01T00:00:00Z",
            "config": {"Cmd": list(cmd), "Labels": {"io.pinned-images.lab": "%s:%s" % (repo, tag)}},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }
    )
    config_digest = client.push_blob(repo, config)
    body = canonical(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config)},
            "layers": [{"mediaType": OCI_LAYER, "digest": layer.digest, "size": layer.size}],
        }
    )
    client.push_manifest(repo, tag, body, OCI_MANIFEST)
    digest = sha256(body)
    return ImageRecord(
        name=name,
        registry=registry,
        repository=repo,
        tag=tag,
        digest=digest,
        reference="%s/%s@%s" % (host, repo, digest),
        tag_reference="%s/%s:%s" % (host, repo, tag),
        media_type=OCI_MANIFEST,
        manifests=[Manifest(HOST_PLATFORM, digest, config_digest, [layer])],
        image_id=config_digest,
        layers=[layer],
        size=layer.size,
    )
