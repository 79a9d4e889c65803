#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wall time of `ansible -m pinned.images.prefetch` on a lab node: N fresh images, then the same set present.

Starts its own lab (hack/lab.py) in a temp dir, pushes --fresh + --present distinct images, and prints figures and
ratios: the module's own seconds, the whole `ansible` command, the disk-guard estimate (seconds, registry requests),
and the CRI calls that a present set costs. Usage: .venv/bin/python tests/benchmarks/prefetch_wall_time.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / ".build" / "collections")]

from fixtures.ansible_runs import adhoc  # noqa: E402  pylint: disable=wrong-import-position
from support.lab import Lab  # noqa: E402  pylint: disable=wrong-import-position


def run_module(args: dict) -> tuple[float, dict]:
    started = time.monotonic()
    rc, result, output = adhoc("pinned.images.prefetch", args, timeout=3600)
    elapsed = time.monotonic() - started
    if rc != 0 or not result:
        raise SystemExit(f"ansible failed ({rc}):\n{output}")
    return elapsed, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fresh", type=int, default=40)
    parser.add_argument("--present", type=int, default=100)
    parser.add_argument("--size", type=int, default=256 * 1024, help="bytes per image layer")
    parser.add_argument("--concurrency", type=int, default=5)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="pinned-bench-") as tmp:
        lab = Lab(tmp)
        lab.up(nodes=1, control_plane=0)
        try:
            count = max(options.fresh, options.present)
            records = lab.push_bulk(count, options.size)
            socket = next(iter(lab.status()["nodes"].values()))["endpoint"]
            common = dict(cri_socket=socket, concurrency=options.concurrency, min_free="64Mi")
            fresh = [r.reference for r in records[: options.fresh]]
            wall, result = run_module(dict(common, images=fresh))
            guard = result["disk_guard"]
            print(f"fresh:   {options.fresh} images x {options.size // 1024} KiB, concurrency {options.concurrency}")
            print(
                f"  ansible wall {wall:.2f} s, module {result['totals']['seconds']:.2f} s, "
                f"pulled {result['totals']['pulled']}, {result['totals']['bytes_pulled'] / 2**20:.1f} MiB"
            )
            print(
                f"  disk-guard estimate {guard['estimate_seconds']:.2f} s, {guard['registry_requests']} registry requests "
                f"({guard['registry_requests'] / options.fresh:.2f} per image, "
                f"{guard['estimate_seconds'] / max(result['totals']['seconds'], 1e-9):.1%} of the module time)"
            )

            lab_images = [r.reference for r in records[: options.present]]
            run_module(dict(common, images=lab_images))  # make all of them present
            wall_present, present = run_module(dict(common, images=lab_images))
            print(f"present: {options.present} images already on the node")
            print(
                f"  ansible wall {wall_present:.2f} s, module {present['totals']['seconds']:.3f} s, "
                f"changed={present['changed']}, present {present['totals']['present']}"
            )
            print(
                f"  ratio fresh/present module time: {result['totals']['seconds'] / max(present['totals']['seconds'], 1e-9):.1f}x"
            )
        finally:
            lab.down()


if __name__ == "__main__":
    main()
