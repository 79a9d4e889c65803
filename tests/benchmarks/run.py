#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""The performance figures of docs/performance.md, rows B1-B9 and B11-B13, with min/median over interleaved repetitions.

Usage: .venv/bin/python tests/benchmarks/run.py [--full] [--reps N] [--rows B1,B3,...] [--forks N] [--keep]

Starts its own lab (hack/lab.py) under a temporary directory: 3 control-plane nodes and W workers (W = 3 + 5 by
default, 40 with --full), pushes the images each row needs, and runs every row ``--reps`` times, the rows
interleaved (B1 B2 ... B9, then again), so that a busy machine slows them alike. A ratio is taken per repetition
from the two figures of that same repetition, then summarised. Times are Python's perf_counter around whole
commands (``ansible``, ``ansible-playbook``) or the module's own ``totals.seconds``. A benchmark, not a test: it
asserts nothing. B12 (etcd's write latency while a node pulls large images) runs only when asked for (``--rows
B12``): it pushes 768 MiB and takes about five minutes a repetition; B11 (one 2 GiB image of 16 layers) too
(``--rows B11``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / ".build" / "collections")]

import yaml  # noqa: E402

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import (  # noqa: E402
    render_for_pools,
    sync_files,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pace import percentile  # noqa: E402
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets  # noqa: E402
from fixtures.ansible_runs import (  # noqa: E402
    adhoc_command,
    adhoc_result,
    ansible_env,
    playbook_command,
    remove_all_images,
)
from fixtures.openshift_objects import ROLE_LABEL, pinned_image_set, role_pool  # noqa: E402
from support.disk_load import DiskStats, SyncWriter, block_device  # noqa: E402
from support.images import MIB  # noqa: E402
from support.lab import Lab  # noqa: E402
from support.node import RUNTIMES, crio_available  # noqa: E402

TARGETS = {
    "B1": "<= 1.1",
    "B1'": ">= 5",
    "B2": "<= 1.05",
    "B3": "<= 1.25",
    "B4": "<= 0.2 s, <= 1.1 req/image",
    "B5": "<= 0.3 s / <= 1.5x ping",
    "B6": "<= 1.15",
    "B7": "<= 1 s",
    "B8": "<= 3",
    "B9": "<= 3",
    "B11": "<= 1.05",
    "B11 estimate/stored": "0.95 - 1.05",
    "B12 pace p99 ms": "<= 10",
    "B13": "<= 1",
}
# B13: the nodes of each runtime the audit fleet has (containerd 1.7 and 2.1 pin with the label, CRI-O with its
# drop-in, when the CRI-O reference directory is there).
B13_RUNTIMES = ("containerd-1.7", "containerd-2.1", "cri-o")
B13_NODES = 2
# B12: the images a control-plane node pulls (large, incompressible), how long the writeback of a prefetch is
# watched after its end (the kernel writes dirty pages back within 30 s: vm.dirty_expire_centisecs), and the
# prefetches compared: no pause, the machine-config-operator's fixed 1 s pause, the pace (module defaults).
B12_IMAGES, B12_SIZE = 8, 96 * MIB
B12_TAIL = 35.0
B12_IDLE = 20.0
B12_SETTLE = 8.0
B12_BOUND_MS = 10.0
B12_CASES = {"none": {}, "pause": {"pull_pause": 1.0}, "pace": {"pace": True}}
# B11: one large image of several incompressible layers (the mission's big AI images), on a containerd 2.1 node
# with the overlayfs snapshotter, as nodes run it (the lab's native snapshotter copies every layer below the top);
# its progress file is read as often as this.
B11_LAYERS, B11_LAYER_SIZE = 16, 128 * MIB
B11_WATCH = 0.5
CTR = "/usr/bin/ctr"


class Bench:
    def __init__(self, lab: Lab, tmp: Path, workers: int, forks: list):
        self.lab = lab
        self.forks = forks
        self.tmp = tmp
        self.workers = workers
        self.samples: dict[str, list] = {}
        nodes = lab.status()["nodes"]
        self.node = nodes["worker-0"]["endpoint"]
        self.sockets = {name: node["endpoint"] for name, node in nodes.items()}
        # Images: 40 x 3 MiB (B1, the first 20 for B6), 3 x 32 MiB (B2), 500 x 64 KiB (B3, the first 8 for B8/B9),
        # 100 x 64 KiB that are never pulled (B4).
        self.small = [r.reference for r in lab.push_bulk(40, 3 * MIB, prefix="b-small")]
        self.big = [r.reference for r in lab.push_bulk(3, 32 * MIB, prefix="b-big")]
        self.many = [r.reference for r in lab.push_bulk(500, prefix="b-many")]
        self.unpulled = [r.reference for r in lab.push_bulk(100, prefix="b-unpulled")]
        self.inventory = lab.inventory()
        self.fleet_small = self._inventory("fleet-small.yml", 3)
        self.fleet_large = self._inventory("fleet-large.yml", workers)
        self.render_sets = self._render_sets()
        self.large: list = []
        self.huge: tuple | None = None
        self.audit_inventory: Path | None = None

    # ---- helpers ---------------------------------------------------------------------------------------------

    def add(self, row: str, value: float) -> None:
        self.samples.setdefault(row, []).append(value)

    def _inventory(self, name: str, workers: int) -> Path:
        inventory = json.loads(json.dumps(self.inventory))
        hosts = inventory["all"]["children"]["workers"]["hosts"]
        for host in sorted(hosts)[workers:]:
            del hosts[host]
        path = self.tmp / name
        path.write_text(yaml.safe_dump(inventory))
        return path

    def _render_sets(self) -> Path:
        documents = [role_pool("worker", ["worker"], "node-role.kubernetes.io/worker")]
        for index in range(20):
            images = [f"registry.example/bench/app-{index}-{n}@sha256:{(index * 1000 + n):064x}" for n in range(500)]
            documents.append(pinned_image_set(f"set-{index:02d}", images, {ROLE_LABEL: "worker"}))
        path = self.tmp / "render-sets.yaml"
        path.write_text(yaml.safe_dump_all(documents))
        return path

    @staticmethod
    def timed(command: list, **kwargs) -> tuple[float, subprocess.CompletedProcess]:
        started = time.perf_counter()
        proc = subprocess.run(command, env=ansible_env(), capture_output=True, text=True, check=False, **kwargs)
        elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(
                f"{' '.join(command[:6])} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
            )
        return elapsed, proc

    def adhoc(self, module: str, args: dict, check: bool = False) -> tuple[float, dict]:
        elapsed, proc = self.timed(adhoc_command(module, args, check=check))
        return elapsed, adhoc_result(proc.stdout)

    def ping(self) -> float:
        return self.timed(adhoc_command("ping"))[0]

    def prefetch(self, images: list, check: bool = False) -> tuple[float, dict]:
        return self.adhoc("pinned.images.prefetch", dict(images=images, cri_socket=self.node, concurrency=5), check)

    def raw_pull(self, images: list, socket: str | None = None) -> float:
        with CriClient(socket or self.node, timeout=600) as client:
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=5) as pool:
                list(pool.map(client.pull_image, images))
            return time.perf_counter() - started

    def empty(self, sockets=None) -> None:
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(remove_all_images, sockets or [self.node]))

    def playbook(
        self, inventory: Path, images: list, report: Path, name: str = "pinned.images.prefetch"
    ) -> tuple[float, dict]:
        sets = self.tmp / "fleet-sets.yaml"
        sets.write_text(
            yaml.safe_dump_all(
                [pinned_image_set(f"{pool}-bench", images, {ROLE_LABEL: pool}) for pool in ("master", "worker")]
            )
        )
        extra = {"cluster_sets": [str(sets)], "cluster_report_file": str(report)}
        elapsed, _proc = self.timed(playbook_command(name, inventory, extra, options=self.forks))
        return elapsed, json.loads(report.read_text())

    # ---- rows ------------------------------------------------------------------------------------------------

    def module_vs_raw(self, images: list) -> tuple[float, float, float]:
        """Seconds of the raw pulls, of the module's own work and of its whole command, each from an empty node."""
        self.empty()
        raw = self.raw_pull(images)
        self.empty()
        wall, result = self.prefetch(images)
        return raw, result["totals"]["seconds"], wall

    def b1(self) -> None:
        raw, module, wall = self.module_vs_raw(self.small)
        self.add("B1", module / raw)
        self.add("B1 raw s", raw)
        self.add("B1 module s", module)
        self.empty()
        loop = self._ctr_loop(self.small)
        self.add("B1'", loop / wall)
        self.add("B1' ctr loop s", loop)
        self.add("B1' module command s", wall)

    def _ctr_loop(self, images: list) -> float:
        address = self.node.removeprefix("unix://")
        playbook = self.tmp / "ctr-loop.yml"
        playbook.write_text(
            yaml.safe_dump(
                [
                    {
                        "hosts": "localhost",
                        "gather_facts": False,
                        "connection": "local",
                        "tasks": [
                            {
                                "name": "Pull",
                                "ansible.builtin.command": {
                                    "argv": [
                                        CTR,
                                        "-a",
                                        address,
                                        "-n",
                                        "k8s.io",
                                        "images",
                                        "pull",
                                        "--plain-http",
                                        "--snapshotter",
                                        "native",
                                        "{{ item }}",
                                    ]
                                },
                                "loop": images,
                            }
                        ],
                    }
                ]
            )
        )
        return self.timed(playbook_command(playbook, "localhost,"))[0]

    def b2(self) -> None:
        raw, module, _wall = self.module_vs_raw(self.big)
        self.add("B2", module / raw)
        self.add("B2 raw s", raw)

    def b3(self) -> None:
        for count in (40, 500):
            images = self.many[:count]
            self.raw_pull(images)  # present; pulls only what an earlier row removed
            ping = self.ping()
            noop, result = self.prefetch(images)
            if result["totals"]["present"] != count:
                raise SystemExit(f"B3: {count} images should be present: {result['totals']}")
            self.add(f"B3 {count}", noop / ping)
            self.add(f"B3 {count} no-op s", noop)
            self.add(f"B3 {count} ping s", ping)

    def b4(self) -> None:
        _wall, result = self.prefetch(self.unpulled, check=True)
        guard = result["disk_guard"]
        self.add("B4 s", guard["estimate_seconds"])
        self.add("B4 req/image", guard["registry_requests"] / len(self.unpulled))

    def b5(self) -> None:
        # Each repetition renders into empty directories (every image "added" in the result), then once more into
        # the same directory (nothing changes, nothing added).
        dest, dest_ansible = self.tmp / "render", self.tmp / "render-ansible"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.rmtree(dest_ansible, ignore_errors=True)
        started = time.perf_counter()
        sets, pools = load_sets([str(self.render_sets)])
        sync_files(render_for_pools(pools, sets=sets), str(dest))
        self.add("B5 in-process s", time.perf_counter() - started)
        args = dict(sets=[str(self.render_sets)], dest=str(dest_ansible))
        ping = self.ping()
        wall, result = self.adhoc("pinned.images.machine_config", args)
        self.add("B5 ansible/ping", wall / ping)
        self.add("B5 ansible s", wall)
        self.add("B5 result MB", len(json.dumps(result)) / 1e6)
        rerun, result = self.adhoc("pinned.images.machine_config", args)
        if result["changed"]:
            raise SystemExit("B5: the second render should change nothing")
        self.add("B5 rerun/ping", rerun / ping)
        self.add("B5 rerun result MB", len(json.dumps(result)) / 1e6)

    def b6_b7(self) -> None:
        hosts = self._hosts(3)
        self.empty(self.sockets[h] for h in hosts)
        wall, report = self.playbook(self.fleet_small, self.small[:20], self.tmp / "b6.json")
        nodes = report["nodes"]
        cp = sum(n["seconds"] for n in nodes if n["control_plane"])
        slowest = max(n["seconds"] for n in nodes if not n["control_plane"])
        self.add("B6", wall / (cp + slowest))
        _wall, report = self.playbook(self.fleet_small, self.small[:20], self.tmp / "b7.json")
        roles = [n["finished"] - n["started"] for n in report["nodes"]]
        self.add("B7 max s", max(roles))
        self.add("B7 median s", statistics.median(roles))

    def b8_b9(self) -> None:
        hosts = self._hosts(self.workers)
        self.empty(self.sockets[h] for h in hosts)
        images = self.many[:8]
        _wall, report = self.playbook(self.fleet_large, images, self.tmp / "b9.json")
        workers = [n for n in report["nodes"] if not n["control_plane"]]
        phase = max(n["finished"] for n in workers) - min(n["started"] for n in workers)
        self.add("B9", phase / max(n["seconds"] for n in workers))
        self.add("B9 worker phase s", phase)
        ping = self.timed(adhoc_command("ping", hosts="all", inventory=self.fleet_large, options=self.forks))[0]
        wall, _report = self.playbook(self.fleet_large, images, self.tmp / "b8.json")
        self.add("B8", wall / ping)
        self.add("B8 rerun s", wall)
        self.add("B8 ping s", ping)

    def _audit_fleet(self) -> Path:
        """B13's nodes, added on first use: B13_NODES of each runtime that pins (the lab's own nodes run
        containerd 1.6, which cannot), with their images prefetched and pinned."""
        if self.audit_inventory is None:
            names = []
            for runtime in B13_RUNTIMES:
                if RUNTIMES[runtime].kind == "cri-o" and not crio_available():
                    continue
                for index in range(B13_NODES):
                    name = f"b13-{runtime.replace('.', '')}-{index}"
                    self.lab.add_node(name, runtime=runtime)
                    names.append(name)
            self.audit_inventory = self.lab.write_inventory(self.tmp / "audit-fleet.yml", nodes=names)
            self.playbook(self.audit_inventory, self.many[:8], self.tmp / "b13-first.json")
        return self.audit_inventory

    def b13(self) -> None:
        """An audit of a fleet with nothing wrong against the prefetch playbook's no-op rerun of the same fleet."""
        inventory = self._audit_fleet()
        images = self.many[:8]
        rerun, _report = self.playbook(inventory, images, self.tmp / "b13-rerun.json")
        audit, report = self.playbook(inventory, images, self.tmp / "b13-audit.json", "pinned.images.audit")
        if report["summary"]["clean"] != report["summary"]["nodes"]:
            raise SystemExit(f"B13: the fleet should audit clean: {report['summary']}")
        self.add("B13", audit / rerun)
        self.add("B13 audit s", audit)
        self.add("B13 rerun s", rerun)
        self.add("B13 audit s/node", audit / report["summary"]["nodes"])

    def b11(self) -> None:
        """One image of B11_LAYERS x B11_LAYER_SIZE from an empty node, pulled raw through CRI and by the module with
        a progress file read every B11_WATCH s (how often it changed while the image was being pulled), in turns
        (the raw pull first in odd repetitions, the module first in even ones); and the disk guard's estimate against
        what the runtime stored (its root's growth over the raw pull)."""
        if self.huge is None:
            entry = self.lab.add_node("b11-overlay", runtime="containerd-2.1", snapshotter="overlayfs")
            record = self.lab.push_image("b11/huge", [B11_LAYER_SIZE] * B11_LAYERS, name="b11-huge")
            self.huge = (entry, record.reference)
        entry, image = self.huge
        socket, root = entry["endpoint"], entry["root"]
        raw = stored = 0.0
        result: dict = {}
        watch = ProgressWatch(self.tmp / "b11-progress.json", B11_WATCH)
        module_first = len(self.samples.get("B11", [])) % 2 == 1
        for step in ("module", "raw") if module_first else ("raw", "module"):
            self.empty([socket])
            # The removal written out, not left to the writeback during the next pull.
            before = _disk_usage(root)
            if step == "raw":
                raw = self.raw_pull([image], socket)
                stored = _disk_usage(root) - before
                if stored <= 0:
                    raise SystemExit(f"B11: du sees nothing stored under {root}")
                continue
            watch.path.unlink(missing_ok=True)
            with watch:
                _wall, result = self.adhoc(
                    "pinned.images.prefetch",
                    dict(images=[image], cri_socket=socket, progress_file=str(watch.path), min_free="1Gi"),
                )
            if result["totals"]["pulled"] != 1:
                raise SystemExit(f"B11: the image should be pulled: {result['images']}")
        self.add("B11", result["totals"]["seconds"] / raw)
        self.add("B11 raw s", raw)
        self.add("B11 module s", result["totals"]["seconds"])
        self.add("B11 module's pull s", result["images"][0]["seconds"])
        self.add("B11 progress updates", watch.updates)
        self.add("B11 growth seen GiB", watch.growth / 2**30)
        self.add("B11 stored GiB", stored / 2**30)
        self.add("B11 estimate/stored", result["disk_guard"]["required_bytes"] / stored)
        self.empty([socket])

    def b12(self) -> None:
        """etcd's write latency on the node's image filesystem: a stand-in writer (2 KiB + fdatasync every 20 ms)
        idle, then during each prefetch of B12_IMAGES large images, one at a time, from an empty node, and during
        the writeback after it; /proc/diskstats of the same device alongside, for the choice of the pace's probe."""
        if not self.large:
            self.large = [r.reference for r in self.lab.push_bulk(B12_IMAGES, B12_SIZE, prefix="b-large")]
        root = self.lab.status()["nodes"]["worker-0"]["root"]
        device = block_device(root)
        self.add("B12 load average", os.getloadavg()[0])
        with SyncWriter(root) as writer, DiskWatch(device) as disk:
            self._settle()
            started = time.time()
            time.sleep(B12_IDLE)
            self._b12_window("idle", writer, disk, started, time.time())
            for case, extra in B12_CASES.items():
                self.empty()
                calm = self._settle()
                # The disk just before the case: the machine's other work moves it.
                self._b12_window(f"{case} before", writer, disk, calm, time.time())
                started = time.time()
                args = dict(images=self.large, cri_socket=self.node, concurrency=1, pace_path=root, **extra)
                _wall, result = self.adhoc("pinned.images.prefetch", args)
                finished = time.time()
                self.add(f"B12 {case} s", result["totals"]["seconds"])
                if "pace" in result:
                    self.add(f"B12 {case} waited s", result["pace"]["waited_seconds"])
                    self.add(f"B12 {case} own p99 ms", result["pace"]["latency_ms"]["p99"])
                self._b12_window(case, writer, disk, started, finished)
                time.sleep(B12_TAIL)
                self._b12_window(f"{case}+tail", writer, disk, started, time.time())
        self.empty()

    @staticmethod
    def _settle() -> float:
        """Write what an earlier row left to the disk, then wait: when the calm began."""
        subprocess.run(["sync"], check=True)
        calm = time.time()
        time.sleep(B12_SETTLE)
        return calm

    def _b12_window(self, case: str, writer: SyncWriter, disk: DiskWatch, since: float, until: float) -> None:
        latencies = [seconds * 1000 for seconds in writer.latencies(since, until)]
        self.add(f"B12 {case} p50 ms", percentile(latencies, 50))
        self.add(f"B12 {case} p99 ms", percentile(latencies, 99))
        if case.endswith(("+tail", "before")):
            return
        entries = disk.between(since, until)
        waits = [entry["write_await"] for _taken, entry in entries if entry["write_await"] is not None]
        busy = [entry["utilisation"] for _taken, entry in entries if entry["utilisation"] is not None]
        if waits:
            self.add(f"B12 {case} await p50 ms", percentile(waits, 50))
            self.add(f"B12 {case} await p99 ms", percentile(waits, 99))
        if busy:
            self.add(f"B12 {case} util p99", percentile(busy, 99))
        # Would /proc/diskstats have told? Of the intervals in which a write of the stand-in took longer than the
        # bound, the share whose write await was over it too.
        slow = caught = 0
        for taken, entry in entries:
            seen = writer.latencies(taken - disk.interval, taken)
            if entry["write_await"] is not None and seen and max(seen) * 1000 > B12_BOUND_MS:
                slow += 1
                caught += entry["write_await"] > B12_BOUND_MS
        if slow:
            self.add(f"B12 {case} slow intervals", slow)
            self.add(f"B12 {case} await caught %", 100.0 * caught / slow)

    def _hosts(self, workers: int) -> list:
        return [f"cp-{i}" for i in range(3)] + [f"worker-{i}" for i in range(workers)]


