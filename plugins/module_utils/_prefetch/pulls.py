# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Prefetch: find what a node already has, then pull the rest through CRI with a bounded worker pool.

Retry policy follows the reference (machine-config-operator): exponential backoff from 1 s, factor 2, capped at
10 s; errors a retry cannot fix fail at once, and "no space left on device" also stops the queue.
"""

from __future__ import annotations

import json
import os
import queue
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple, TypedDict

from ansible_collections.pinned.images.plugins.module_utils._common.errors import AUTH, NO_SPACE, UNKNOWN
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError, CriImage
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import filesystem_stats

__all__ = [
    "FAILED",
    "HEARTBEAT_SECONDS",
    "HEARTBEAT_THREAD",
    "PRESENT",
    "PULLED",
    "SKIPPED",
    "STATUSES",
    "WOULD_PULL",
    "AuthFor",
    "ImageResult",
    "KnownFailure",
    "PACE_STOP",
    "PrefetchClient",
    "PrefetchOptions",
    "PrefetchReport",
    "PullGate",
    "failure_message",
    "find_present",
    "prefetch",
]

PRESENT = "present"
PULLED = "pulled"
FAILED = "failed"
SKIPPED = "skipped"
WOULD_PULL = "would_pull"
STATUSES = (PRESENT, PULLED, FAILED, SKIPPED, WOULD_PULL)

# Seconds between two writes of the progress file while a pull runs (one large image can take minutes).
HEARTBEAT_SECONDS = 2.0
HEARTBEAT_THREAD = "pinned-images-progress"
# One entry of the module's ``images`` result (JSON): image, status, image_id, size, attempts, seconds, error,
# error_kind, started, finished, waited (seconds the pace held the pull back, just before ``started``).
ImageResult = Dict[str, Any]
# (error, error_kind) of an image known to be unpullable.
KnownFailure = Tuple[str, str]
# ``auth_for(ref)``: (CRI AuthConfig fields or None, where they came from, without a secret).
AuthFor = Callable[[ImageRef], Tuple[Optional[Dict[str, str]], str]]


class PrefetchClient(Protocol):
    """The CRI calls of a prefetch: ``CriClient`` (and ``ContainerdClient``) have them."""

    def list_images(self) -> List[CriImage]: ...

    def image_status(self, image: str) -> Optional[CriImage]: ...

    def pull_image(
        self, image: str, auth: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None
    ) -> str: ...


class PullGate(Protocol):
    """What a worker passes before each pull (``_prefetch.pace.Pace``)."""

    def before_pull(self, image: str, notify: Callable[[], None]) -> Tuple[float, Optional[str]]:
        """(seconds waited, None to pull, or why the queue stops); ``notify()`` when it starts holding the pull."""

    def progress(self) -> Dict[str, Any]:
        """Fields for the progress file."""


class PrefetchReport(TypedDict):
    """What ``prefetch`` returns: every image's result, the totals per status and the warnings."""

    images: List[ImageResult]
    totals: Dict[str, int]
    warnings: List[str]


@dataclass(frozen=True)
class PrefetchOptions:
    concurrency: int = 5
    pull_pause: float = 0.0
    retries: int = 5
    retry_delay: float = 1.0
    retry_factor: float = 2.0
    retry_max_delay: float = 10.0
    pull_timeout: float | None = None
    check_mode: bool = False
    progress_file: str | None = None
    # Written to the progress file, so a reader can tell runs apart.
    run_id: str | None = None
    # Named in "no space left on device" errors.
    image_fs: str | None = None

    def backoff(self, failed_attempts: int) -> float:
        """Seconds to wait after ``failed_attempts`` failed pulls of one image."""
        return min(self.retry_delay * self.retry_factor ** (failed_attempts - 1), self.retry_max_delay)


def _lookup_names(ref: ImageRef) -> list[str]:
    if ref.digest:
        return [f"{ref.name}@{ref.digest}"]
    return [f"{ref.name}:{ref.tag or 'latest'}"]


def find_present(client: PrefetchClient, refs: List[ImageRef]) -> Dict[str, CriImage]:
    """Map each image (str) the runtime already has to its CRI image dict.

    One ListImages call answers for the images the runtime lists under the same name; ImageStatus is asked only
    about the rest, since it resolves names exactly as a pull will (an index digest, a mirror).
    """
    listed: Dict[str, CriImage] = {}
    for image in client.list_images():
        for name in image["repo_digests"] + image["repo_tags"]:
            listed[name] = image
    present: Dict[str, CriImage] = {}
    for ref in refs:
        found = next((listed[name] for name in _lookup_names(ref) if name in listed), None)
        if found is None:
            found = client.image_status(str(ref))
        if found is not None:
            present[str(ref)] = found
    return present


def _tally(results: List[ImageResult]) -> Tuple[Dict[str, int], int]:
    """Images per status and bytes pulled; results still in flight (status None) count nowhere."""
    counts = {status: sum(1 for r in results if r["status"] == status) for status in STATUSES}
    return counts, sum(r["size"] or 0 for r in results if r["status"] == PULLED)


