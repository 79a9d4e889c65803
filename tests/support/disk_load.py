# SPDX-License-Identifier: GPL-3.0-or-later
"""Disk latency for the pace's tests and benchmark (B12): a stand-in for etcd's WAL writer, a small ext4 filesystem
on a loop device, a cgroup that throttles the writes of its processes to one device, and /proc/diskstats.

Every path is a parameter; what a helper makes (the loop device, its mount, the cgroup) it removes again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from support.errors import LabError

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "pinned-images-test-"

# The child of SyncWriter: 2 KiB appended, fdatasync, one "<wall time> <seconds>" line per write; the file starts
# again from empty at 1 MiB. It ends when its stdin closes (the parent went away) or on SIGTERM.
_WRITER = r"""
import os, sys, threading, time
path, interval = sys.argv[1], float(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
data, size = b"\0" * 2048, 0
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
try:
    while not done.is_set():
        if size >= 1 << 20:
            os.ftruncate(fd, 0); os.lseek(fd, 0, 0); size = 0
        started = time.perf_counter()
        os.write(fd, data)
        os.fdatasync(fd)
        elapsed = time.perf_counter() - started
        size += len(data)
        sys.stdout.write("%.6f %.9f\n" % (time.time(), elapsed))
        sys.stdout.flush()
        done.wait(interval)
finally:
    os.close(fd)
    os.unlink(path)
"""


class SyncWriter:
    """A process that stands in for etcd: 2 KiB writes, each followed by fdatasync, every ``interval`` seconds, in
    a file of ``directory``. ``latencies(since, until)`` gives the seconds of the writes made in that wall-clock
    span. A context manager; ``stop()`` ends the process and removes its file."""

    def __init__(self, directory: str | os.PathLike[str], interval: float = 0.02) -> None:
        self.path = Path(directory) / ".sync-writer"
        self.interval = interval
        self._samples: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> SyncWriter:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(self.path), str(self.interval)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            wall, seconds = line.split()
            with self._lock:
                self._samples.append((float(wall), float(seconds)))

    def stop(self) -> None:
        if self._proc is None:
            return
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._reader is not None:
            self._reader.join()
        self._proc = None

    def latencies(self, since: float = 0.0, until: float = float("inf")) -> list[float]:
        with self._lock:
            return [seconds for wall, seconds in self._samples if since <= wall <= until]


def _run(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise LabError("%s failed (%d): %s" % (" ".join(argv), proc.returncode, proc.stderr.strip()))
    return proc.stdout.strip()


class LoopFilesystem:
    """A small ext4 filesystem of ``size_mib`` on a loop device backed by a file in ``directory`` (on a real disk,
    not a tmpfs, so that its writes take time), mounted at ``directory/mnt``. A context manager: leaving it unmounts
    the filesystem, detaches the device and removes the file."""

    def __init__(self, directory: str | os.PathLike[str], size_mib: int = 64) -> None:
        self.directory = Path(directory)
        self.image = self.directory / "disk.img"
        self.mountpoint = self.directory / "mnt"
        self.size_mib = size_mib
        self.device: str | None = None

    def __enter__(self) -> LoopFilesystem:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(exist_ok=True)
        with open(self.image, "wb") as handle:
            handle.truncate(self.size_mib << 20)
        try:
            self.device = _run(["losetup", "--find", "--show", str(self.image)])
            _run(["mkfs.ext4", "-q", "-F", self.device])
            _run(["mount", self.device, str(self.mountpoint)])
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    @property
    def device_number(self) -> str:
        """``major:minor`` of the loop device, as the cgroup throttles name it."""
        assert self.device is not None
        number = os.stat(self.device).st_rdev
        return "%d:%d" % (os.major(number), os.minor(number))

    def remove(self) -> None:
        if os.path.ismount(self.mountpoint):
            _run(["umount", str(self.mountpoint)])
        if self.device is not None:
            _run(["losetup", "--detach", self.device])
            self.device = None
        if self.image.exists():
            self.image.unlink()


class WriteThrottle:
    """A cgroup of its own that limits its processes' write operations per second to one block device (``iops``;
    0 lifts the limit): cgroup v2's ``io.max`` where the io controller is available, else v1's
    ``blkio.throttle.write_iops_device``. Processes join it through ``preexec`` (``subprocess.Popen(...,
    preexec_fn=throttle.preexec)``). Leaving it lifts the limit and removes the cgroup once its processes ended."""

    def __init__(self, name: str, device_number: str, root: Path = CGROUP_ROOT) -> None:
        if not name.startswith(CGROUP_PREFIX):
            raise LabError("throttle cgroup %r must start with %s" % (name, CGROUP_PREFIX))
        self.device_number = device_number
        v1 = root / "blkio"
        if (v1 / "blkio.throttle.write_iops_device").exists():
            self.path = v1 / name
            self._limit_file = "blkio.throttle.write_iops_device"
        elif "io" in (root / "cgroup.controllers").read_text().split():
            self.path = root / name
            self._limit_file = "io.max"
            self._require_io(root)
        else:
            raise LabError("no cgroup io throttle here: neither %s nor the io controller of %s" % (v1, root))

    @staticmethod
    def _require_io(root: Path) -> None:
        # Enabling a controller at the root would change every cgroup of the machine: the test asks for it instead.
        control = root / "cgroup.subtree_control"
        if "io" not in control.read_text().split():
            raise LabError("the io controller is not enabled for %s's children: run `echo +io > %s`" % (root, control))

    def __enter__(self) -> WriteThrottle:
        self.path.mkdir(exist_ok=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def limit(self, iops: int) -> None:
        if self._limit_file == "io.max":
            text = "%s wiops=%s" % (self.device_number, iops or "max")
        else:
            text = "%s %d" % (self.device_number, iops)
        (self.path / self._limit_file).write_text(text + "\n")

    def writes(self) -> int:
        """The write operations the cgroup's processes made to the device (v1 ``blkio.throttle.io_serviced``, v2
        ``io.stat``)."""
        if self._limit_file == "io.max":
            for line in (self.path / "io.stat").read_text().splitlines():
                device, *fields = line.split()
                if device == self.device_number:
                    return int(dict(field.split("=") for field in fields).get("wios", 0))
            return 0
        for line in (self.path / "blkio.throttle.io_serviced").read_text().splitlines():
            fields = line.split()
            if fields[:2] == [self.device_number, "Write"]:
                return int(fields[2])
        return 0

    def preexec(self) -> None:
        """Move the calling process (a child before exec) into the cgroup."""
        (self.path / "cgroup.procs").write_text("%d\n" % os.getpid())

    def remove(self) -> None:
        if not self.path.exists():
            return
        self.limit(0)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.path.rmdir()
                return
            except OSError:
                # Busy until its last process has been reaped.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


@dataclass(frozen=True)
class DiskStats:
    """Counters of one block device from /proc/diskstats (``Documentation/admin-guide/iostats.rst``)."""

    writes: int
    write_ms: int
    io_ms: int
    flushes: int
    flush_ms: int
    taken: float

    @classmethod
    def read(cls, device: str, source: str = "/proc/diskstats") -> DiskStats:
        with open(source) as handle:
            for line in handle:
                fields = line.split()
                if fields[2] == device:
                    numbers = [int(value) for value in fields[3:]]
                    flushes = numbers[15:17] if len(numbers) >= 17 else [0, 0]
                    return cls(numbers[4], numbers[7], numbers[9], flushes[0], flushes[1], time.monotonic())
        raise LabError("no device %s in %s" % (device, source))

    def since(self, earlier: DiskStats) -> dict[str, float | None]:
        """Write await and flush await (ms per request, None without any), utilisation (share of the time busy)."""
        writes, flushes = self.writes - earlier.writes, self.flushes - earlier.flushes
        elapsed_ms = (self.taken - earlier.taken) * 1000
        return dict(
            write_await=(self.write_ms - earlier.write_ms) / writes if writes else None,
            flush_await=(self.flush_ms - earlier.flush_ms) / flushes if flushes else None,
            utilisation=(self.io_ms - earlier.io_ms) / elapsed_ms if elapsed_ms > 0 else None,
        )


def block_device(path: str | os.PathLike[str]) -> str | None:
    """The /proc/diskstats name of the block device holding ``path`` (a partition's own name), or None for a
    filesystem on no block device (tmpfs, overlay)."""
    number = os.stat(path).st_dev
    link = Path("/sys/dev/block/%d:%d" % (os.major(number), os.minor(number)))
    return link.resolve().name if link.exists() else None
