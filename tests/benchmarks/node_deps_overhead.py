# SPDX-License-Identifier: GPL-3.0-or-later
"""What provisioning the node modules' Python dependencies costs: bytes copied per node, time added to a first and a
second `ansible-playbook pinned.images.prefetch` run, and the per-call check of the private directory.

Usage: .venv/bin/python tests/benchmarks/node_deps_overhead.py [PYTHON]   (default /usr/bin/python3, without grpc)
Starts a lab of two nodes under a temporary directory: one whose interpreter is PYTHON (provisioned from a wheelhouse
filled beforehand, so that the index is not measured), one whose interpreter is this venv's Python (has grpc), each
with 3 fresh images; runs the playbook once, then three more times (median), on each and prints the differences.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / ".build" / "collections"), str(ROOT / "tests")]

from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import verify  # noqa: E402
from fixtures.ansible_runs import playbook as ansible_playbook  # noqa: E402
from support.lab import Lab  # noqa: E402


def run(inventory: Path, playbook: str = "prefetch", extra: dict | None = None) -> float:
    started = time.monotonic()
    proc = ansible_playbook(f"pinned.images.{playbook}", inventory, extra or {}, timeout=900)
    if proc.returncode:
        raise SystemExit(proc.stdout + proc.stderr)
    return time.monotonic() - started


def main() -> None:
    python = sys.argv[1] if len(sys.argv) > 1 else "/usr/bin/python3"
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        lab = Lab(tmp / "lab")
        lab.up(nodes=2, control_plane=0)
        try:
            wheelhouse = tmp / "wheelhouse"
            timings = {}
            for label, node, interpreter in (("bare", "worker-0", python), ("with grpc", "worker-1", sys.executable)):
                images = [record.reference for record in lab.push_bulk(3, prefix=f"bench-{node}")]
                inventory = lab.inventory(interpreter)
                workers = inventory["all"]["children"]["workers"]["hosts"]
                inventory["all"]["children"] = {
                    "control_plane": {"hosts": {}},
                    "workers": {
                        "hosts": {
                            node: dict(
                                workers[node],
                                node_images=images,
                                node_progress_interval=1,
                                node_python_deps_dir=str(tmp / "python"),
                                node_wheelhouse=str(wheelhouse),
                            )
                        }
                    },
                }
                path = tmp / f"{node}.json"
                path.write_text(json.dumps(inventory))
                if label == "bare":
                    tag = json.loads(
                        subprocess.run(
                            [
                                python,
                                "-c",
                                "import json, platform, sys; print(json.dumps(['cp%d%d' % sys.version_info[:2],"
                                " platform.machine()]))",
                            ],
                            capture_output=True,
                            text=True,
                            check=True,
                        ).stdout
                    )
                    run(
                        path,
                        playbook="wheelhouse",
                        extra=dict(
                            wheelhouse_path=str(wheelhouse), wheelhouse_targets=[f"{tag[0]}-manylinux-{tag[1]}"]
                        ),
                    )
                first = run(path)
                # The machine may be shared: the median of three reruns.
                timings[label] = (first, sorted(run(path) for _rerun in range(3))[1])
            tag_dir = next((tmp / "python").iterdir())
            copied = sum(wheel.stat().st_size for wheel in (tag_dir / "wheels").iterdir())
            unpacked = sum(path.stat().st_size for path in (tag_dir / "site").rglob("*") if path.is_file())
            started = time.monotonic()
            for _call in range(10):
                assert verify(str(tag_dir)) is None
            check = (time.monotonic() - started) / 10
        finally:
            lab.down()
    bare, baseline = timings["bare"], timings["with grpc"]
    print(f"node tag: {tag_dir.name}")
    print(
        f"bytes copied per node: {copied} ({copied / 1048576:.1f} MiB of wheels), unpacked {unpacked / 1048576:.1f} MiB"
    )
    print(f"first run:  {bare[0]:.1f} s bare node, {baseline[0]:.1f} s node with grpc: {bare[0] - baseline[0]:+.1f} s")
    print(f"second run: {bare[1]:.1f} s bare node, {baseline[1]:.1f} s node with grpc: {bare[1] - baseline[1]:+.1f} s")
    print(f"check of the private directory per node module call: {check * 1000:.0f} ms")


if __name__ == "__main__":
    main()
