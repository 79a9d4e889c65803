# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pace of a prefetch: before each pull, wait while the write latency of a filesystem (etcd's) is over a bound.

etcd appends small entries to its WAL and fdatasyncs each one; its hardware guidance asks for a 99th percentile
fdatasync under 10 ms. The probe does the same: it appends 2 KiB to a temporary file in the probed directory and
times the fdatasync, every ``interval`` seconds, in a thread that runs for the whole pull phase. A pull cannot be
slowed down through CRI, so the pace works between pulls: before each one the worker waits until the latency is
within the bound both over the last ``window`` seconds (the ``percentile`` of the samples, the pulls included:
what etcd felt) and now (the last RECENT_SAMPLES samples), for at most ``max_wait`` seconds, and then goes on or
stops the queue (``on_max_wait``). Each sample counts once, as each fdatasync does in etcd's own histogram
(``etcd_disk_wal_fsync_duration_seconds``). docs/performance.md (B12) has the measurements behind the probe and
the defaults.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, NamedTuple, Optional, Protocol, Tuple, TypedDict

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "CONTINUE",
    "DEFAULT_PATH",
    "ON_MAX_WAIT",
    "PROBE_BYTES",
    "PROBE_FILE_LIMIT",
    "PROBE_PREFIX",
    "RECENT_SAMPLES",
    "SAMPLES_REPORTED",
    "SOURCE_IMAGE_STORE",
    "SOURCE_PATH",
    "STOP",
    "FdatasyncProbe",
    "Hold",
    "LatencySummary",
    "Pace",
    "PaceError",
    "PaceOptions",
    "PaceReport",
    "Probe",
    "Sample",
    "open_pace",
    "percentile",
    "probe_directory",
    "summarise",
]

PROBE_BYTES = 2048
# The probe file starts again from empty beyond this size, so a long run does not fill etcd's disk.
PROBE_FILE_LIMIT = 1024 * 1024
PROBE_PREFIX = ".pinned-images-pace-"
# etcd's data directory on kubeadm and OpenShift control-plane nodes.
DEFAULT_PATH = "/var/lib/etcd"
CONTINUE, STOP = "continue", "stop"
ON_MAX_WAIT = (CONTINUE, STOP)
# Where the probe goes: the directory asked for, or the image store when that directory does not exist.
SOURCE_PATH, SOURCE_IMAGE_STORE = "path", "image_store"
# "Now": the last samples, each of which must be within the bound.
RECENT_SAMPLES = 3
# The result lists at most this many samples, the latest; the percentiles are of all of them.
SAMPLES_REPORTED = 10000


class PaceError(CollectionError):
    """The pace cannot probe: no directory to write its probe in, or the probe cannot be written there."""


@dataclass(frozen=True)
class PaceOptions:
    """``path``: the directory whose filesystem is watched (a host path); ``bound``, ``window``, ``interval`` and
    ``max_wait`` in seconds; ``percentile`` above 0, at most 100."""

    path: str = DEFAULT_PATH
    bound: float = 0.010
    percentile: float = 99.0
    window: float = 30.0
    interval: float = 0.1
    # As long as a spike of the last pull takes to leave the window.
    max_wait: float = 30.0
    on_max_wait: str = CONTINUE


