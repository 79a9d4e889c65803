# SPDX-License-Identifier: GPL-3.0-or-later
"""Cost of the disk estimate: time and HTTP requests to read the manifests of N images from local registries.

Usage: .venv/bin/python tests/benchmarks/estimate_overhead.py [N]   (default 100)
Starts the test registries of tests/support/registries.py under a temporary directory, pushes N images
(every fifth an OCI index over amd64 and arm64; layers shared in groups of ten) to the plain-HTTP registry and
to the TLS + token-auth registry, then estimates them sequentially and with 4 threads.
"""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / ".build" / "collections"), str(ROOT / "tests")]

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import estimate, human_size  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import RegistryCredentials  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._registry.client import RegistryClient  # noqa: E402
from support.images import layer, push_image, push_index  # noqa: E402
from support.push import PushClient  # noqa: E402
from support.registries import PASSWORD, USER, start_registries  # noqa: E402


def push_set(pusher: PushClient, count: int) -> list:
    refs = []
    for i in range(count):
        repo = f"bench/app{i}"
        base = layer(f"base{i // 10}", 20000)
        if i % 5 == 0:
            pushed = push_index(
                pusher, repo, {"linux/amd64": [base, layer(f"amd{i}", 3000)], "linux/arm64": [layer(f"arm{i}", 2000)]}
            )
        else:
            pushed = push_image(pusher, repo, [base, layer(f"a{i}", 4000), layer(f"b{i}", 1000)])
        refs.append(f"{pusher.host}/{repo}@{pushed.digest}")
    return refs


def run(label, refs, credentials, insecure, certs_dir, workers, token_server=None):
    client = RegistryClient(certs_dirs=[certs_dir])
    tokens_before = token_server.requests if token_server else 0
    parsed = [parse_image_ref(r) for r in refs]
    start = time.perf_counter()
    if workers == 1:
        infos = [
            client.manifest_info(r, credentials=credentials, insecure=insecure, platform="linux/amd64") for r in parsed
        ]
    else:
        with ThreadPoolExecutor(workers) as pool:
            infos = list(
                pool.map(
                    lambda r: client.manifest_info(
                        r, credentials=credentials, insecure=insecure, platform="linux/amd64"
                    ),
                    parsed,
                )
            )
    elapsed = time.perf_counter() - start
    result = estimate(dict(zip(refs, infos)))
    tokens = (token_server.requests - tokens_before) if token_server else 0
    print(
        f"{label:<38} workers={workers}  {elapsed * 1000:7.1f} ms  {elapsed * 1000 / len(refs):5.2f} ms/image  "
        f"requests={client.request_count:4d} ({client.request_count / len(refs):.2f}/image, token={tokens})  "
        f"required={human_size(result['required_bytes'])} layers={result['layers']}"
    )
    return result


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as base:
        lab = start_registries(base, push=False)
        try:
            t0 = time.perf_counter()
            plain_refs = push_set(lab.pusher("plain"), count)
            token_refs = push_set(lab.pusher("token"), count)
            print(f"pushed {2 * count} images in {time.perf_counter() - t0:.1f} s")
            alice = RegistryCredentials(USER, PASSWORD)
            for workers in (1, 4):
                run("plain HTTP, anonymous (insecure)", plain_refs, None, True, lab.certs_dir, workers)
                run(
                    "TLS + bearer token (basic creds)",
                    token_refs,
                    alice,
                    False,
                    lab.certs_dir,
                    workers,
                    lab.token_server,
                )
        finally:
            lab.stop()


if __name__ == "__main__":
    main()
