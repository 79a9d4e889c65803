# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The controller-side logic of the ``pinned.images.node`` role, exposed as filters by ``plugins/filter/node.py``.

The role makes at most four ``pinned.images.prefetch`` calls on a node: the check (check mode, which also says
whether the pins would change), then either the background prefetch (its start and its end, followed by
``prefetch_job``) or one real call that only pins. These functions read their results.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.pinned.images.plugins.module_utils._common.host_root import host_path
from ansible_collections.pinned.images.plugins.module_utils._node_python.paths import DEFAULT_DIR, ENV_DIR
from ansible_collections.pinned.images.plugins.module_utils._prune.record import record_next_to

__all__ = [
    "call_error",
    "call_problems",
    "failure_line",
    "next_step",
    "node_host_path",
    "node_result",
    "pin_option",
    "pin_text",
    "pins_left_to_mco",
    "prefetch_args",
    "prune_blocker",
    "prune_files",
    "python_deps_dir",
    "python_dir_env",
    "result_line",
    "wanted_images",
]

# node_pin (true/false kept for the role's first values) -> the prefetch module's pin option.
_PIN_OPTIONS = {"auto": "auto", "true": "dropin", "false": "none", "label": "label"}
_BAD = ("failed", "skipped")
NO_RESULT = "the prefetch ended without a result"
DEPS, PULL, PIN, NONE = "deps", "pull", "pin", "none"


def wanted_images(images: Sequence[str], sets: Sequence[Mapping[str, Any]]) -> List[str]:
    """``images`` followed by the images of ``sets``, each once, in that order."""
    out: List[str] = []
    seen = set()
    for name in list(images) + [image for image_set in sets for image in image_set.get("images") or []]:
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def pin_option(node_pin: Any) -> str:
    """``auto`` -> ``auto``, ``true`` -> ``dropin``, ``false`` -> ``none``, ``label`` -> ``label`` (booleans and any
    case accepted, as the role's argument spec gives them)."""
    text = str(node_pin).lower()
    if text not in _PIN_OPTIONS:
        raise ValueError(f"node_pin must be one of {', '.join(_PIN_OPTIONS)}, got {node_pin!r}")
    return _PIN_OPTIONS[text]


def next_step(check: Mapping[str, Any], check_mode: bool = False, deps_tried: bool = False) -> str:
    """After the check call: ``deps`` when the node's Python lacks grpcio and protobuf (once: ``deps_tried`` says the
    role already provided them), else outside check mode ``pull`` when it found images to pull and ``pin`` when only
    the pins would change; ``none`` otherwise (also when the check failed: its error is the node's result)."""
    if check.get("node_deps_missing") and not deps_tried:
        return DEPS
    if check_mode or call_error(check):
        return NONE
    if check["totals"].get("would_pull", 0) > 0:
        return PULL
    return PIN if (check.get("pin") or {}).get("changed") else NONE


def _last_run(results: Sequence[Any]) -> Dict[str, Any]:
    """The last result that ran (not skipped, not left undefined)."""
    for result in reversed(results):
        if isinstance(result, Mapping) and result and not result.get("skipped"):
            return dict(result)
    return {}


def call_error(result: Mapping[str, Any]) -> str:
    """The failure of one prefetch call, empty when it succeeded: its message when it failed as a whole
    (unreachable, refused, locked, crashed: no ``totals``) or when the pin failed. The role registers its calls with
    ``failed_when: false``, which clears ``failed``: the module's own failure is then told by what only a failed run
    carries, ``pin.error`` or ``problems`` (those of failed images alone are the images' errors, not the call's)."""
    if not result:
        return NO_RESULT
    if result.get("failed") or result.get("unreachable") or "totals" not in result:
        return str(result.get("msg") or NO_RESULT)
    pin_error = (result.get("pin") or {}).get("error")
    if pin_error:
        return str(result.get("msg") or f"the pin failed: {pin_error}")
    images_failed = any(entry.get("status") in _BAD for entry in result.get("images") or [])
    if result.get("problems") and not images_failed:
        return str(result.get("msg") or "; ".join(str(problem) for problem in result["problems"]))
    return ""