def _new_result(image: str) -> ImageResult:
    return dict(
        image=image,
        status=None,
        image_id=None,
        size=None,
        attempts=0,
        seconds=0.0,
        error=None,
        error_kind=None,
        started=None,
        finished=None,
        waited=0.0,
    )


def _free_bytes(path: Optional[str]) -> Optional[int]:
    """The free bytes of the filesystem holding ``path``, as the disk guard reads them (None: no path, or
    unreadable)."""
    if not path:
        return None
    try:
        return filesystem_stats(path)[1]
    except OSError:
        return None


class _Progress:
    """Counts shared by the workers; optionally mirrored to a JSON file that a poller can read.

    CRI's PullImage reports nothing until the image is complete, so while a pull runs the file is rewritten every
    ``HEARTBEAT_SECONDS`` (a thread, between ``start`` and ``stop``): its ``elapsed`` moves, and
    ``image_fs_growth`` gives how much the image filesystem's use grew since the prefetch began (what the runtime
    has written so far, and whatever else wrote there)."""

    def __init__(
        self,
        results: List[ImageResult],
        path: Optional[str],
        run_id: Optional[str] = None,
        gate: Optional[PullGate] = None,
        image_fs: Optional[str] = None,
    ) -> None:
        self.results = results
        self.path = path
        self.run_id = run_id
        self.gate = gate
        self.image_fs = image_fs
        self.lock = threading.Lock()
        self.started = time.time()
        self.error: str | None = None
        self._free_at_start = _free_bytes(image_fs) if path else None
        self._stopped = threading.Event()
        self._beat: Optional[threading.Thread] = None

    def _in_flight(self) -> List[str]:
        return [r["image"] for r in self.results if r["started"] and r["status"] is None]

    def start(self) -> None:
        """Rewrite the file every ``HEARTBEAT_SECONDS`` while a pull runs, until ``stop``."""
        if self.path and self._beat is None:
            self._beat = threading.Thread(target=self._beating, name=HEARTBEAT_THREAD, daemon=True)
            self._beat.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._beat is not None:
            self._beat.join()

    def _beating(self) -> None:
        while not self._stopped.wait(HEARTBEAT_SECONDS):
            if self._in_flight():
                self.update()

    def update(self) -> None:
        if not self.path or self.error:
            return
        # Outside the lock: a slow filesystem must not hold up the workers.
        free = _free_bytes(self.image_fs) if self._free_at_start is not None else None
        with self.lock:
            counts, pulled_bytes = _tally(self.results)
            snapshot: Dict[str, Any] = dict(
                run_id=self.run_id,
                total=len(self.results),
                done=sum(counts.values()),
                counts=counts,
                bytes=pulled_bytes,
                elapsed=round(time.time() - self.started, 3),
                current=self._in_flight(),
            )
            if free is not None and self._free_at_start is not None:
                snapshot["image_fs_growth"] = max(0, self._free_at_start - free)
            if self.gate is not None:
                snapshot["pace"] = self.gate.progress()
            tmp = None
            try:
                fd, tmp = tempfile.mkstemp(prefix=".progress-", dir=os.path.dirname(os.path.abspath(self.path)))
                with os.fdopen(fd, "w") as handle:
                    json.dump(snapshot, handle)
                os.replace(tmp, self.path)
            except OSError as err:
                # Progress is for watching; a full disk or a bad path must not stop the pulls.
                self.error = f"progress file {self.path} not written: {err}"
                if tmp and os.path.exists(tmp):
                    os.unlink(tmp)


