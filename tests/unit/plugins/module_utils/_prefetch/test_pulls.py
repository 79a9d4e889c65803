# SPDX-License-Identifier: GPL-3.0-or-later
"""Scheduling, retry and queue rules of _prefetch, driven by a scripted CRI stand-in.

The stand-in replays per-image outcomes so that backoff delays, the ENOSPC stop and the worker bound can be
asserted exactly; tests/functional covers the same paths against a real containerd and registry.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import AUTH, NO_SPACE, NOT_FOUND, UNKNOWN
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError
from ansible_collections.pinned.images.plugins.module_utils._prefetch import pulls
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import (
    PrefetchOptions,
    failure_message,
    find_present,
    prefetch,
)

DIGEST = "sha256:" + "a" * 64


def ref(n: int):
    return parse_image_ref(f"registry.example:5000/app{n}@{DIGEST}")


class ScriptedRuntime:
    """Answers ListImages/ImageStatus from a set of present names; PullImage pops scripted outcomes."""

    def __init__(self, present=(), outcomes=None, pull_seconds=0.0):
        self.present = set(present)
        self.outcomes = {k: list(v) for k, v in (outcomes or {}).items()}
        self.pull_seconds = pull_seconds
        self.barrier = None
        self.calls = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def list_images(self):
        self.calls.append(("ListImages",))
        return [
            dict(id="sha256:" + str(i), repo_tags=[], repo_digests=[name], size=1, pinned=False)
            for i, name in enumerate(sorted(self.present))
        ]

    def image_status(self, image):
        self.calls.append(("ImageStatus", image))
        if image in self.present or image.startswith("sha256:"):
            return dict(id="sha256:id-" + image[-6:], repo_tags=[], repo_digests=[image], size=100, pinned=False)
        return None

    def pull_image(self, image, auth=None, timeout=None):
        with self.lock:
            self.calls.append(("PullImage", image, auth))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.barrier is not None:
                self.barrier.wait()
            time.sleep(self.pull_seconds)
            outcome = self.outcomes.get(image, [None]).pop(0) if self.outcomes.get(image) else None
            if outcome is not None:
                raise outcome
            self.present.add(image)
            return "sha256:" + image[-12:]
        finally:
            with self.lock:
                self.active -= 1


def anonymous(_ref):
    return None, "no credentials"


def run(runtime, refs, failed=None, **options):
    sleeps = []
    present = find_present(runtime, refs)
    report = prefetch(runtime, refs, anonymous, PrefetchOptions(**options), present, failed, sleep=sleeps.append)
    return report, sleeps


def test_present_images_cost_one_list_call_and_no_pulls():
    refs = [ref(i) for i in range(100)]
    runtime = ScriptedRuntime(present=[str(r) for r in refs])
    report, _sleeps = run(runtime, refs)
    assert runtime.calls == [("ListImages",)]
    assert report["totals"]["present"] == 100
    assert report["totals"]["pulled"] == 0


def test_missing_images_are_pulled_and_sized():
    refs = [ref(1), ref(2)]
    runtime = ScriptedRuntime(present=[str(ref(1))])
    report, _sleeps = run(runtime, refs)
    statuses = [r["status"] for r in report["images"]]
    assert statuses == ["present", "pulled"]
    assert report["images"][1]["size"] == 100
    assert report["images"][1]["attempts"] == 1
    assert report["totals"]["bytes_pulled"] == 100


def test_transient_failures_back_off_exponentially_with_cap():
    image = str(ref(1))
    failures = [CriError("connection refused", UNKNOWN)] * 5
    runtime = ScriptedRuntime(outcomes={image: failures})
    report, sleeps = run(runtime, [ref(1)], retries=5, retry_delay=1.0, retry_max_delay=10.0)
    assert sleeps == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert report["images"][0]["status"] == "pulled"
    assert report["images"][0]["attempts"] == 6


def test_retries_exhausted_reports_attempts():
    image = str(ref(1))
    runtime = ScriptedRuntime(outcomes={image: [CriError("connection refused", UNKNOWN)] * 10})
    report, sleeps = run(runtime, [ref(1)], retries=2)
    result = report["images"][0]
    assert result["status"] == "failed"
    assert result["attempts"] == 3
    assert "gave up after 3 attempts" in result["error"]
    assert len(sleeps) == 2


@pytest.mark.parametrize("kind", [AUTH, NOT_FOUND])
def test_permanent_errors_are_not_retried(kind):
    image = str(ref(1))
    runtime = ScriptedRuntime(outcomes={image: [CriError("401 Unauthorized", kind)]})
    report, sleeps = run(runtime, [ref(1)])
    assert report["images"][0]["attempts"] == 1
    assert report["images"][0]["error_kind"] == kind
    assert sleeps == []


def test_auth_failure_names_registry_and_source():
    image = str(ref(1))
    runtime = ScriptedRuntime(outcomes={image: [CriError("401 Unauthorized", AUTH)]})
    report, _sleeps = run(runtime, [ref(1)])
    assert "registry registry.example:5000 rejected" in report["images"][0]["error"]
    assert "no credentials" in report["images"][0]["error"]


def test_no_space_stops_the_queue_and_skips_the_rest():
    refs = [ref(i) for i in range(6)]
    runtime = ScriptedRuntime(outcomes={str(refs[0]): [CriError("write /x: no space left on device", NO_SPACE)]})
    report, sleeps = run(runtime, refs, concurrency=1, image_fs="/var/lib/containerd")
    statuses = [r["status"] for r in report["images"]]
    assert statuses == ["failed"] + ["skipped"] * 5
    assert "image filesystem /var/lib/containerd is full" in report["images"][0]["error"]
    assert [c for c in runtime.calls if c[0] == "PullImage"] == [("PullImage", str(refs[0]), None)]
    assert sleeps == []
    message = failure_message(report["images"])
    assert message.startswith(f"1 of 6 images failed: {refs[0]}: image filesystem /var/lib/containerd is full")
    assert (
        ". 5 more were not attempted because the disk ran out of space (free space and run again to pull them): "
        + "; ".join(str(r) for r in refs[1:])
        in message
    )


def test_failure_message_lists_five_and_counts_the_rest():
    images = [{"image": f"i{n}", "status": "failed", "error": "e"} for n in range(7)]
    images += [{"image": f"s{n}", "status": "skipped", "error": "x"} for n in range(8)]
    images += [{"image": "p", "status": "pulled", "error": None}]
    assert failure_message(images) == (
        "7 of 16 images failed: i0: e; i1: e; i2: e; i3: e; i4: e; and 2 more. 8 more were not attempted because the "
        "disk ran out of space (free space and run again to pull them): s0; s1; s2; s3; s4; and 3 more"
    )
    assert failure_message(images[-1:]) is None


def test_concurrency_bounds_parallel_pulls():
    refs = [ref(i) for i in range(12)]
    runtime = ScriptedRuntime()
    # Each pull waits until three are in flight: a fourth worker would make max_active 4, fewer would time out.
    runtime.barrier = threading.Barrier(3, timeout=10)
    report, _sleeps = run(runtime, refs, concurrency=3)
    assert runtime.max_active == 3
    assert report["totals"]["pulled"] == 12


def test_one_worker_never_overlaps():
    refs = [ref(i) for i in range(5)]
    runtime = ScriptedRuntime(pull_seconds=0.01)
    report, _sleeps = run(runtime, refs, concurrency=1)
    spans = sorted((r["started"], r["finished"]) for r in report["images"])
    assert all(prev[1] <= nxt[0] for prev, nxt in zip(spans, spans[1:]))
    assert runtime.max_active == 1


def test_pull_pause_waits_between_pulls_only():
    refs = [ref(1), ref(2), ref(3), ref(4)]
    runtime = ScriptedRuntime(present=[str(ref(2))])
    _report, sleeps = run(runtime, refs, concurrency=1, pull_pause=1.5)
    # Three pulls: a wait before the second and the third, none after the last.
    assert sleeps == [1.5, 1.5]


def test_pull_pause_does_not_wait_after_a_single_pull():
    _report, sleeps = run(ScriptedRuntime(), [ref(1)], concurrency=1, pull_pause=1.5)
    assert not sleeps


def test_images_listed_under_another_name_are_found_by_image_status():
    runtime = ScriptedRuntime()
    runtime.list_images = lambda: []
    runtime.present.add(str(ref(1)))
    report, _sleeps = run(runtime, [ref(1)])
    assert report["images"][0]["status"] == "present"
    assert ("ImageStatus", str(ref(1))) in runtime.calls


def test_known_failures_are_reported_not_pulled():
    runtime = ScriptedRuntime()
    failed = {str(ref(1)): ("manifest unknown", NOT_FOUND)}
    report, _sleeps = run(runtime, [ref(1), ref(2)], failed=failed)
    assert [r["status"] for r in report["images"]] == ["failed", "pulled"]
    assert report["images"][0]["error"] == "manifest unknown"
    assert [c[1] for c in runtime.calls if c[0] == "PullImage"] == [str(ref(2))]


def test_check_mode_pulls_nothing():
    refs = [ref(1), ref(2)]
    runtime = ScriptedRuntime(present=[str(ref(1))])
    report, _sleeps = run(runtime, refs, check_mode=True)
    assert [r["status"] for r in report["images"]] == ["present", "would_pull"]
    assert not [c for c in runtime.calls if c[0] == "PullImage"]


def test_unexpected_worker_error_is_a_failure_not_a_silent_success():
    runtime = ScriptedRuntime(outcomes={str(ref(1)): [ValueError("Cannot invoke RPC on closed channel!")]})
    report, _sleeps = run(runtime, [ref(1), ref(2)], concurrency=1)
    assert [r["status"] for r in report["images"]] == ["failed", "pulled"]
    assert report["images"][0]["error_kind"] == "unknown"
    assert report["totals"]["failed"] == 1


def test_size_lookup_failure_after_pull_keeps_the_image_pulled():
    runtime = ScriptedRuntime()
    real_status = runtime.image_status

    def failing_for_ids(image):
        if image.startswith("sha256:"):
            raise CriError("ImageStatus: deadline exceeded", "deadline")
        return real_status(image)

    runtime.image_status = failing_for_ids
    report, _sleeps = run(runtime, [ref(1)])
    assert report["images"][0]["status"] == "pulled"
    assert report["images"][0]["size"] is None


def test_unwritable_progress_file_warns_and_pulls_go_on(tmp_path):
    progress = tmp_path / "missing-dir" / "progress.json"
    runtime = ScriptedRuntime()
    report, _sleeps = run(runtime, [ref(1), ref(2)], progress_file=str(progress))
    assert report["totals"]["pulled"] == 2
    assert len(report["warnings"]) == 1 and str(progress) in report["warnings"][0]
    assert not (tmp_path / "missing-dir").exists()


def test_check_mode_writes_no_progress_file(tmp_path):
    progress = tmp_path / "progress.json"
    report, _sleeps = run(ScriptedRuntime(), [ref(1)], check_mode=True, progress_file=str(progress))
    assert report["images"][0]["status"] == "would_pull"
    assert not progress.exists()


def test_progress_file_reflects_final_counts(tmp_path):
    progress = tmp_path / "progress.json"
    refs = [ref(1), ref(2)]
    runtime = ScriptedRuntime(present=[str(ref(1))])
    run(runtime, refs, progress_file=str(progress))
    data = json.loads(progress.read_text())
    assert data["total"] == 2
    assert data["done"] == 2
    assert data["counts"]["pulled"] == 1
    assert data["counts"]["present"] == 1
    assert data["bytes"] == 100
    assert list(tmp_path.iterdir()) == [progress]


class ScriptedGate:
    """A pace stand-in: records each image it is asked about (and the pull pauses before it), waits nothing,
    and stops the queue at the image named in ``stop_at``; ``holds`` images make it notify first."""

    def __init__(self, sleeps, stop_at=None, holds=()):
        self.sleeps = sleeps
        self.stop_at = stop_at
        self.holds = set(holds)
        self.holding = None
        self.asked = []

    def before_pull(self, image, notify):
        self.asked.append((image, len(self.sleeps)))
        if image in self.holds:
            self.holding = image
            notify()
        if image == self.stop_at:
            return 2.5, "the disk stayed busy"
        return 0.25, None

    def progress(self):
        return dict(waiting=[{"image": self.holding}] if self.holding else [])


def run_gated(runtime, refs, gate, **options):
    present = find_present(runtime, refs)
    return prefetch(runtime, refs, anonymous, PrefetchOptions(**options), present, sleep=gate.sleeps.append, gate=gate)


def test_the_gate_is_passed_before_every_pull_after_the_pull_pause():
    refs = [ref(1), ref(2), ref(3)]
    runtime = ScriptedRuntime(present=[str(ref(2))])
    gate = ScriptedGate([])
    report = run_gated(runtime, refs, gate, concurrency=1, pull_pause=1.0)
    # The first pull has no pause before it; the second one's gate comes after its pause.
    assert gate.asked == [(str(ref(1)), 0), (str(ref(3)), 1)]
    assert [r["waited"] for r in report["images"]] == [0.25, 0.0, 0.25]
    assert all(r["status"] in ("pulled", "present") for r in report["images"])


def test_a_gate_that_stops_skips_the_image_and_the_rest():
    refs = [ref(i) for i in range(4)]
    runtime = ScriptedRuntime()
    gate = ScriptedGate([], stop_at=str(refs[1]))
    report = run_gated(runtime, refs, gate, concurrency=1)
    assert [r["status"] for r in report["images"]] == ["pulled", "skipped", "skipped", "skipped"]
    assert [r["waited"] for r in report["images"]] == [0.25, 2.5, 0.0, 0.0]
    assert report["images"][1]["error"] == "not attempted: the pace stopped the prefetch: the disk stayed busy"
    assert [c[1] for c in runtime.calls if c[0] == "PullImage"] == [str(refs[0])]
    assert failure_message(report["images"]) == (
        "3 of 4 images were not attempted because the pace stopped the prefetch (pace_on_max_wait=stop): the disk "
        "stayed busy; run again when the disk is calmer to pull them: " + "; ".join(str(r) for r in refs[1:])
    )


def test_a_pace_stop_after_failures_names_both():
    images = [{"image": "f", "status": "failed", "error": "manifest unknown"}]
    images += [{"image": "s", "status": "skipped", "error": "not attempted: the pace stopped the prefetch: busy"}]
    assert failure_message(images) == (
        "1 of 2 images failed: f: manifest unknown. 1 of 2 images were not attempted because the pace stopped the "
        "prefetch (pace_on_max_wait=stop): busy; run again when the disk is calmer to pull them: s"
    )


def test_a_gate_that_holds_writes_its_state_to_the_progress_file(tmp_path):
    progress = tmp_path / "progress.json"
    seen = []

    class Watching(ScriptedGate):
        def before_pull(self, image, notify):
            answer = super().before_pull(image, notify)
            seen.append(json.loads(progress.read_text())["pace"])
            self.holding = None
            return answer

    class Reading(ScriptedRuntime):
        def pull_image(self, image, auth=None, timeout=None):
            seen.append(("pulling", json.loads(progress.read_text())["pace"]))
            return super().pull_image(image, auth, timeout)

    gate = Watching([], holds=[str(ref(2))])
    run_gated(Reading(), [ref(1), ref(2)], gate, concurrency=1, progress_file=str(progress))
    # Only a gate that holds writes the file before the pull: the first image's gate did not; once it let the pull
    # go, the file no longer says it waits.
    assert seen == [
        {"waiting": []},
        ("pulling", {"waiting": []}),
        {"waiting": [{"image": str(ref(2))}]},
        ("pulling", {"waiting": []}),
    ]
    assert json.loads(progress.read_text())["pace"] == {"waiting": []}


def test_the_progress_file_moves_while_one_long_pull_runs(tmp_path, monkeypatch):
    """PullImage says nothing until the image is complete: the file is rewritten meanwhile, with the image being
    pulled and how much the image filesystem's use grew since the prefetch began."""
    monkeypatch.setattr(pulls, "HEARTBEAT_SECONDS", 0.02)
    # The image filesystem's free bytes fall by 4 KiB at each read.
    free = iter(range(10**9, 0, -4096))
    monkeypatch.setattr(pulls, "filesystem_stats", lambda path: (2 * 10**9, next(free)))
    progress = tmp_path / "progress.json"
    seen = []
    release = threading.Event()

    class SlowRuntime(ScriptedRuntime):
        def pull_image(self, image, auth=None, timeout=None):
            deadline = time.monotonic() + 10
            while len(seen) < 3 and time.monotonic() < deadline:
                data = json.loads(progress.read_text())
                if data["current"] and (not seen or data["elapsed"] > seen[-1]["elapsed"]):
                    seen.append(data)
                time.sleep(0.01)
            release.set()
            return super().pull_image(image, auth, timeout)

    report, _sleeps = run(SlowRuntime(), [ref(1)], progress_file=str(progress), image_fs=str(tmp_path))
    assert release.is_set() and report["totals"]["pulled"] == 1
    # Three writes during the one pull, each later than the last, each growing.
    assert len(seen) == 3, seen
    assert [data["current"] for data in seen] == [[str(ref(1))]] * 3
    assert seen[0]["image_fs_growth"] < seen[1]["image_fs_growth"] < seen[2]["image_fs_growth"]
    final = json.loads(progress.read_text())
    assert final["current"] == [] and final["done"] == 1


class ThreadsSeen(ScriptedRuntime):
    """Notes the names of the threads that run while each image is pulled."""

    def __init__(self):
        super().__init__()
        self.threads = set()

    def pull_image(self, image, auth=None, timeout=None):
        self.threads |= {thread.name for thread in threading.enumerate()}
        return super().pull_image(image, auth, timeout)


def test_no_image_filesystem_no_growth_and_no_heartbeat_without_a_file(tmp_path, monkeypatch):
    monkeypatch.setattr(pulls, "HEARTBEAT_SECONDS", 0.01)
    progress = tmp_path / "progress.json"
    with_file = ThreadsSeen()
    run(with_file, [ref(1)], progress_file=str(progress))
    assert "image_fs_growth" not in json.loads(progress.read_text())
    assert pulls.HEARTBEAT_THREAD in with_file.threads
    # No file: no heartbeat thread either, and none left after a run.
    without = ThreadsSeen()
    run(without, [ref(1)])
    assert pulls.HEARTBEAT_THREAD not in without.threads
    assert pulls.HEARTBEAT_THREAD not in {thread.name for thread in threading.enumerate()}