def percentile(values: List[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value that at least ``share`` % of ``values`` do not exceed."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(share / 100.0 * len(ordered))) - 1]


def probe_directory(path: str, image_store: Optional[str]) -> Tuple[str, str]:
    """(the directory to probe, SOURCE_PATH or SOURCE_IMAGE_STORE): ``path`` when it is a directory, else the image
    store's directory (the runtime's image filesystem, or image_store_path)."""
    if os.path.isdir(path):
        return path, SOURCE_PATH
    if image_store and os.path.isdir(image_store):
        return image_store, SOURCE_IMAGE_STORE
    raise PaceError(
        f"pace_path {path} is not a directory and the image store {image_store or '(unknown)'} is not one either: "
        "set pace_path to a directory on the filesystem to watch (etcd's data directory), or pace to false"
    )


def _listed(directory: str) -> List[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


class Probe(Protocol):
    """One latency sample in seconds; ``close`` removes what the probe left."""

    def sample(self) -> float: ...

    def close(self) -> None: ...


class FdatasyncProbe:
    """2 KiB appended to a temporary file in ``directory``, then fdatasync: the write etcd's WAL makes. An append
    changes the file's size, so each fdatasync also commits the filesystem's journal, as etcd's do; the file starts
    again from empty at 1 MiB and is removed by ``close``. A probe file an interrupted run left is removed first."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        for name in _listed(directory):
            if name.startswith(PROBE_PREFIX):
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass  # another's, or gone: the new probe does not depend on it
        try:
            self._fd, self.path = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
        except OSError as err:
            raise PaceError(
                f"the pace cannot write its probe file in {directory}: {err.strerror or err}; run as a user who "
                "can, point pace_path at another directory on the same filesystem, or set pace to false"
            ) from err
        self._data = b"\0" * PROBE_BYTES
        self._size = 0

    def sample(self) -> float:
        if self._size >= PROBE_FILE_LIMIT:
            os.ftruncate(self._fd, 0)
            os.lseek(self._fd, 0, os.SEEK_SET)
            self._size = 0
        started = time.perf_counter()
        os.write(self._fd, self._data)
        os.fdatasync(self._fd)
        elapsed = time.perf_counter() - started
        self._size += PROBE_BYTES
        return elapsed

    def close(self) -> None:
        if self._fd < 0:
            return
        os.close(self._fd)
        self._fd = -1
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class Sample(NamedTuple):
    clock: float
    wall: float
    latency: float


@dataclass(frozen=True)
class Hold:
    """What the gate did before one pull: seconds spent there, the latency it let the pull go at (the larger of the
    window's percentile and the recent samples' maximum, in seconds; None before enough samples), whether it was
    over the bound at first, and whether ``max_wait`` ran out."""

    waited: float
    level: Optional[float]
    held: bool
    timed_out: bool


class LatencySummary(TypedDict):
    count: int
    p50: Optional[float]
    p90: Optional[float]
    p99: Optional[float]
    max: Optional[float]


class PaceReport(TypedDict):
    """The result's ``pace``: the settings, the samples (seconds since ``started``, latency ms; the latest
    SAMPLES_REPORTED), their percentiles (all samples), the waits and what went wrong."""

    path: str
    source: str
    probe: str
    bound_ms: float
    percentile: float
    window: float
    interval: float
    max_wait: float
    on_max_wait: str
    started: float
    samples: List[List[float]]
    samples_left_out: int
    latency_ms: LatencySummary
    waited_seconds: float
    held: int
    timed_out: List[str]
    error: Optional[str]


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def summarise(latencies: List[float]) -> LatencySummary:
    """Count, p50, p90, p99 and max of latencies in seconds, in milliseconds."""
    if not latencies:
        return LatencySummary(count=0, p50=None, p90=None, p99=None, max=None)
    return LatencySummary(
        count=len(latencies),
        p50=_ms(percentile(latencies, 50)),
        p90=_ms(percentile(latencies, 90)),
        p99=_ms(percentile(latencies, 99)),
        max=_ms(max(latencies)),
    )


class Pace:
    """The sampler thread (``start`` / ``stop``, or ``with``) and the gate each pull worker passes (``before_pull``).

    ``clock`` is monotonic, ``wall`` the time the samples are reported against.
    """

    def __init__(
        self,
        options: PaceOptions,
        probe: Probe,
        path: str,
        source: str = SOURCE_PATH,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.options = options
        self.probe = probe
        self.path = path
        self.source = source
        self._clock = clock
        self._wall = wall
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._samples: List[Sample] = []
        # Images a gate holds back now: (since, wall time; level, seconds).
        self._holding: Dict[str, Tuple[float, Optional[float]]] = {}
        self._started = wall()
        self._waited = 0.0
        self._held = 0
        self._timed_out: List[str] = []
        self.error: Optional[str] = None

    def __enter__(self) -> "Pace":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        self._started = self._wall()
        self._thread = threading.Thread(target=self._sample_loop, name="pace-probe", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        self.probe.close()

    def _sample_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                latency = self.probe.sample()
            except OSError as err:
                with self._cond:
                    self.error = f"the probe in {self.path} failed ({err}); the pulls after it were not paced"
                    self._cond.notify_all()
                return
            with self._cond:
                self._samples.append(Sample(self._clock(), self._wall(), latency))
                self._cond.notify_all()
            self._stopping.wait(self.options.interval)

    def level(self) -> Optional[float]:
        """The latency the gate compares with the bound (seconds): the larger of the ``percentile`` over the last
        ``window`` seconds and the maximum of the last RECENT_SAMPLES samples; None before that many samples."""
        with self._cond:
            return self._level()

    def _level(self) -> Optional[float]:
        samples = self._samples
        if len(samples) < RECENT_SAMPLES:
            return None
        recent = max(sample.latency for sample in samples[-RECENT_SAMPLES:])
        since = self._clock() - self.options.window
        first = len(samples)
        while first > 0 and samples[first - 1].clock >= since:
            first -= 1
        window = samples[first:] or samples[-RECENT_SAMPLES:]
        spread = percentile([sample.latency for sample in window], self.options.percentile)
        return max(recent, spread)

    def before_pull(self, image: str, notify: Optional[Callable[[], None]] = None) -> Tuple[float, Optional[str]]:
        """Wait until the disk is calm enough for the pull of ``image``: (seconds waited, None to pull, or the
        reason to stop the queue when ``max_wait`` ran out and ``on_max_wait`` is ``stop``). ``notify()`` is called,
        outside the pace's lock, when the gate starts holding the image (the progress file then says so)."""
        hold = self.hold(image, notify)
        if hold.timed_out and self.options.on_max_wait == STOP:
            return hold.waited, self.describe_timeout(hold)
        return hold.waited, None

    def describe_timeout(self, hold: Hold) -> str:
        options = self.options
        level = "fewer samples than needed" if hold.level is None else f"{_ms(hold.level):g} ms"
        return (
            f"the write latency of {self.path} stayed over {_ms(options.bound):g} ms (p{options.percentile:g} over "
            f"{options.window:g} s, or one of the last {RECENT_SAMPLES} samples: {level}) for pace_max_wait "
            f"{options.max_wait:g} s"
        )

    def hold(self, image: str, notify: Optional[Callable[[], None]] = None) -> Hold:
        """Block until the level is at or under the bound, ``max_wait`` runs out or the probe fails (then the pull
        goes on: nothing is left to measure)."""
        options = self.options
        started = self._clock()
        held = False
        while True:
            newly_held = False
            with self._cond:
                level = self._level()
                if level is not None and level <= options.bound:
                    return self._released(image, started, level, held, False)
                if self.error is not None or self._stopping.is_set():
                    return self._released(image, started, level, held, False)
                if level is not None:
                    if not held:
                        held = newly_held = True
                        self._held += 1
                    self._holding[image] = (self._wall(), level)
                remaining = options.max_wait - (self._clock() - started)
                if remaining <= 0:
                    self._timed_out.append(image)
                    return self._released(image, started, level, held, True)
                if not newly_held:
                    self._cond.wait(remaining)
            if newly_held and notify is not None:
                notify()

    def _released(self, image: str, started: float, level: Optional[float], held: bool, timed_out: bool) -> Hold:
        # Called with the lock held.
        waited = round(self._clock() - started, 3)
        self._waited += waited
        self._holding.pop(image, None)
        return Hold(waited, level, held, timed_out)

    def progress(self) -> Dict[str, object]:
        """For the progress file: the images held back now (since when, at what level in ms) and the last sample."""
        with self._cond:
            last = self._samples[-1].latency if self._samples else None
            return dict(
                waiting=[
                    dict(image=image, since=round(since, 3), latency_ms=None if level is None else _ms(level))
                    for image, (since, level) in sorted(self._holding.items())
                ],
                last_ms=None if last is None else _ms(last),
                samples=len(self._samples),
            )

    def warnings(self) -> List[str]:
        """What the user should know: images pulled although the latency stayed over the bound, a failed probe."""
        with self._cond:
            found = [self.error] if self.error else []
            late = self._timed_out if self.options.on_max_wait == CONTINUE else []
            if late:
                options = self.options
                found.append(
                    f"the pace waited pace_max_wait {options.max_wait:g} s for {len(late)} image(s) and pulled them "
                    f"with the write latency of {self.path} still over {_ms(options.bound):g} ms "
                    f"(p{options.percentile:g} over {options.window:g} s): {'; '.join(late[:5])}"
                    f"{f'; and {len(late) - 5} more' if len(late) > 5 else ''}. If the disk is this slow without a "
                    "prefetch, raise pace_bound_ms or give etcd a disk of its own (docs/orchestration.md)"
                )
            return found

    def report(self) -> PaceReport:
        with self._cond:
            samples = list(self._samples)
            options = self.options
            listed = samples[-SAMPLES_REPORTED:]
            return PaceReport(
                path=self.path,
                source=self.source,
                probe="fdatasync",
                bound_ms=_ms(options.bound),
                percentile=options.percentile,
                window=options.window,
                interval=options.interval,
                max_wait=options.max_wait,
                on_max_wait=options.on_max_wait,
                started=round(self._started, 3),
                samples=[[round(sample.wall - self._started, 3), _ms(sample.latency)] for sample in listed],
                samples_left_out=len(samples) - len(listed),
                latency_ms=summarise([sample.latency for sample in samples]),
                waited_seconds=round(self._waited, 3),
                held=self._held,
                timed_out=list(self._timed_out),
                error=self.error,
            )


def open_pace(options: PaceOptions, image_store: Optional[str]) -> Pace:
    """A pace (not started) that probes ``options.path``, or ``image_store`` when that is not a directory; raises
    PaceError before anything is written when neither can take the probe."""
    directory, source = probe_directory(options.path, image_store)
    return Pace(options, FdatasyncProbe(directory), directory, source)
