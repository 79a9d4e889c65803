# SPDX-License-Identifier: GPL-3.0-or-later
"""Wall time of the pinned.images.prefetch playbook on the lab against the sum of the per-node times.

Usage: .venv/bin/python tests/benchmarks/lab_wall_time.py [N] [--size SIZE] [--keep]
Starts a lab of 3 control-plane and 3 worker containerd nodes under a temporary directory, pushes N distinct
images (default 30, one layer of SIZE each, default 1M), and gives every node all N images through one
PinnedImageSet per pool. Then runs the playbook with the role defaults (control-plane nodes one at a time, one pull
at a time with a 1 s pause; workers all at once, five pulls at a time) and prints:

- the playbook's wall time;
- per node: the prefetch time the module measured and the time the node role took (start to end, Ansible's
  overhead included);
- the sums of both, and wall time / sum: below 1 means the run saved time by running nodes in parallel.

A second run (nothing to pull) is timed too.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / ".build" / "collections")]

import yaml  # noqa: E402

from fixtures.ansible_runs import playbook  # noqa: E402
from fixtures.openshift_objects import ROLE_LABEL, pinned_image_set  # noqa: E402
from support.images import parse_size  # noqa: E402
from support.lab import Lab  # noqa: E402


def sets_file(path: Path, refs: list) -> Path:
    documents = [pinned_image_set(f"{pool}-bench", refs, {ROLE_LABEL: pool}) for pool in ("master", "worker")]
    path.write_text(yaml.safe_dump_all(documents))
    return path


def run(inventory: Path, sets: Path, report: Path) -> tuple[float, dict, str]:
    extra = {"cluster_sets": [str(sets)], "cluster_report_file": str(report), "node_progress_interval": 5}
    started = time.monotonic()
    proc = playbook("pinned.images.prefetch", inventory, extra, timeout=3600)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"the playbook failed (rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return wall, json.loads(report.read_text()), proc.stdout


def show(label: str, wall: float, report: dict) -> None:
    nodes = report["nodes"]
    print(f"\n{label}")
    print(f"  {'node':<10} {'pulled':>6} {'present':>7} {'prefetch s':>10} {'role s':>8}")
    prefetch_sum = role_sum = 0.0
    for node in nodes:
        role_seconds = node["finished"] - node["started"]
        prefetch_sum += node["seconds"]
        role_sum += role_seconds
        print(
            f"  {node['host']:<10} {node['pulled']:>6} {node['present']:>7} {node['seconds']:>10.2f} "
            f"{role_seconds:>8.2f}"
        )
    print(f"  wall time of the playbook:            {wall:8.2f} s")
    print(f"  sum of per-node prefetch times:       {prefetch_sum:8.2f} s   wall / sum = {wall / prefetch_sum:5.2f}")
    print(f"  sum of per-node role times:           {role_sum:8.2f} s   wall / sum = {wall / role_sum:5.2f}")
    control_plane = [n for n in nodes if n["control_plane"]]
    workers = [n for n in nodes if not n["control_plane"]]
    if control_plane and workers:
        cp_span = max(n["finished"] for n in control_plane) - min(n["started"] for n in control_plane)
        worker_span = max(n["finished"] for n in workers) - min(n["started"] for n in workers)
        worker_sum = sum(n["finished"] - n["started"] for n in workers)
        print(f"  control-plane phase: {cp_span:6.2f} s for {len(control_plane)} nodes one at a time")
        print(
            f"  worker phase:        {worker_span:6.2f} s for {len(workers)} nodes at once "
            f"(their role times add up to {worker_sum:.2f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="?", type=int, default=30)
    parser.add_argument("--size", default="1M", help="layer size of each image (default 1M)")
    parser.add_argument("--keep", action="store_true", help="leave the lab running (prints its directory)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pi-bench-"))
    lab = Lab(tmp / "lab")
    try:
        lab.up(nodes=6, control_plane=3)
        refs = [record.reference for record in lab.push_bulk(args.images, size=parse_size(args.size), prefix="bench")]
        inventory = lab.write_inventory(tmp / "inventory.yml")
        sets = sets_file(tmp / "sets.yaml", refs)
        print(f"lab: 3 control-plane + 3 worker containerd nodes; {args.images} images of {args.size} on every node")
        wall, report, _output = run(inventory, sets, tmp / "report-1.json")
        show("first run (every image pulled on every node)", wall, report)
        wall, report, _output = run(inventory, sets, tmp / "report-2.json")
        show("second run (nothing to pull)", wall, report)
    finally:
        if args.keep:
            print(f"\nlab kept at {lab.path}: .venv/bin/python hack/lab.py down --dir {lab.path}")
        else:
            lab.down()


if __name__ == "__main__":
    main()