def _disk_usage(path: str) -> int:
    """Bytes the files under ``path`` take on disk (``du``, one filesystem)."""
    subprocess.run(["sync"], check=True)
    out = subprocess.run(["du", "-s", "-x", "-B1", path], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


class ProgressWatch:
    """A prefetch's progress file, read every ``interval`` s in a thread: how many different contents it had while an
    image was being pulled (its ``current`` not empty), and the largest image filesystem growth it gave."""

    def __init__(self, path: Path, interval: float) -> None:
        self.path = path
        self.interval = interval
        self.updates = 0
        self.growth = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ProgressWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        last = None
        while not self._stop.wait(self.interval):
            try:
                data = json.loads(self.path.read_text())
            except (OSError, ValueError):
                continue
            if data.get("current") and data != last:
                self.updates += 1
                self.growth = max(self.growth, data.get("image_fs_growth") or 0)
            last = data


class DiskWatch:
    """/proc/diskstats of one device every half second in a thread: write await, flush await, utilisation."""

    def __init__(self, device: str | None, interval: float = 0.5) -> None:
        self.device = device
        self.interval = interval
        self.entries: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> DiskWatch:
        if self.device is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        earlier = DiskStats.read(self.device)
        while not self._stop.wait(self.interval):
            now = DiskStats.read(self.device)
            self.entries.append((time.time(), now.since(earlier)))
            earlier = now

    def between(self, since: float, until: float) -> list:
        """(when, the changes of the interval before) of the intervals that ended in ``since`` .. ``until``."""
        return [(taken, entry) for taken, entry in self.entries if since <= taken <= until]


def show(samples: dict) -> None:
    print(f"\n{'row':<24} {'min':>9} {'median':>9} {'n':>3}  target")
    for row, values in samples.items():
        target = TARGETS.get(row, "")
        print(f"{row:<24} {min(values):9.3f} {statistics.median(values):9.3f} {len(values):3d}  {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="B8/B9 with 40 workers, 5 repetitions")
    parser.add_argument("--reps", type=int, help="repetitions (default 3, 5 with --full)")
    parser.add_argument("--rows", default="B1,B2,B3,B4,B5,B6,B8,B13", help="rows to run (B6 includes B7, B8 B9)")
    parser.add_argument("--forks", type=int, help="forks of the fleet runs and their ping (default: Ansible's, 5)")
    parser.add_argument("--keep", action="store_true", help="leave the lab running")
    args = parser.parse_args()
    reps = args.reps or (5 if args.full else 3)
    workers = 40 if args.full else 8
    rows = [row.strip().lower() for row in args.rows.split(",")]
    unknown = [row for row in rows if row not in {f"b{n}" for n in (*range(1, 10), 11, 12, 13)}]
    if unknown:
        parser.error(f"unknown rows {', '.join(unknown)}: B1 to B9, B11, B12, B13")
    tmp = Path(tempfile.mkdtemp(prefix="pi-bench-"))
    lab = Lab(tmp / "lab")
    try:
        started = time.perf_counter()
        lab.up(nodes=3 + workers, control_plane=3)
        bench = Bench(lab, tmp, workers, ["--forks", str(args.forks)] if args.forks else [])
        print(
            f"lab: 3 control-plane + {workers} workers, images pushed in {time.perf_counter() - started:.1f} s; "
            f"{reps} repetitions"
        )
        steps = {
            "b1": bench.b1,
            "b2": bench.b2,
            "b3": bench.b3,
            "b4": bench.b4,
            "b5": bench.b5,
            "b6": bench.b6_b7,
            "b7": bench.b6_b7,
            "b8": bench.b8_b9,
            "b9": bench.b8_b9,
            "b11": bench.b11,
            "b12": bench.b12,
            "b13": bench.b13,
        }
        # B7 is measured with B6 and B9 with B8: either name runs the pair, once.
        runs = list(dict.fromkeys(steps[row] for row in rows))
        for rep in range(reps):
            for step in runs:
                step()
            print(
                f"repetition {rep + 1} done at {time.perf_counter() - started:.0f} s, load average "
                + " ".join(f"{value:.2f}" for value in os.getloadavg()),
                flush=True,
            )
            show(bench.samples)
    finally:
        if args.keep:
            print(f"lab kept at {lab.path}: .venv/bin/python hack/lab.py down --dir {lab.path}")
        else:
            lab.down()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