def call_problems(result: Mapping[str, Any]) -> List[str]:
    """The problems behind a failed call (the module's own list, else its message); empty when it succeeded."""
    error = call_error(result)
    if not error:
        return []
    problems = result.get("problems") if result else None
    return [str(problem) for problem in problems] if isinstance(problems, list) and problems else [error]


def _earlier_present(results: Sequence[Any]) -> int:
    """The ``present`` count of the last call that counted (0 when none did)."""
    for result in reversed(results):
        if isinstance(result, Mapping) and isinstance(result.get("totals"), Mapping):
            return int(result["totals"].get("present") or 0)
    return 0


def _span(values: Sequence[Any], pick: Any) -> Optional[float]:
    """``pick`` (min or max) of the numbers among ``values``; None when there is none."""
    numbers = [float(value) for value in values if isinstance(value, (int, float)) and not isinstance(value, bool)]
    return pick(numbers) if numbers else None


def node_result(
    results: Sequence[Any],
    node: str,
    control_plane: bool,
    check_mode: bool,
    error: str,
    images: Sequence[str],
    sets: Sequence[Any],
    started: float,
    finished: Optional[float] = None,
    prune: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The role's ``node_result`` from its prefetch calls' ``results`` (in the order they ran; skipped or empty
    ones are passed over), ``error`` (a failed task of the role, else empty) and the node's wanted ``images`` and
    ``sets``. ``finished`` defaults to now. ``prune``: the prune's result when it ran (``pruned``, the images it
    removed or would remove, and their ``freed_bytes``; None and 0 when it did not run)."""
    prefetch = _last_run(results)
    node_error = error or call_error(prefetch)
    totals = dict(
        requested=len(images), present=0, pulled=0, failed=0, skipped=0, would_pull=0, bytes_pulled=0, seconds=0.0
    )
    totals.update(prefetch.get("totals") or {})
    if "totals" not in prefetch:
        # A call that failed as a whole counted nothing: the images an earlier call (the check) found are still there.
        totals["present"] = _earlier_present(results)
    entries = list(prefetch.get("images") or [])
    bad = [entry for entry in entries if entry.get("status") in _BAD]
    message = node_error
    if not message and bad:
        message = "%d of %d images failed: %s (%s)" % (
            totals["failed"] + totals["skipped"],
            totals["requested"],
            ", ".join(e["image"] for e in bad),
            bad[0].get("error"),
        )
    pin = prefetch.get("pin") or {}
    ran = bool(pin.get("ran")) and not pin.get("error")
    pin_ran = bool(pin.get("ran"))
    # What CRI reports after the pin, where the node said; else the images the pin step wrote.
    reported = pin.get("cri_pinned") or {}
    pinned = sum(1 for value in reported.values() if value) if reported else len(pin.get("images") or [])
    failed = bool(message) or totals["failed"] + totals["skipped"] > 0
    return {
        "node": node,
        "control_plane": bool(control_plane),
        "runtime": (prefetch.get("runtime") or {}).get("runtime_name", ""),
        "runtime_version": (prefetch.get("runtime") or {}).get("runtime_version", ""),
        "status": "failed" if failed else ("check" if check_mode else "ok"),
        "error": message,
        "node_error": node_error,
        # What the failed call (or task) gave as the causes, in full: the error may be their summary.
        "problems": [error] if error else call_problems(prefetch),
        "requested": totals["requested"],
        "present": totals["present"],
        "pulled": totals["pulled"],
        "failed": totals["failed"] + totals["skipped"],
        "would_pull": totals["would_pull"],
        "bytes": totals["bytes_pulled"],
        "seconds": totals["seconds"],
        "started": float(started),
        "finished": time.time() if finished is None else finished,
        # The timeline of the report page: the pulls (first start to last end) and the pin step, when they ran.
        "pull_started": _span([entry.get("started") for entry in entries], min),
        "pull_finished": _span([entry.get("finished") for entry in entries], max),
        "pin_started": _span([pin.get("started")], min) if pin_ran else None,
        "pin_finished": _span([pin.get("finished")], max) if pin_ran else None,
        "pace": _pace_summary(prefetch.get("pace"), entries),
        "changed": totals["pulled"] > 0 or bool(pin.get("changed")) or bool((prune or {}).get("changed")),
        "pinned": pinned if ran else None,
        "pin_method": pin.get("method") or "none",
        "pin_reason": pin.get("reason"),
        "dropin": pin.get("path") if ran else None,
        # The MCO manages the node: node_pin auto left the drop-in to it (or an explicit dropin warned).
        "mco_managed": pin.get("mco_managed"),
        "sets": list(sets),
        "images": entries,
        **_prune_fields(prune),
    }


def _pace_summary(pace: Any, entries: Sequence[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """What the report keeps of the prefetch's pace (its samples stay in the module's result): the bound, the
    run's latency percentiles, the time waited, how many images were held and how many waited the longest, and
    each wait (``[start, end]``, wall-clock seconds: it ends when its image's pull starts) for the page; None when
    the node did not pace."""
    if not isinstance(pace, Mapping):
        return None
    latency = pace.get("latency_ms") or {}
    waits = []
    for entry in entries:
        waited, started = _span([entry.get("waited")], max), _span([entry.get("started")], max)
        if waited and started is not None:
            waits.append([round(started - waited, 3), started])
    return {
        "path": pace.get("path"),
        "bound_ms": pace.get("bound_ms"),
        "percentile": pace.get("percentile"),
        "p50_ms": latency.get("p50"),
        "p99_ms": latency.get("p99"),
        "max_ms": latency.get("max"),
        "samples": latency.get("count", 0),
        "waited_seconds": pace.get("waited_seconds", 0.0),
        "held": pace.get("held", 0),
        "timed_out": len(pace.get("timed_out") or []),
        "waits": waits,
    }


def _prune_fields(prune: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    ran = bool(prune) and "removed" in (prune or {})
    done: Mapping[str, Any] = prune if ran and prune is not None else {}
    return {
        "pruned": len(done.get("removed") or []) if ran else None,
        "prune_kept": len(done.get("kept") or []) if ran else None,
        "freed_bytes": int(done.get("freed_bytes") or 0),
        "changed_by_prune": bool(done.get("changed")),
        "prune_skipped": str((prune or {}).get("prune_skipped") or ""),
    }


def prune_blocker(results: Sequence[Any], check_mode: bool = False, wanted: Optional[Sequence[Any]] = None) -> str:
    """Empty when the prefetch completed: every call ran, no image failed, the pin step ran or had nothing to do.
    Otherwise the prune would unpin and remove the old images the incomplete prefetch left pinned on purpose. A node
    that wants no image (``wanted`` empty) is not pruned either: node_allow_empty allows emptying its pins, not
    removing every image the record names."""
    if wanted is not None and not wanted:
        return (
            "the node wants no image: the prune would remove every image the record names; "
            "pinned.images.prune with allow_empty=true does that"
        )
    prefetch = _last_run(results)
    error = call_error(prefetch)
    if error:
        return f"the prefetch did not complete ({error})"
    totals = prefetch.get("totals") or {}
    failed = int(totals.get("failed") or 0) + int(totals.get("skipped") or 0)
    failed = max(failed, sum(1 for entry in prefetch.get("images") or [] if entry.get("status") in _BAD))
    if failed:
        return f"the prefetch did not complete ({failed} images failed)"
    pin = prefetch.get("pin") or {}
    if pin.get("error"):
        return f"the prefetch did not complete (the pin failed: {pin['error']})"
    # Only the check ran (check mode) and it says the pins would change: a real run must pin before it prunes.
    only_the_check = not _last_run(results[1:])
    if not check_mode and only_the_check and pin.get("changed"):
        return "the prefetch did not complete (the pins were not updated)"
    return ""


def prune_files(record_file: str, lock_file: str, progress_file: str) -> Dict[str, Optional[str]]:
    """The prefetch's and the prune's files: the lock and the record the role's variables name (None: the modules'
    default, in the state directory), and the record the role kept before that directory (``former_record_file``,
    next to its lock: ``lock_file``, else ``progress_file`` + ``.lock``), which the modules move once."""
    former_lock = lock_file or (progress_file + ".lock" if progress_file else None)
    return {
        "record_file": record_file or None,
        "lock_file": lock_file or None,
        "former_record_file": None if record_file else record_next_to(former_lock),
    }


def pins_left_to_mco(result: Mapping[str, Any]) -> bool:
    """The node did not pin because the MCO manages it (not an explicit pin that failed or did not run)."""
    return result.get("pinned") is None and bool(result.get("mco_managed")) and result.get("pin_method") == "none"


def pin_text(result: Mapping[str, Any]) -> str:
    """``<method> <count>`` when the node pinned (the count CRI reports), ``not pinned`` where the runtime cannot
    pin (``pin_reason``), ``mco`` when the pins are left to the MCO, else ``-``."""
    if result.get("pin_reason"):
        return "not pinned"
    if result.get("pinned") is not None:
        return f"{result.get('pin_method')} {result['pinned']}"
    return "mco" if pins_left_to_mco(result) else "-"


def result_line(result: Mapping[str, Any]) -> str:
    """``ok: 2 pulled, 1 present, 0 failed of 3 images (12.0 MiB) in 4.2 s; 3 pinned in <path>``."""
    line = "%s: %d pulled, %d present, %d failed of %d images (%.1f MiB) in %.1f s" % (
        result["status"],
        result["pulled"],
        result["present"],
        result["failed"],
        result["requested"],
        result["bytes"] / 1048576,
        result["seconds"],
    )
    if result["pinned"] is not None:
        where = f"in {result['dropin']}" if result["dropin"] else "by the containerd image label"
        line += f"; {result['pinned']} pinned {where}"
    elif pins_left_to_mco(result):
        line += "; pins left to the machine-config-operator (PinnedImageSets or MachineConfigs)"
    if result.get("pruned") is not None:
        verb = "would prune" if result["status"] == "check" else "pruned"
        line += "; %s %d images (%.1f MiB freed), kept %d" % (
            verb,
            result["pruned"],
            result["freed_bytes"] / 1048576,
            result["prune_kept"],
        )
    if result.get("prune_skipped"):
        line += f"; prune skipped: {result['prune_skipped']}"
    if result["error"]:
        line += f"; {result['error']}"
    return line


def python_dir_env(path: str) -> Dict[str, str]:
    """``{PINNED_IMAGES_PYTHON_DIR: path}``, or {} when ``path`` is the directory the node modules use without it."""
    return {} if path.rstrip("/") == DEFAULT_DIR else {ENV_DIR: path}


def prefetch_args(options: Mapping[str, Any]) -> Dict[str, Any]:
    """``options`` without those that are unset (None or an empty string): the module's default applies to them."""
    return {name: value for name, value in options.items() if value is not None and value != ""}


def node_host_path(path: str, host_root: Optional[str]) -> str:
    """A node path as the role's own tasks (copy, cat, rm) see it from a pod with the host's root at ``host_root``:
    the one mapping the node modules apply to their options, with the root normalised as they take it (``/host/``
    as ``/host``; ``/`` or empty: none)."""
    root = os.path.normpath(host_root) if host_root else None
    return host_path(None if root == "/" else root, path)


def python_deps_dir(host_root: Optional[str]) -> str:
    """The node role's default private Python directory: the node's own, under ``host_root`` in pod mode, so that
    it stays on the host and the next run's new pod finds it (one copy per interpreter tag, so the pod image's and
    the host's Python each have their own)."""
    return node_host_path(DEFAULT_DIR, host_root)


def failure_line(failed: Mapping[str, Any]) -> str:
    """The one line of a failed task: an argument check gives each invalid variable and what is allowed (its result
    also holds the whole spec, which buried them), any other task its message."""
    errors = failed.get("argument_errors")
    if errors:
        return "invalid input of the pinned.images.node role: " + "; ".join(str(error) for error in errors)
    return " ".join(str(failed.get("msg") or "the node role failed").split())
