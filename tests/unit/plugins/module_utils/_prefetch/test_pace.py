# SPDX-License-Identifier: GPL-3.0-or-later
"""The pace of _prefetch: the fdatasync probe on real files, and the gate driven by a probe the test feeds sample
by sample (a latency chosen by the test cannot come from a real disk; tests/functional/test_pace_lab.py makes it
high for real)."""

from __future__ import annotations

import dataclasses
import os
import queue
import threading

import pytest

from ansible_collections.pinned.images.plugins.module_utils._prefetch import pace as pace_module
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pace import (
    PROBE_BYTES,
    PROBE_PREFIX,
    RECENT_SAMPLES,
    SOURCE_IMAGE_STORE,
    SOURCE_PATH,
    STOP,
    FdatasyncProbe,
    Pace,
    PaceError,
    PaceOptions,
    open_pace,
    percentile,
    probe_directory,
    summarise,
)

MS = 0.001


class FedProbe:
    """Returns the latencies the test feeds, one per sample, blocking in between; ``OSError`` is raised as fed."""

    def __init__(self):
        self.values = queue.Queue()
        self.closed = False

    def feed(self, *values):
        for value in values:
            self.values.put(value)

    def sample(self):
        value = self.values.get()
        if isinstance(value, OSError):
            raise value
        return value

    def close(self):
        self.closed = True


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def fed_pace(options, clock=None):
    """A started pace whose sampler records each fed value at once (no interval between samples)."""
    probe = FedProbe()
    pace = Pace(dataclasses.replace(options, interval=0.0), probe, "/etcd", clock=clock or Clock())
    pace.start()
    return pace, probe


def recorded(pace, probe, *values):
    """Feed ``values`` and wait until the sampler has recorded each."""
    expected = pace.progress()["samples"] + len(values)
    probe.feed(*values)
    with pace._cond:
        pace._cond.wait_for(lambda: len(pace._samples) >= expected or pace.error, timeout=30)
    assert pace.progress()["samples"] == expected


def holding(call):
    """Run ``call(notify)`` (a gate) in a thread until it notifies that it holds: (the thread, its answer's list)."""
    done, notified = [], threading.Event()
    gate = threading.Thread(target=lambda: done.append(call(notified.set)))
    gate.start()
    assert notified.wait(30)
    return gate, done


def finish(pace, probe):
    probe.feed(OSError("test over"))
    pace.stop()


@pytest.mark.parametrize(
    "values, share, expected",
    [
        ([5.0], 99, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 51, 3.0),
        ([float(n) for n in range(1, 101)], 99, 99.0),
        ([float(n) for n in range(1, 101)], 100, 100.0),
        ([3.0, 1.0, 2.0], 1, 1.0),
    ],
)
def test_percentile_is_the_nearest_rank(values, share, expected):
    assert percentile(values, share) == expected


def test_summary_in_milliseconds():
    assert summarise([0.001, 0.002, 0.010]) == dict(count=3, p50=2.0, p90=10.0, p99=10.0, max=10.0)
    assert summarise([]) == dict(count=0, p50=None, p90=None, p99=None, max=None)


def test_probe_directory_falls_back_to_the_image_store(tmp_path):
    etcd, store = tmp_path / "etcd", tmp_path / "store"
    store.mkdir()
    assert probe_directory(str(etcd), str(store)) == (str(store), SOURCE_IMAGE_STORE)
    etcd.mkdir()
    assert probe_directory(str(etcd), str(store)) == (str(etcd), SOURCE_PATH)


def test_probe_directory_without_either_names_both(tmp_path):
    with pytest.raises(PaceError) as raised:
        probe_directory(str(tmp_path / "etcd"), str(tmp_path / "store"))
    assert str(tmp_path / "etcd") in raised.value.message and str(tmp_path / "store") in raised.value.message
    assert "pace to false" in raised.value.message
    with pytest.raises(PaceError, match=r"the image store \(unknown\)"):
        probe_directory(str(tmp_path / "etcd"), None)


def test_fdatasync_probe_appends_to_its_own_file_and_removes_it(tmp_path):
    (tmp_path / "member").mkdir()
    probe = FdatasyncProbe(str(tmp_path))
    probes = [name for name in os.listdir(tmp_path) if name.startswith(PROBE_PREFIX)]
    assert probes == [os.path.basename(probe.path)]
    latencies = [probe.sample() for _sample in range(3)]
    assert all(latency > 0 for latency in latencies)
    assert os.path.getsize(probe.path) == 3 * PROBE_BYTES
    probe.close()
    probe.close()
    assert os.listdir(tmp_path) == ["member"]


