# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Per-node PinnedImageSet status in the shape of MachineConfigNode ``status.pinnedImageSets``.

The status is a JSON document kept in one Node annotation::

    {"pinnedImageSets": [{"name", "desiredGeneration", "currentGeneration",
                          "lastFailedGeneration", "lastFailedGenerationError"}, ...],
     "conditions": [{"type": "PinnedImageSetsProgressing", ...}, {"type": "PinnedImageSetsDegraded", ...}],
     "imageListHashes": {"<set>": "sha256:<hex>"}}

Rules (the machine-config-operator's, plus what its reviewers asked for):

* ``desiredGeneration`` is the set's ``metadata.generation`` when it is known (a set read from the cluster);
  otherwise a counter that goes up by one whenever the set's image list changes (``imageListHashes``).
  Generations never go down.
* A run starting on a node marks the sets that have work (desired generation not yet current, or a failed
  generation being retried) as in progress: ``PinnedImageSetsProgressing`` True, ``PinnedImageSetsDegraded``
  False, and the failure record of the generation being retried is cleared. An in-progress prefetch never
  reads as an error.
* When the run is done, a set whose images are all on the node becomes current (``currentGeneration`` =
  ``desiredGeneration``; a kept older failure record gets an empty error, as the API documents); a set with a
  missing image records ``lastFailedGeneration`` and ``lastFailedGenerationError`` (at most 32768 characters).
* ``lastTransitionTime`` changes only when a condition's status changes, so an unchanged result writes
  nothing.

``write_node_status`` writes one Node's status with a merge patch conditional on the Node's ``resourceVersion`` (a
concurrent writer makes it read again); the pinned_image_status module's run (``_runs/pinned_image_status``) reads
the Nodes and calls it for each.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypedDict

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import (
    K8sClient,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import PRESENT, PULLED
from ansible_collections.pinned.images.plugins.module_utils._sets.model import API_VERSION, PINNED_IMAGE_SET_KIND

__all__ = [
    "DEFAULT_ANNOTATION",
    "DEGRADED_CONDITION",
    "MAX_ANNOTATION_SIZE",
    "MAX_ERROR_LENGTH",
    "MAX_MESSAGE_LENGTH",
    "PROGRESSING_CONDITION",
    "STATES",
    "STATE_DONE",
    "STATE_PROGRESSING",
    "SUMMARY_CURRENT",
    "SUMMARY_DEGRADED",
    "SUMMARY_PROGRESSING",
    "SUMMARY_UNKNOWN",
    "WRITE_ATTEMPTS",
    "ClusterGenerations",
    "Failures",
    "LiveNode",
    "NodeParams",
    "Status",
    "StatusError",
    "cluster_generations",
    "desired_generation",
    "image_list_hash",
    "live_node",
    "parse_status",
    "read_status",
    "render_status",
    "set_failures",
    "summarise",
    "update_status",
    "write_node_status",
]

DEFAULT_ANNOTATION = "pinned.images/pinned-image-sets"
PROGRESSING_CONDITION = "PinnedImageSetsProgressing"
DEGRADED_CONDITION = "PinnedImageSetsDegraded"
MAX_ERROR_LENGTH = 32768
MAX_MESSAGE_LENGTH = 1024
# The API server caps all annotations of an object at 256 KiB together; a longer value is not ours.
MAX_ANNOTATION_SIZE = 256 * 1024

STATE_PROGRESSING = "progressing"
STATE_DONE = "done"
STATES = (STATE_PROGRESSING, STATE_DONE)
# The one word summarise() gives a status.
SUMMARY_PROGRESSING = "progressing"
SUMMARY_DEGRADED = "degraded"
SUMMARY_CURRENT = "current"
SUMMARY_UNKNOWN = "unknown"

# A status document (JSON: what the annotation holds).
Status = Dict[str, Any]
# {set name: its error, or None when it is current}.
Failures = Dict[str, Optional[str]]
# {set name: (metadata.generation, image_list_hash)} of the cluster's PinnedImageSets.
ClusterGenerations = Dict[str, Tuple[int, str]]

# Prefetch statuses that leave an image on the node.
_GOOD_STATUSES = frozenset((PRESENT, PULLED))


class StatusError(CollectionError):
    """Input that cannot be turned into a status, or a status that could not be written."""


def image_list_hash(images: Optional[Iterable[str]]) -> str:
    """A stable fingerprint of a set's image list (order and duplicates do not matter)."""
    digest = hashlib.sha256("\n".join(sorted(set(images or []))).encode("utf-8")).hexdigest()
    return "sha256:" + digest


def _normalise(image: str) -> str:
    try:
        return str(parse_image_ref(image, require_digest=False))
    except ImageReferenceError:
        return image


def _truncate(text: str, limit: int) -> str:
    text = str(text or "")
    if len(text) <= limit:
        return text
    suffix = "... (truncated)"
    return text[: limit - len(suffix)] + suffix


def read_status(value: Optional[str]) -> Tuple[Status, Optional[str]]:
    """(status dict, why the value was unreadable or None): an unreadable or too big value counts as no status,
    and the reason lets the caller warn that the generation counters start again."""
    if not value:
        return {}, None
    if len(value) > MAX_ANNOTATION_SIZE:
        return {}, f"the status annotation is bigger than {MAX_ANNOTATION_SIZE} bytes"
    try:
        status = json.loads(value)
    except (TypeError, ValueError, RecursionError):
        return {}, "the status annotation is not JSON"
    if not isinstance(status, dict):
        return {}, "the status annotation is not a JSON object"
    items = [i for i in status.get("pinnedImageSets") or [] if isinstance(i, dict) and isinstance(i.get("name"), str)]
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type")]
    hashes = status.get("imageListHashes")
    hashes = hashes if isinstance(hashes, dict) else {}
    return {"pinnedImageSets": items, "conditions": conditions, "imageListHashes": dict(hashes)}, None


def parse_status(value: Optional[str]) -> Status:
    """The annotation value as a status dict; anything unreadable or too big counts as no status."""
    return read_status(value)[0]


def render_status(status: Status) -> str:
    """The annotation value: compact, sorted keys, so equal statuses give equal bytes."""
    return json.dumps(status, sort_keys=True, separators=(",", ":"))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def desired_generation(
    previous_item: Optional[Mapping[str, Any]],
    previous_hash: Optional[str],
    images: Iterable[str],
    cluster_generation: Optional[int] = None,
) -> int:
    """The generation the node should reach for a set; never lower than the one recorded before."""
    base = _int((previous_item or {}).get("desiredGeneration"))
    same = base > 0 and previous_hash == image_list_hash(images)
    candidate = base if same else base + 1
    return max(candidate, _int(cluster_generation))


def _has_work(item: Mapping[str, Any]) -> bool:
    desired = _int(item.get("desiredGeneration"))
    current = _int(item.get("currentGeneration"))
    failed = _int(item.get("lastFailedGeneration"))
    return desired > current or bool(failed and failed >= desired)


def set_failures(
    sets: Sequence[Mapping[str, Any]], images: Optional[Sequence[Mapping[str, Any]]], node_error: Optional[str]
) -> Failures:
    """``{set name: error or None}``: a set fails when the node failed or one of its images is not there."""
    if node_error:
        return {s["name"]: str(node_error) for s in sets}
    bad = {}
    for result in images or []:
        status = result.get("status")
        if status in _GOOD_STATUSES:
            continue
        image = result.get("image") or ""
        reason = result.get("error") or status or "not on the node"
        bad[_normalise(image)] = f"{image}: {reason}"
    failures = {}
    matched = False
    for image_set in sets:
        errors = [bad[n] for n in (_normalise(i) for i in image_set.get("images") or []) if n in bad]
        matched = matched or bool(errors)
        failures[image_set["name"]] = "; ".join(errors) if errors else None
    if bad and not matched:
        # A failure that no set claims (an image named differently): no set can count as done.
        message = "; ".join(sorted(bad.values()))
        failures = {name: message for name in failures}
    return failures


def _condition(
    previous: Optional[Mapping[str, Any]], kind: str, status: bool, reason: str, message: str, now: str
) -> Dict[str, str]:
    value = "True" if status else "False"
    condition = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": _truncate(message, MAX_MESSAGE_LENGTH),
        "lastTransitionTime": now,
    }
    if previous and previous.get("status") == value and previous.get("lastTransitionTime"):
        condition["lastTransitionTime"] = previous["lastTransitionTime"]
    return condition


def update_status(
    previous: Status,
    sets: Sequence[Mapping[str, Any]],
    state: str,
    now: str,
    failures: Optional[Failures] = None,
    cluster_generations: Optional[ClusterGenerations] = None,
    node_error: Optional[str] = None,
) -> Status:
    """The new status of a node.

    ``sets``: ``[{"name", "images", "generation" (optional)}]``, every set the node has now (others are dropped).
    ``state``: ``progressing`` when a run starts, ``done`` when it ended; ``failures`` (``done`` only) maps set
    names to an error or None. ``cluster_generations`` maps set names to ``(generation, image hash)`` of the
    sets the cluster has; a generation counts only when the image list is the same. ``node_error`` (``done`` only)
    makes the node degraded even when it has no set (for example when its pools could not be worked out).
    """
    if state not in STATES:
        raise StatusError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    previous = parse_status(render_status(previous)) if previous else {}
    old_items = {i["name"]: i for i in previous.get("pinnedImageSets", [])}
    old_hashes = previous.get("imageListHashes", {})
    old_conditions = {c["type"]: c for c in previous.get("conditions", [])}
    cluster_generations = cluster_generations or {}
    failures = failures or {}

    items, hashes, working, failed = [], {}, [], []
    names = set()
    for image_set in sets:
        name = image_set.get("name")
        if not isinstance(name, str) or not name:
            raise StatusError(f"every set needs a name, got {image_set!r}")
        if name in names:
            raise StatusError(f"set {name!r} is listed twice")
        names.add(name)
        images = list(image_set.get("images") or [])
        image_hash = image_list_hash(images)
        generation = image_set.get("generation")
        if not _int(generation):
            known = cluster_generations.get(name)
            generation = known[0] if known and known[1] == image_hash else None
        item = copy.deepcopy(old_items.get(name) or {"name": name})
        item["desiredGeneration"] = desired_generation(old_items.get(name), old_hashes.get(name), images, generation)
        desired = item["desiredGeneration"]
        if state == STATE_PROGRESSING:
            if _has_work(item):
                working.append(name)
                if _int(item.get("lastFailedGeneration")) >= desired:
                    # This generation is being tried again: its failure is no longer the latest word.
                    item.pop("lastFailedGeneration", None)
                    item.pop("lastFailedGenerationError", None)
        else:
            error = failures.get(name)
            if error:
                failed.append(name)
                item["lastFailedGeneration"] = desired
                item["lastFailedGenerationError"] = _truncate(error, MAX_ERROR_LENGTH)
            else:
                item["currentGeneration"] = desired
                if "lastFailedGeneration" in item:
                    if _int(item["lastFailedGeneration"]) >= desired:
                        item.pop("lastFailedGeneration", None)
                        item.pop("lastFailedGenerationError", None)
                    else:
                        item["lastFailedGenerationError"] = ""
        items.append(item)
        hashes[name] = image_hash
    items.sort(key=lambda i: i["name"])

    if state == STATE_PROGRESSING:
        if working:
            progressing = _condition(
                old_conditions.get(PROGRESSING_CONDITION),
                PROGRESSING_CONDITION,
                True,
                "ImagePrefetch",
                "prefetching the images of " + ", ".join(sorted(working)),
                now,
            )
            degraded = _condition(
                old_conditions.get(DEGRADED_CONDITION), DEGRADED_CONDITION, False, "ImagePrefetch", "", now
            )
            conditions = [progressing, degraded]
        else:
            conditions = list(previous.get("conditions", []))
            if not conditions:
                conditions = [
                    _condition(None, PROGRESSING_CONDITION, False, "AsExpected", "", now),
                    _condition(None, DEGRADED_CONDITION, False, "AsExpected", "", now),
                ]
    else:
        progressing = _condition(
            old_conditions.get(PROGRESSING_CONDITION), PROGRESSING_CONDITION, False, "AsExpected", "", now
        )
        if failed or node_error:
            message = "; ".join(f"{name}: {failures[name]}" for name in sorted(failed)) or str(node_error)
            degraded = _condition(
                old_conditions.get(DEGRADED_CONDITION), DEGRADED_CONDITION, True, "PrefetchFailed", message, now
            )
        else:
            degraded = _condition(
                old_conditions.get(DEGRADED_CONDITION), DEGRADED_CONDITION, False, "AsExpected", "", now
            )
        conditions = [progressing, degraded]
    return {"pinnedImageSets": items, "conditions": conditions, "imageListHashes": hashes}


def summarise(status: Status) -> str:
    """One word for a status: ``progressing``, ``degraded``, ``current`` or ``unknown``."""
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    if conditions.get(PROGRESSING_CONDITION) == "True":
        return SUMMARY_PROGRESSING
    if conditions.get(DEGRADED_CONDITION) == "True":
        return SUMMARY_DEGRADED
    if conditions:
        return SUMMARY_CURRENT
    return SUMMARY_UNKNOWN


# Writing a status: read the Node, compute its status, write it when it changed.

# Writes of one node's annotation that may meet a concurrent writer (409) before the task gives up.
WRITE_ATTEMPTS = 3

# (annotation value, resourceVersion) of a Node as last read or written.
LiveNode = Tuple[Optional[str], Optional[str]]


class NodeParams(TypedDict):
    """One entry of the module's ``nodes`` option."""

    name: str
    state: str
    sets: List[Dict[str, Any]]
    images: List[Dict[str, Any]]
    error: Optional[str]


def live_node(node: Mapping[str, Any], annotation: str) -> LiveNode:
    """The Node's status annotation and resourceVersion."""
    metadata = node.get("metadata") or {}
    return (metadata.get("annotations") or {}).get(annotation), metadata.get("resourceVersion")


def cluster_generations(client: K8sClient, warnings: List[str]) -> ClusterGenerations:
    """The generations of the cluster's PinnedImageSets; none (and a warning) when they cannot be read."""
    try:
        items = client.list(API_VERSION, PINNED_IMAGE_SET_KIND)
    except K8sError as exc:
        if exc.status == 0:  # no answer: the next call would wait as long again
            raise
        warnings.append(f"cannot read the cluster's PinnedImageSets, counting generations in the annotation: {exc}")
        return {}
    generations: ClusterGenerations = {}
    for item in items:
        metadata = item.get("metadata") or {}
        images = [
            entry.get("name") for entry in (item.get("spec") or {}).get("pinnedImages") or [] if entry.get("name")
        ]
        if metadata.get("name") and metadata.get("generation"):
            generations[metadata["name"]] = (metadata["generation"], image_list_hash(images))
    return generations


def write_node_status(
    client: K8sClient,
    node: NodeParams,
    live: Optional[LiveNode],
    annotation: str,
    now: str,
    generations: ClusterGenerations,
    check_mode: bool,
    warnings: List[str],
) -> Optional[Tuple[Dict[str, Any], bool, LiveNode]]:
    """(status, changed, the Node's annotation and resourceVersion now) after writing one node's annotation; None
    when the cluster has no such node.

    The merge patch carries the resourceVersion read: when another writer changed the Node meanwhile, the API
    server answers 409 and the status is computed again from the fresh annotation (at most WRITE_ATTEMPTS times).
    Raises StatusError (bad sets, or a writer that never stops) and K8sError.
    """
    name = node["name"]
    done = node["state"] == STATE_DONE
    failures = set_failures(node["sets"], node["images"], node["error"]) if done else None
    node_error = node["error"] if done else None
    for _attempt in range(WRITE_ATTEMPTS):
        if live is None:
            return None
        value_before, version = live
        previous, unreadable = read_status(value_before)
        if unreadable:
            warnings.append(f"node {name}: {unreadable}; its generation counters start again")
        try:
            status = update_status(
                previous, node["sets"], node["state"], now, failures, generations, node_error=node_error
            )
        except StatusError as exc:
            raise StatusError(f"node {name}: {exc}") from exc
        value = render_status(status)
        changed = value != value_before
        if not changed or check_mode:
            return status, changed, live
        try:
            written = client.annotate("v1", "Node", name, {annotation: value}, resource_version=version)
            return status, changed, live_node(written, annotation)
        except K8sError as exc:
            if exc.status != 409:
                raise
        fresh = client.get("v1", "Node", name)
        live = live_node(fresh, annotation) if fresh is not None else None
    raise StatusError(
        f"node {name}: its status annotation changed {WRITE_ATTEMPTS} times while this task wrote it; "
        "is another run writing it too?"
    )
