# SPDX-License-Identifier: GPL-3.0-or-later
"""Cost of reading a release payload: bytes received vs the layer size, and the time to read and estimate a
release of N components.

Usage: .venv/bin/python tests/benchmarks/release_read.py [N] [PADDING_MIB]   (default 190 components, 50 MiB)
Starts a lab with no nodes (hack/lab.py) under a temporary directory, pushes N one-layer component images and a
release image listing them whose release-manifests layer carries PADDING_MIB of random bytes after the manifests,
then reads it as the release_image_set module does (release read, then the disk estimate of every image).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / ".build" / "collections"), str(ROOT / "tests")]

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._openshift.release_payload import (  # noqa: E402
    estimate_payload,
    read_release,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._registry.client import RegistryClient  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import RegistriesConf  # noqa: E402
from support.lab import Lab  # noqa: E402


def main(count: int, padding_mib: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        lab = Lab(Path(directory) / "lab")
        lab.up(nodes=0)
        try:
            records = lab.push_bulk(count, prefix="component")
            components = {f"component-{i:03d}": r.reference for i, r in enumerate(records)}
            release = lab.push_release(components, version="4.99.0", padding=padding_mib * 1024 * 1024)
            client = RegistryClient(certs_dirs=[])
            started = time.perf_counter()
            payload = read_release(client, parse_image_ref(release["reference"]), RegistriesConf(), DockerConfig())
            read_seconds = time.perf_counter() - started
            requests = client.request_count
            images = sorted(payload.components.values()) + [payload.reference]
            started = time.perf_counter()
            estimated = estimate_payload(client, images, RegistriesConf(), DockerConfig(), None, 2.0)
            estimate_seconds = time.perf_counter() - started
        finally:
            lab.down()
    print(
        f"release layer {release['layer_size']} bytes; received {payload.bytes_read} bytes of it "
        f"({100 * payload.bytes_read / release['layer_size']:.3f} %)"
    )
    print(f"release read: {read_seconds * 1000:.1f} ms, {requests} requests, {len(payload.components)} components")
    print(
        f"estimate of {len(images)} images: {estimate_seconds * 1000:.1f} ms, "
        f"{estimated['registry_requests']} requests, required {estimated['required']}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 190, int(sys.argv[2]) if len(sys.argv) > 2 else 50)