def test_fdatasync_probe_removes_what_an_interrupted_run_left_and_nothing_else(tmp_path):
    (tmp_path / (PROBE_PREFIX + "left")).write_bytes(b"\0" * PROBE_BYTES)
    (tmp_path / "member").mkdir()
    (tmp_path / ".pinned-images-other").write_text("kept")
    probe = FdatasyncProbe(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == sorted([".pinned-images-other", "member", os.path.basename(probe.path)])
    probe.close()


def test_fdatasync_probe_starts_again_from_empty_at_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(pace_module, "PROBE_FILE_LIMIT", 2 * PROBE_BYTES)
    probe = FdatasyncProbe(str(tmp_path))
    sizes = []
    for _sample in range(5):
        probe.sample()
        sizes.append(os.path.getsize(probe.path))
    probe.close()
    assert sizes == [PROBE_BYTES, 2 * PROBE_BYTES, PROBE_BYTES, 2 * PROBE_BYTES, PROBE_BYTES]


def test_fdatasync_probe_that_cannot_write_says_what_to_do(tmp_path):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with pytest.raises(PaceError) as raised:
        FdatasyncProbe(str(not_a_directory))
    assert raised.value.message.startswith(f"the pace cannot write its probe file in {not_a_directory}: ")
    assert "pace_path" in raised.value.message


def test_real_probe_on_a_calm_bound_lets_the_pull_go(tmp_path):
    # A bound no disk reaches: the gate must not depend on this machine's load.
    options = PaceOptions(bound=60.0, interval=0.001, max_wait=600.0)
    with Pace(options, FdatasyncProbe(str(tmp_path)), str(tmp_path)) as pace:
        waited, stop = pace.before_pull("img")
    report = pace.report()
    assert stop is None and waited >= 0
    assert report["latency_ms"]["count"] >= RECENT_SAMPLES
    assert report["held"] == 0 and report["timed_out"] == [] and report["error"] is None
    assert report["path"] == str(tmp_path) and report["probe"] == "fdatasync"
    assert os.listdir(tmp_path) == []


def test_gate_waits_for_recent_samples_before_the_first_pull():
    pace, probe = fed_pace(PaceOptions(bound=10 * MS, max_wait=600.0))
    done = []
    gate = threading.Thread(target=lambda: done.append(pace.hold("img")))
    gate.start()
    recorded(pace, probe, *[1 * MS] * (RECENT_SAMPLES - 1))
    assert not done
    recorded(pace, probe, 1 * MS)
    gate.join()
    assert done[0].held is False and done[0].timed_out is False and done[0].level == 1 * MS
    finish(pace, probe)


def test_gate_holds_while_the_latency_is_high_and_notifies_once():
    clock = Clock()
    pace, probe = fed_pace(PaceOptions(bound=10 * MS, percentile=50, window=60.0, max_wait=600.0), clock)
    recorded(pace, probe, *[50 * MS] * 4)
    calls = []

    def counted(notify):
        return pace.hold("img", lambda: (calls.append(1), notify()))

    gate, done = holding(counted)
    waiting = pace.progress()["waiting"]
    assert [entry["image"] for entry in waiting] == ["img"] and waiting[0]["latency_ms"] == 50.0
    # Calm now, but the median of the window is still high: three calm samples are not enough, a fourth is.
    recorded(pace, probe, 1 * MS, 1 * MS, 1 * MS)
    assert not done
    clock.now += 5
    recorded(pace, probe, 1 * MS)
    gate.join()
    hold = done[0]
    assert hold.held is True and hold.timed_out is False and hold.level == 1 * MS and hold.waited == 5.0
    assert calls == [1]
    assert pace.progress()["waiting"] == []
    finish(pace, probe)
    report = pace.report()
    assert report["held"] == 1 and report["waited_seconds"] == 5.0
    assert [ms for _t, ms in report["samples"]] == [50.0] * 4 + [1.0] * 4


def test_one_recent_sample_over_the_bound_holds_even_when_the_window_is_calm():
    pace, probe = fed_pace(PaceOptions(bound=10 * MS, percentile=50, max_wait=600.0))
    recorded(pace, probe, *[1 * MS] * 20 + [30 * MS])
    assert pace.level() == 30 * MS
    recorded(pace, probe, 1 * MS, 1 * MS)
    assert pace.level() == 30 * MS
    recorded(pace, probe, 1 * MS)
    assert pace.level() == 1 * MS
    finish(pace, probe)


def test_samples_older_than_the_window_no_longer_count():
    clock = Clock()
    pace, probe = fed_pace(PaceOptions(bound=10 * MS, percentile=99, window=30.0), clock)
    recorded(pace, probe, 40 * MS, 40 * MS)
    clock.now += 10
    recorded(pace, probe, *[1 * MS] * 10)
    assert pace.level() == 40 * MS
    clock.now += 25
    assert pace.level() == 1 * MS
    finish(pace, probe)


def test_max_wait_then_continue():
    clock = Clock()
    pace, probe = fed_pace(PaceOptions(bound=10 * MS, max_wait=2.0), clock)
    recorded(pace, probe, *[50 * MS] * 3)
    gate, done = holding(lambda notify: pace.before_pull("img", notify))
    clock.now += 2
    recorded(pace, probe, 50 * MS)
    gate.join()
    assert done == [(2.0, None)]
    finish(pace, probe)
    assert pace.report()["timed_out"] == ["img"]


def test_max_wait_then_stop_says_why():
    clock = Clock()
    pace, probe = fed_pace(
        PaceOptions(bound=10 * MS, percentile=90, window=20.0, max_wait=2.0, on_max_wait=STOP), clock
    )
    recorded(pace, probe, *[50 * MS] * 3)
    gate, done = holding(lambda notify: pace.before_pull("img", notify))
    clock.now += 3
    recorded(pace, probe, 60 * MS)
    gate.join()
    waited, reason = done[0]
    assert waited == 3.0
    assert reason == (
        "the write latency of /etcd stayed over 10 ms (p90 over 20 s, or one of the last 3 samples: 60 ms) for "
        "pace_max_wait 2 s"
    )
    finish(pace, probe)


def test_a_failed_probe_lets_the_pulls_go_and_is_reported():
    pace, probe = fed_pace(PaceOptions(bound=10 * MS, max_wait=600.0))
    recorded(pace, probe, 50 * MS)
    probe.feed(OSError(28, "No space left on device"))
    hold = pace.hold("img")
    pace.stop()
    assert hold.timed_out is False and hold.level is None
    report = pace.report()
    assert report["error"] == (
        "the probe in /etcd failed ([Errno 28] No space left on device); the pulls after it were not paced"
    )
    assert probe.closed


def test_report_lists_the_latest_samples_and_counts_the_rest(monkeypatch):
    monkeypatch.setattr(pace_module, "SAMPLES_REPORTED", 4)
    pace, probe = fed_pace(PaceOptions())
    recorded(pace, probe, *[n * MS for n in range(1, 7)])
    finish(pace, probe)
    report = pace.report()
    assert [ms for _t, ms in report["samples"]] == [3.0, 4.0, 5.0, 6.0]
    assert report["samples_left_out"] == 2
    assert report["latency_ms"]["count"] == 6 and report["latency_ms"]["max"] == 6.0


def test_open_pace_probes_the_image_store_when_the_path_is_missing(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    pace = open_pace(PaceOptions(path=str(tmp_path / "etcd")), str(store))
    assert (pace.path, pace.source) == (str(store), SOURCE_IMAGE_STORE)
    assert [name.startswith(PROBE_PREFIX) for name in os.listdir(store)] == [True]
    pace.probe.close()
    assert os.listdir(store) == []


def test_images_pulled_after_the_maximum_wait_are_a_warning():
    clock = Clock()
    pace, probe = fed_pace(PaceOptions(bound=10 * MS, max_wait=1.0), clock)
    recorded(pace, probe, *[50 * MS] * 3)
    assert pace.warnings() == []
    gate, done = holding(lambda notify: pace.before_pull("img-1", notify))
    clock.now += 1
    recorded(pace, probe, 50 * MS)
    gate.join()
    assert done == [(1.0, None)]
    finish(pace, probe)
    assert pace.warnings() == [
        "the probe in /etcd failed (test over); the pulls after it were not paced",
        "the pace waited pace_max_wait 1 s for 1 image(s) and pulled them with the write latency of /etcd still over "
        "10 ms (p99 over 30 s): img-1. If the disk is this slow without a prefetch, raise pace_bound_ms or give etcd "
        "a disk of its own (docs/orchestration.md)",
    ]
