# SPDX-License-Identifier: GPL-3.0-or-later
"""The pace of pinned.images.prefetch against a disk whose write latency is high for real.

The probed directory is an ext4 filesystem on a loop device of the test's own; the prefetch's processes run in a
cgroup that throttles their writes to that device (a few per second), so each fdatasync of the pace's probe takes
hundreds of milliseconds, as on an etcd disk that other writers saturate. The test lifts the throttle once the
module's progress file says it holds the first image back: events, not clocks, drive it.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time

import pytest

from fixtures.ansible_runs import adhoc_command, adhoc_result, ansible_env
from support.disk_load import CGROUP_PREFIX, LoopFilesystem, WriteThrottle

# Throttled, each probe write waits about 1 / THROTTLED_IOPS s, far over the bound; unthrottled, a loop device on
# this machine's disk answers within a few milliseconds, well under it.
THROTTLED_IOPS = 3
BOUND_MS = 100
# Short, so that the throttled samples leave the window within seconds of the throttle's end.
WINDOW = 2.0
_runs = itertools.count()


@pytest.fixture
def etcd_disk(tmp_path):
    """(the loop filesystem standing in for etcd's disk, the write throttle of the prefetch's processes)."""
    with LoopFilesystem(tmp_path / "etcd-disk", size_mib=32) as filesystem:
        name = f"{CGROUP_PREFIX}pace-{os.getpid()}-{next(_runs)}"
        with WriteThrottle(name, filesystem.device_number) as throttle:
            yield filesystem, throttle


@pytest.fixture(scope="module")
def pace_images(lab):
    return [record.reference for record in lab.push_bulk(3, prefix="pace")]


def pace_args(socket, images, mountpoint, progress, **extra):
    args = dict(
        images=images,
        cri_socket=socket,
        concurrency=1,
        pace=True,
        pace_path=str(mountpoint),
        pace_bound_ms=BOUND_MS,
        pace_window=WINDOW,
        progress_file=str(progress),
    )
    args.update(extra)
    return args


def start(args, throttle):
    return subprocess.Popen(
        adhoc_command("pinned.images.prefetch", args),
        env=ansible_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=throttle.preexec,
    )


def wait_until_held(proc, progress):
    """The first ``pace.waiting`` entry of the progress file, read while the module runs."""
    while proc.poll() is None:
        try:
            waiting = json.loads(progress.read_text()).get("pace", {}).get("waiting")
        except (OSError, ValueError):
            waiting = None
        if waiting:
            return waiting[0]
        time.sleep(0.05)
    out, err = proc.communicate()
    raise AssertionError(f"the prefetch ended without holding an image back:\n{out[-3000:]}\n{err[-2000:]}")


def test_the_pace_waits_while_the_latency_is_high_and_goes_on_when_it_falls(
    lab, empty_node, pace_images, etcd_disk, tmp_path
):
    filesystem, throttle = etcd_disk
    throttle.limit(THROTTLED_IOPS)
    progress = tmp_path / "progress.json"
    proc = start(pace_args(empty_node, pace_images, filesystem.mountpoint, progress, pace_max_wait=600), throttle)
    held = wait_until_held(proc, progress)
    assert held["image"] == pace_images[0] and held["latency_ms"] > BOUND_MS
    lifted = time.time()
    throttle.limit(0)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-3000:] + err[-2000:]
    result = adhoc_result(out)

    images = result["images"]
    assert [image["status"] for image in images] == ["pulled"] * 3
    first = images[0]
    assert first["waited"] > 0
    # The first pull started only after the latency fell: after the throttle went, on samples under the bound.
    assert first["started"] >= lifted
    pace = result["pace"]
    assert pace["held"] >= 1 and pace["timed_out"] == [] and pace["error"] is None
    assert pace["path"] == str(filesystem.mountpoint) and pace["source"] == "path"
    samples = [(pace["started"] + offset, ms) for offset, ms in pace["samples"]]
    assert any(ms > BOUND_MS for when, ms in samples if when < lifted)
    before_first_pull = [ms for when, ms in samples if when <= first["started"]]
    assert max(before_first_pull[-3:]) <= BOUND_MS
    assert pace["latency_ms"]["count"] == len(samples) and pace["latency_ms"]["max"] > BOUND_MS
    assert pace["waited_seconds"] >= first["waited"]
    assert throttle.writes() >= 3
    # The probe's file is gone with the run.
    assert sorted(os.listdir(filesystem.mountpoint)) == ["lost+found"]


@pytest.mark.parametrize("on_max_wait", ["continue", "stop"])
def test_after_the_maximum_wait_the_prefetch_goes_on_or_stops(
    lab, empty_node, pace_images, etcd_disk, tmp_path, on_max_wait
):
    filesystem, throttle = etcd_disk
    throttle.limit(THROTTLED_IOPS)
    progress = tmp_path / "progress.json"
    args = pace_args(
        empty_node, pace_images[:2], filesystem.mountpoint, progress, pace_max_wait=1, pace_on_max_wait=on_max_wait
    )
    out, err = start(args, throttle).communicate(timeout=600)
    result = adhoc_result(out)
    pace = result["pace"]
    images = result["images"]
    assert images[0]["waited"] >= 1
    if on_max_wait == "continue":
        assert result.get("failed") is not True, out[-3000:]
        assert [image["status"] for image in images] == ["pulled", "pulled"]
        assert pace["timed_out"] == pace_images[:2]
        # Warnings are wrapped to the terminal's width.
        assert "[WARNING]: the pace waited pace_max_wait 1 s for 2 image(s)" in " ".join((out + err).split())
    else:
        assert "FAILED!" in out.split(" => ", maxsplit=1)[0], out[-2000:]
        assert [image["status"] for image in images] == ["skipped", "skipped"]
        assert pace["timed_out"] == pace_images[:1]
        assert "the pace stopped the prefetch (pace_on_max_wait=stop): the write latency of " in result["msg"]
        assert str(filesystem.mountpoint) in result["msg"]