def prefetch(
    client: PrefetchClient,
    refs: List[ImageRef],
    auth_for: AuthFor,
    options: PrefetchOptions,
    present: Mapping[str, CriImage],
    failed: Optional[Mapping[str, KnownFailure]] = None,
    sleep: Callable[[float], None] = time.sleep,
    gate: Optional[PullGate] = None,
) -> PrefetchReport:
    """Pull the ``refs`` (already de-duplicated) that are not in ``present`` (from find_present).

    ``failed`` maps images known to be unpullable to (error, error_kind); they are reported, not pulled. ``gate``
    (the pace) is passed before each pull, after the pull pause; it may stop the queue.
    ``auth_for(ref)`` returns (CRI AuthConfig fields or None, a description of where they came from that holds
    no secret). Returns ``dict(images=[...], totals={...})``; the caller adds ``totals['seconds']``.
    """
    failed = failed or {}
    results = [_new_result(str(ref)) for ref in refs]
    # Check mode changes nothing, the progress file included.
    progress = _Progress(
        results, None if options.check_mode else options.progress_file, options.run_id, gate, options.image_fs
    )
    pending: queue.Queue[Tuple[ImageRef, ImageResult]] = queue.Queue()
    for ref, result in zip(refs, results):
        image = present.get(result["image"])
        if image is not None:
            result.update(status=PRESENT, image_id=image["id"], size=image["size"])
        elif result["image"] in failed:
            error, kind = failed[result["image"]]
            result.update(status=FAILED, error=error, error_kind=kind)
        elif options.check_mode:
            result["status"] = WOULD_PULL
        else:
            pending.put((ref, result))
    progress.update()

    stop = threading.Event()
    # Why the queue stopped: the first reason wins (a full disk, or the pace's).
    stop_reasons: List[str] = []

    def worker() -> None:
        pulled_before = False
        while True:
            try:
                ref, result = pending.get_nowait()
            except queue.Empty:
                return
            # Between this worker's pulls only: nothing waits after the last one.
            if pulled_before and options.pull_pause:
                sleep(options.pull_pause)
            if gate is not None and not stop.is_set():
                result["waited"], reason = gate.before_pull(result["image"], progress.update)
                if result["waited"]:
                    # The progress file said the pull was held: no longer.
                    progress.update()
                if reason is not None:
                    stop_reasons.append(PACE_STOP + reason)
                    stop.set()
            if stop.is_set():
                result["status"] = SKIPPED
                result["error"] = "not attempted: " + (stop_reasons[0] if stop_reasons else _NO_SPACE_STOP)
                continue
            try:
                _fetch_one(client, ref, result, auth_for, options, stop, sleep)
            except Exception as err:  # pylint: disable=broad-exception-caught
                # A worker that dies would leave its image uncounted, and the run would look successful.
                result.update(status=FAILED, error=f"unexpected error: {err!r}", error_kind=UNKNOWN)
            progress.update()
            pulled_before = result["attempts"] > 0

    worker_count = max(1, min(options.concurrency, pending.qsize()))
    workers = [threading.Thread(target=worker, daemon=True) for _index in range(worker_count)]
    progress.start()
    try:
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
    finally:
        progress.stop()
    progress.update()

    counts, pulled_bytes = _tally(results)
    warnings: List[str] = [progress.error] if progress.error else []
    totals = dict(requested=len(results), bytes_pulled=pulled_bytes, **counts)
    return PrefetchReport(images=results, totals=totals, warnings=warnings)


_NO_SPACE_STOP = "an earlier pull ran out of disk space"
PACE_STOP = "the pace stopped the prefetch: "


def _listed(items: List[str], limit: int = 5) -> str:
    text = "; ".join(items[:limit])
    return text + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def failure_message(images: List[ImageResult]) -> Optional[str]:
    """The task's error for a report with failed or skipped images (None without): the first failures, then the
    images that were not attempted because the disk filled up, so the user knows a rerun after freeing space pulls
    them, or because the pace stopped the queue."""
    failures = [f"{r['image']}: {r['error']}" for r in images if r["status"] == FAILED]
    skipped = [r["image"] for r in images if r["status"] == SKIPPED]
    paced = [r["error"] for r in images if r["status"] == SKIPPED and PACE_STOP in (r["error"] or "")]
    if paced:
        message = f"{len(failures)} of {len(images)} images failed: " + _listed(failures) + ". " if failures else ""
        reason = paced[0][len("not attempted: " + PACE_STOP) :]
        return message + (
            f"{len(skipped)} of {len(images)} images were not attempted because the pace stopped the prefetch "
            f"(pace_on_max_wait=stop): {reason}; run again when the disk is calmer to pull them: " + _listed(skipped)
        )
    if not failures:
        return None
    message = f"{len(failures)} of {len(images)} images failed: " + _listed(failures)
    if skipped:
        message += (
            f". {len(skipped)} more were not attempted because the disk ran out of space (free space and run "
            "again to pull them): " + _listed(skipped)
        )
    return message


def _fetch_one(
    client: PrefetchClient,
    ref: ImageRef,
    result: ImageResult,
    auth_for: AuthFor,
    options: PrefetchOptions,
    stop: threading.Event,
    sleep: Callable[[float], None],
) -> None:
    image = str(ref)
    auth_source = "no pull attempted"
    result["started"] = time.time()
    try:
        auth, auth_source = auth_for(ref)
        while True:
            result["attempts"] += 1
            try:
                image_id = client.pull_image(image, auth, timeout=options.pull_timeout)
            except CriError as err:
                if err.kind == NO_SPACE:
                    stop.set()
                if not err.retryable or result["attempts"] > options.retries or stop.is_set():
                    raise
                sleep(options.backoff(result["attempts"]))
                continue
            result.update(status=PULLED, image_id=image_id)
            try:
                status = client.image_status(image_id)
                result["size"] = status.get("size") if status else None
            except CriError:
                pass  # the image is on the node; only its size is unknown
            return
    except CriError as err:
        message = str(err)
        if err.kind == AUTH:
            message = f"registry {ref.registry} rejected the pull credentials ({auth_source}): {message}"
        elif err.kind == NO_SPACE and options.image_fs:
            message = f"image filesystem {options.image_fs} is full: {message}"
        if result["attempts"] > 1:
            message += f" (gave up after {result['attempts']} attempts)"
        result.update(status=FAILED, error=message, error_kind=err.kind)
    finally:
        result["finished"] = time.time()
        result["seconds"] = round(result["finished"] - result["started"], 3)
