# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/support/disk_load.py: the stand-in etcd writer, the loop filesystem, the write throttle, /proc/diskstats."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from support.disk_load import CGROUP_PREFIX, DiskStats, LoopFilesystem, SyncWriter, WriteThrottle, block_device
from support.errors import LabError

# A child that makes three 2 KiB writes with fdatasync on the file it is given.
SYNC_WRITES = (
    "import os, sys\n"
    "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)\n"
    "for _ in range(3):\n"
    "    os.write(fd, b'x' * 2048); os.fdatasync(fd)\n"
)


def wait_for(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


def test_sync_writer_records_its_writes_and_removes_its_file(tmp_path):
    with SyncWriter(tmp_path, interval=0.001) as writer:
        started = time.time()
        wait_for(lambda: len(writer.latencies()) >= 3, "three writes")
        assert writer.path.exists()
    latencies = writer.latencies()
    assert len(latencies) >= 3 and all(latency > 0 for latency in latencies)
    assert writer.latencies(since=started) == latencies
    assert writer.latencies(until=started - 1) == []
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def loop_fs(tmp_path):
    with LoopFilesystem(tmp_path / "disk", size_mib=16) as filesystem:
        yield filesystem


def test_loop_filesystem_is_mounted_on_its_own_device_and_goes_away(tmp_path):
    filesystem = LoopFilesystem(tmp_path / "disk", size_mib=16)
    with filesystem:
        device = filesystem.device
        assert os.path.ismount(filesystem.mountpoint)
        assert block_device(filesystem.mountpoint) == os.path.basename(device)
        assert filesystem.device_number == "%d:%d" % (
            os.major(os.stat(device).st_rdev),
            os.minor(os.stat(device).st_rdev),
        )
        (filesystem.mountpoint / "file").write_text("data")
    assert not os.path.ismount(filesystem.mountpoint)
    listed = subprocess.run(
        ["losetup", "--associated", str(filesystem.image)], capture_output=True, text=True, check=True
    )
    assert listed.stdout == ""
    assert not filesystem.image.exists() and filesystem.device is None


def test_write_throttle_counts_the_writes_of_its_processes(loop_fs):
    name = CGROUP_PREFIX + "unit-%d" % os.getpid()
    with WriteThrottle(name, loop_fs.device_number) as throttle:
        throttle.limit(50)
        subprocess.run(
            [sys.executable, "-c", SYNC_WRITES, str(loop_fs.mountpoint / "probe")],
            preexec_fn=throttle.preexec,
            check=True,
        )
        counted = throttle.writes()
        path = throttle.path
    assert counted >= 3
    assert not path.exists()


def test_write_throttle_refuses_a_cgroup_not_its_own(loop_fs):
    with pytest.raises(LabError, match="must start with " + CGROUP_PREFIX):
        WriteThrottle("system.slice", loop_fs.device_number)


def test_write_throttle_leaves_the_root_cgroup_as_it_is(tmp_path):
    # A cgroup v2 tree whose root offers the io controller but does not give it to its children.
    (tmp_path / "cgroup.controllers").write_text("cpu io memory\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory\n")
    with pytest.raises(LabError, match=r"io controller is not enabled .*echo \+io"):
        WriteThrottle(CGROUP_PREFIX + "test", "7:0", root=tmp_path)
    assert (tmp_path / "cgroup.subtree_control").read_text() == "cpu memory\n"


def test_diskstats_differences(tmp_path):
    source = tmp_path / "diskstats"
    line = " 254 0 vda 1 0 8 1 {w} 0 {ws} {wms} 0 {io} 0 0 0 0 0 {f} {fms}\n"
    source.write_text(line.format(w=10, ws=80, wms=20, io=100, f=2, fms=4))
    first = DiskStats.read("vda", str(source))
    source.write_text(line.format(w=14, ws=112, wms=40, io=350, f=3, fms=10))
    second = DiskStats.read("vda", str(source))
    changes = second.since(first)
    assert changes["write_await"] == 5.0 and changes["flush_await"] == 6.0
    assert changes["utilisation"] is not None and changes["utilisation"] > 0
    with pytest.raises(LabError, match="no device sdz"):
        DiskStats.read("sdz", str(source))


def test_block_device_of_this_machine_is_listed_or_none(tmp_path):
    name = block_device(tmp_path)
    if name is not None:
        with open("/proc/diskstats") as handle:
            assert name in [line.split()[2] for line in handle]
