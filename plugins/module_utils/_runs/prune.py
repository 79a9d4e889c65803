# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The prune module's whole run (node side, Python 3.8+): take the node lock, read the record, decide which of the
recorded images no wanted image is, unpin those the collection pinned, decide again with what CRI then reports,
remove the rest through CRI RemoveImage and rewrite the record.

``PruneRequest.from_params(params, check_mode)`` checks every option before the runtime is contacted;
``run_prune(request)`` does the rest (``_prune/plan`` decides). The first runtime error other than "not found"
stops the removals; the failure's details hold what was removed before it, and the record forgets those.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple, cast

from ansible_collections.pinned.images.plugins.module_utils._common.errors import NOT_FOUND, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.host_root import chrooted
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import require_node_deps
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    DropinSettings,
    NotReportedError,
    RunCommand,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.method import (
    METHOD_DROPIN,
    METHOD_LABEL,
    METHOD_NONE,
    PIN_AUTO,
    mco_pin_method,
    pin_method,
)
from ansible_collections.pinned.images.plugins.module_utils._prune.pins import Pins
from ansible_collections.pinned.images.plugins.module_utils._prune.plan import (
    IN_USE,
    KEEP,
    REMOVE,
    Candidate,
    Decision,
    PruneInputError,
    bare_id,
    decide,
    group_candidates,
    parse_duration,
    totals,
    users,
    validate_keep,
)
from ansible_collections.pinned.images.plugins.module_utils._prune.record import (
    forgotten,
    read_record,
    write_record,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    NodeStateFiles,
    Problems,
    RuntimeOptions,
    containerd_client,
    cri_client,
    dropin_settings,
    node_params,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["PruneRequest", "PruneStopped", "run", "run_prune"]

# The prune's own node paths, under host_root (with the shared ones, ``node_params``).
_NODE_PATHS = ("record_file", "lock_file", "mco_dir", "dropin_path", "crio_pid_file")


@dataclass(frozen=True)
class PruneRequest:
    """Every option of one prune, checked."""

    wanted: Tuple[str, ...]
    keep: Tuple[str, ...]
    min_age: float
    # The prefetch's lock and record (given, or in the state directory).
    state: NodeStateFiles
    run_id: Optional[str]
    pin: str
    mco_dir: str
    dropin: DropinSettings
    runtime: RuntimeOptions
    check_mode: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any], check_mode: bool) -> "PruneRequest":
        """One CollectionError names every bad option. Node paths (``_NODE_PATHS``) are taken under ``host_root``."""
        problems = Problems()
        mapped = problems.attempt(lambda: node_params(params, _NODE_PATHS))
        problems.raise_any()
        params = cast(Dict[str, Any], mapped)
        state = NodeStateFiles.from_params(params)
        wanted: List[str] = []
        for index, image in enumerate(params["images"] or []):
            try:
                wanted.append(str(parse_image_ref(image, require_digest=False)))
            except ImageReferenceError as err:
                problems.add(f"images[{index}]: {err}")
        if not params["images"] and not params["allow_empty"]:
            problems.add(
                "images is empty: the prune would remove every image the record "
                f"{state.record_file} names; nothing was removed. Give the node's wanted images, or "
                "allow_empty=true to prune every recorded image"
            )
        keep = problems.attempt(lambda: validate_keep(params["keep"]))
        min_age = problems.attempt(lambda: parse_duration(params["min_age"]))
        problems.above_zero(params, "settle_timeout")
        if (
            params["pin"] in (PIN_AUTO, METHOD_DROPIN)
            and params["crio_reload"] == "signal"
            and not params["crio_pid_file"]
        ):
            problems.add("crio_reload=signal needs crio_pid_file")
        problems.raise_any()
        return cls(
            wanted=tuple(sorted(set(wanted))),
            keep=tuple(keep or ()),
            min_age=float(min_age or 0.0),
            state=state,
            run_id=params["run_id"],
            pin=params["pin"],
            mco_dir=params["mco_dir"],
            dropin=dropin_settings(params),
            runtime=RuntimeOptions.from_params(params),
            check_mode=check_mode,
        )


def _ages(candidates: List[Candidate], entries: Mapping[str, Mapping[str, Any]], now: float) -> Dict[str, float]:
    """Seconds since the collection first recorded each image (CRI tells no pull time)."""
    ages: Dict[str, float] = {}
    for candidate in candidates:
        seen = [float(entries[name].get("first_seen") or now) for name in candidate["names"]]
        ages[candidate["id"]] = now - min(seen)
    return ages


def _recorded_image(client: Any, name: str, entry: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The image the collection recorded under ``name``: when the name now points at another image (a tag that
    moved), the recorded image by its id, or None (gone: the name no longer names anything the collection brought)."""
    image: Optional[Mapping[str, Any]] = client.image_status(name)
    recorded_id = str(entry.get("image_id") or "")
    if image is None or not recorded_id or bare_id(image["id"]) == bare_id(recorded_id):
        return image
    by_id: Optional[Mapping[str, Any]] = client.image_status(recorded_id)
    return by_id


def _candidates(
    client: Any, request: PruneRequest, entries: Mapping[str, Any]
) -> Tuple[List[Candidate], Set[str], List[str]]:
    """(the recorded, unwanted images on the node, the image ids of the wanted images, recorded names gone)."""
    wanted = set(request.wanted)
    wanted_ids = set()
    for name in request.wanted:
        image = client.image_status(name)
        if image is not None:
            wanted_ids.add(bare_id(image["id"]))
    names = [name for name in sorted(entries) if name not in wanted]
    found = {name: _recorded_image(client, name, entries[name]) for name in names}
    gone = sorted(name for name, image in found.items() if image is None)
    unsure = [name for name in names if "@" not in name and not entries[name].get("image_id")]
    return group_candidates(found, unsure), wanted_ids, gone


def _sandbox_ids(client: Any, method: str, keep: Tuple[str, ...]) -> Set[str]:
    """The image id of the runtime's pause image (``sandboxImage`` of the CRI config in ``Status(verbose)``:
    containerd 1.6/1.7, CRI-O). Where the runtime names none and reports no pins either, PruneInputError unless
    ``keep`` is given (the caller names the pause image there)."""
    try:
        config = json.loads(client.status_info().get("config") or "{}")
    except ValueError:
        config = {}
    name = config.get("sandboxImage") if isinstance(config, dict) else None
    if isinstance(name, str) and name:
        image = client.image_status(name)
        return {bare_id(image["id"])} if image is not None else set()
    if method == METHOD_NONE and not keep:
        raise PruneInputError(
            "the runtime names no pause image (sandboxImage) in its CRI Status and reports no pins, so the prune "
            "cannot tell which image new pod sandboxes need; nothing was removed. Name the pause image in keep"
        )
    return set()


def _diff(decisions: List[Decision], removed: Set[str]) -> Dict[str, str]:
    before = sorted(d["image"] for d in decisions)
    after = sorted(d["image"] for d in decisions if d["id"] not in removed)
    header = "recorded images no longer wanted, on the node"
    return dict(
        before_header=header,
        before="".join(f"{name}\n" for name in before),
        after_header=header,
        after="".join(f"{name}\n" for name in after),
    )


class PruneStopped(CollectionError):
    """A runtime error stopped the removals; the details hold the result until then."""

    def __init__(self, message: str, result: Mapping[str, Any]) -> None:
        super().__init__(message, details=dict(result))


def _decide(
    request: PruneRequest,
    candidates: List[Candidate],
    wanted_ids: Set[str],
    containers: List[Any],
    ages: Dict[str, float],
    others: Set[str],
    sandbox_ids: Set[str],
) -> List[Decision]:
    return decide(
        candidates,
        wanted_ids,
        containers,
        request.keep,
        request.min_age,
        ages,
        others,
        request.wanted,
        sandbox_ids,
    )


def run_prune(
    request: PruneRequest,
    diff: bool = False,
    client_factory: Optional[Callable[[Any], Any]] = None,
    run_command: Optional[RunCommand] = None,
    now: Optional[Callable[[], float]] = None,
) -> Tuple[Dict[str, Any], List[str]]:
    """(the module's result, warnings); raises CollectionError (PruneStopped after a removal error, with the result so far)."""
    if client_factory is None:
        client_factory = containerd_client if request.pin in (PIN_AUTO, METHOD_LABEL) else cri_client
    clock = now or time.time
    request.state.prepare(request.check_mode)
    lock = None if request.check_mode else NodeLock(request.state.lock_file, request.run_id).acquire()
    try:
        entries = read_record(request.state.record_to_read(request.check_mode))
        with client_factory(request.runtime) as client:
            runtime = dict(client.version(), endpoint=client.endpoint)
            method, _sign, warnings = mco_pin_method(request.pin, pin_method(request.pin, runtime), request.mco_dir)
            candidates, wanted_ids, gone = _candidates(client, request, entries)
            sandbox_ids = _sandbox_ids(client, method, request.keep) if candidates else set()
            ages = _ages(candidates, entries, clock())
            pins = Pins(client, method, request.dropin, run_command)
            pins.wanted = request.wanted
            others = {c["id"] for c in candidates if pins.pinned_by_others(c, c["pinned"])}
            decisions = _decide(request, candidates, wanted_ids, client.list_containers(), ages, others, sandbox_ids)
            unpin: Dict[str, Any] = dict(changed=False, unpinned=[], diff=None)
            removed: List[Decision] = []
            if not request.check_mode:
                leaving = [
                    c for c in candidates if any(d["id"] == c["id"] and d["action"] == REMOVE for d in decisions)
                ]
                try:
                    unpin = pins.unpin(leaving)
                except NotReportedError as err:
                    # The drop-in is rewritten and CRI-O reloaded: say so.
                    unpinned = sorted({e for c in leaving for e in pins.own_entries(c)})
                    partial = dict(changed=True, pin=dict(method=method, changed=True, unpinned=unpinned))
                    raise PruneStopped(f"prune stopped after the unpin: {err.message}", partial) from err
                try:
                    # What CRI reports once the collection's pins are gone, and the containers right before removal.
                    vanished = set()
                    for candidate in leaving:
                        status = client.image_status(candidate["id"])
                        if status is None:
                            vanished.add(candidate["id"])
                            gone.extend(candidate["names"])
                        elif status.get("pinned"):
                            others.add(candidate["id"])
                    present = [c for c in candidates if c["id"] not in vanished]
                    containers = client.list_containers()
                    decisions = _decide(request, present, wanted_ids, containers, ages, others, sandbox_ids)
                except CollectionError as err:
                    partial = _result(request, decisions, [], gone, runtime, unpin, method)
                    raise PruneStopped(f"prune stopped after the unpin: {err.message}", partial) from err
                by_id = {c["id"]: c for c in present}
                removed = _remove(client, decisions, gone, entries, request, runtime, unpin, method, by_id)
            else:
                removed = [d for d in decisions if d["action"] == REMOVE]
        result = _result(request, decisions, removed, gone, runtime, unpin, method)
        if not request.check_mode:
            # Under the lock: a prefetch that starts next adds to this record, not to the one read before.
            remaining = _forget(entries, removed, gone)
            # Nothing forgotten: no record is written (none may exist yet, nor its directory).
            result["record_changed"] = remaining != entries and write_record(request.state.record_file, remaining)
    finally:
        if lock is not None:
            lock.release()
    if diff:
        result["diff"] = _diff(decisions, {d["id"] for d in removed})
        if unpin.get("diff"):
            result["diff"] = [result["diff"], unpin["diff"]]
    return result, warnings


def _forget(entries: Mapping[str, Any], removed: List[Decision], gone: List[str]) -> Dict[str, Any]:
    return forgotten(entries, [name for d in removed for name in d["names"]] + gone)


def _result(
    request: PruneRequest,
    decisions: List[Decision],
    removed: List[Decision],
    gone: List[str],
    runtime: Mapping[str, Any],
    unpin: Mapping[str, Any],
    method: str,
) -> Dict[str, Any]:
    removed_ids = {d["id"] for d in removed}
    kept = [d for d in decisions if d["action"] != REMOVE]
    done = [d for d in decisions if d["id"] in removed_ids]
    counts = totals(done + kept)
    return dict(
        changed=bool(done) or bool(unpin.get("changed")),
        images=decisions,
        removed=sorted(d["image"] for d in done),
        kept=sorted(d["image"] for d in kept),
        gone=sorted(set(gone)),
        totals=counts,
        freed_bytes=counts["freed_bytes"],
        record_file=request.state.record_file,
        runtime=dict(runtime),
        pin=dict(method=method, changed=bool(unpin.get("changed")), unpinned=list(unpin.get("unpinned", []))),
    )


def _remove(
    client: Any,
    decisions: List[Decision],
    gone: List[str],
    entries: Mapping[str, Any],
    request: PruneRequest,
    runtime: Mapping[str, Any],
    unpin: Mapping[str, Any],
    method: str,
    candidates: Mapping[str, Candidate],
) -> List[Decision]:
    """RemoveImage each image to remove; "not found" means someone removed it first. Any other error stops: the
    record forgets what was removed, and PruneStopped carries the result so far. The containers are listed again
    right before each removal (containerd removes an image in use): one that uses the image now keeps it."""
    removed: List[Decision] = []
    for decision in decisions:
        if decision["action"] != REMOVE:
            continue
        try:
            using = users(candidates[decision["id"]], client.list_containers())
            if using:
                decision["action"], decision["reason"] = KEEP, IN_USE
                decision["detail"] = "used by container " + ", ".join(using)
                continue
            client.remove_image(decision["id"])
        except CriError as err:
            if err.kind == NOT_FOUND:
                gone.extend(decision["names"])
                continue
            message = f"prune stopped at {decision['image']}: {err.message}"
            try:
                write_record(request.state.record_file, _forget(entries, removed, gone))
            except CollectionError as record_err:
                message += f"; the record was not updated ({record_err.message})"
            partial = _result(request, decisions, removed, gone, runtime, unpin, method)
            raise PruneStopped(message, partial) from err
        removed.append(decision)
    return removed


def run(invocation: Invocation) -> Outcome:
    """The module's run."""
    require_node_deps()
    request = PruneRequest.from_params(invocation.params, invocation.check_mode)
    try:
        # systemctl of the host's own systemd, from a pod.
        run_command = chrooted(request.runtime.host_root, invocation.run_command)
        result, warnings = run_prune(request, diff=invocation.diff, run_command=run_command)
    except CollectionError as error:
        return Outcome(failure=error)
    return Outcome(result, warnings)
