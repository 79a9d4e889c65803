# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Which images a prune removes: a pure decision over plain data (node side, Python 3.8+).

A candidate is an image the record names (``_prune/record``) that no wanted image is. One decision per image on the
node (one CRI image id, whatever names point at it); an image is removed only when no rule keeps it. The rules, in
the order their reason is given:

``wanted``: another name of the same image is wanted, or one of its digests is a wanted digest (under any
repository: a mirror); ``other_names``: the image also has a tag the record does not name or a digest under a
repository no recorded name has (RemoveImage by id would take those names too), or a recorded tag has no recorded
image id (the tag may have moved to an image the collection never pulled); ``keep``: one of its names matches a ``keep`` pattern
(``fnmatch``: ``*``, ``?``, ``[...]``); ``in_use``: a container in any state, or a pod sandbox, uses it (CRI
ListContainers: its image, image_ref or image_id names the image), or it is the runtime's pause image
(``sandbox_ids``); ``pinned``: the runtime still reports it pinned
once the collection's own pin is gone, or the pin is not the collection's; ``young``: it is younger than
``min_age`` (where its age is known).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, TypedDict, cast

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageReferenceError,
    parse_image_ref,
)

__all__ = [
    "IN_USE",
    "KEEP",
    "KEEP_PATTERN",
    "OTHER_NAMES",
    "PINNED",
    "REMOVE",
    "WANTED",
    "YOUNG",
    "Candidate",
    "Decision",
    "PruneInputError",
    "all_names",
    "bare_id",
    "decide",
    "group_candidates",
    "parse_duration",
    "totals",
    "users",
    "validate_keep",
]

REMOVE, KEEP = "remove", "keep"
WANTED, KEEP_PATTERN, IN_USE, PINNED, YOUNG = "wanted", "keep", "in_use", "pinned", "young"
OTHER_NAMES = "other_names"
_ID_PREFIX = "sha256:"
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


class PruneInputError(CollectionError):
    """A prune option is not valid: the message names it and what is allowed."""


def parse_duration(text: object, name: str = "min_age") -> float:
    """Seconds of ``"90"``, ``"90s"``, ``"30m"``, ``"2h"``, ``"7d"``; PruneInputError naming ``name`` otherwise."""
    match = _DURATION_RE.match(str(text))
    if match is None:
        raise PruneInputError(
            f"{name}: {text!r} is not a duration; give a number with an optional unit s, m, h or d (90s, 30m, 2h, 7d)"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def validate_keep(patterns: Optional[Iterable[object]]) -> List[str]:
    """The ``keep`` patterns, each a non-empty string; one PruneInputError naming every bad entry."""
    found: List[str] = []
    problems: List[str] = []
    for index, pattern in enumerate(patterns or []):
        if not isinstance(pattern, str) or not pattern.strip():
            problems.append(f"keep[{index}]: {pattern!r} is not a pattern (a non-empty string, * and ? allowed)")
        else:
            found.append(pattern.strip())
    if problems:
        raise PruneInputError(problems, message="invalid keep patterns: " + "; ".join(problems))
    return found


class Candidate(TypedDict):
    """A recorded, no longer wanted image the node has: the recorded names that point at it, and CRI's image."""

    names: List[str]
    id: str
    repo_tags: List[str]
    repo_digests: List[str]
    size: int
    # Whether CRI reports it pinned (before the collection's pin is removed).
    pinned: bool
    # Recorded tags without a recorded image id: they may name an image the collection never pulled.
    unsure: List[str]


class Decision(TypedDict):
    """What the prune does with one image: ``action`` remove or keep, the ``reason`` it is kept and its words."""

    image: str
    names: List[str]
    id: str
    size: int
    action: str
    reason: Optional[str]
    detail: str


def bare_id(text: str) -> str:
    """``text`` without a leading ``sha256:`` (CRI-O's image ids are bare, containerd's are not)."""
    return text[len(_ID_PREFIX) :] if text.startswith(_ID_PREFIX) else text


def all_names(candidate: Candidate) -> Set[str]:
    """Every name the runtime or the record has for the candidate: its id, recorded names, tags and digests."""
    return {candidate["id"], *candidate["names"], *candidate["repo_tags"], *candidate["repo_digests"]}


def _repository(name: str) -> Optional[str]:
    try:
        return parse_image_ref(name, require_digest=False).name
    except ImageReferenceError:
        return None


def _digest(name: str) -> Optional[str]:
    return name.rsplit("@", 1)[1] if "@" in name else None


def _other_names(candidate: Candidate) -> List[str]:
    """The candidate's names that are not the record's: a tag it does not name, a digest under another repository
    (a recorded ``repo:tag`` implies its ``repo@digest``, which containerd adds on pull)."""
    recorded = set(candidate["names"])
    repositories = {_repository(name) for name in recorded} - {None}
    others = [tag for tag in candidate["repo_tags"] if tag not in recorded]
    others += [d for d in candidate["repo_digests"] if d not in recorded and _repository(d) not in repositories]
    return sorted(others)


def users(candidate: Candidate, containers: Sequence[Mapping[str, Any]]) -> List[str]:
    """The containers (``name (state)``) that use the candidate by any of its names or its id."""
    names = {bare_id(name) for name in all_names(candidate)}
    users = []
    for container in containers:
        fields = (container.get("image", ""), container.get("image_ref", ""), container.get("image_id", ""))
        used = {bare_id(field) for field in fields} - {""}
        if used & names:
            users.append(f"{container.get('name') or container.get('id', '')[:12]} ({container.get('state')})")
    return sorted(users)


def _reason(
    candidate: Candidate,
    wanted_ids: Set[str],
    containers: Sequence[Mapping[str, Any]],
    keep: Sequence[str],
    min_age: float,
    age: Optional[float],
    pinned_by_others: Set[str],
    wanted_digests: Set[str],
    sandbox_ids: Set[str],
) -> Optional[Dict[str, str]]:
    if bare_id(candidate["id"]) in wanted_ids:
        return dict(reason=WANTED, detail="another name of this image is wanted")
    mirrored = sorted(d for d in candidate["repo_digests"] if _digest(d) in wanted_digests)
    if mirrored:
        return dict(reason=WANTED, detail=f"{mirrored[0]} has the digest of a wanted image")
    others = _other_names(candidate)
    if others:
        return dict(reason=OTHER_NAMES, detail="it also has names the record does not: " + ", ".join(others))
    if candidate.get("unsure"):
        return dict(
            reason=OTHER_NAMES,
            detail=f"the record has no image id for {candidate['unsure'][0]}: the tag may name another image now",
        )
    if bare_id(candidate["id"]) in sandbox_ids:
        return dict(reason=IN_USE, detail="the runtime's pause image (sandboxImage of its CRI config)")
    names = sorted(all_names(candidate))
    for pattern in keep:
        matched = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
        if matched:
            return dict(reason=KEEP_PATTERN, detail=f"{matched[0]} matches keep pattern {pattern!r}")
    using = users(candidate, containers)
    if using:
        return dict(reason=IN_USE, detail="used by container " + ", ".join(using))
    if bare_id(candidate["id"]) in pinned_by_others:
        return dict(reason=PINNED, detail="the runtime reports it pinned by someone other than pinned.images")
    if min_age > 0 and age is not None and age < min_age:
        return dict(reason=YOUNG, detail=f"{age:.0f}s old, younger than min_age ({min_age:.0f}s)")
    return None


def decide(
    candidates: Iterable[Candidate],
    wanted_ids: Iterable[str],
    containers: Sequence[Mapping[str, Any]],
    keep: Sequence[str] = (),
    min_age: float = 0.0,
    ages: Optional[Mapping[str, Optional[float]]] = None,
    pinned_by_others: Iterable[str] = (),
    wanted_names: Iterable[str] = (),
    sandbox_ids: Iterable[str] = (),
) -> List[Decision]:
    """One decision per candidate (``ages`` by image id; ``wanted_ids``, ``pinned_by_others`` and ``sandbox_ids``
    are image ids, with or without ``sha256:``; ``wanted_names`` the wanted references, for their digests)."""
    wanted = {bare_id(i) for i in wanted_ids}
    others = {bare_id(i) for i in pinned_by_others}
    sandbox = {bare_id(i) for i in sandbox_ids}
    digests = {_digest(name) for name in wanted_names} - {None}
    decisions: List[Decision] = []
    for candidate in candidates:
        age = (ages or {}).get(candidate["id"])
        why = _reason(candidate, wanted, containers, keep, min_age, age, others, cast(Set[str], digests), sandbox)
        decisions.append(
            Decision(
                image=sorted(candidate["names"])[0],
                names=sorted(candidate["names"]),
                id=candidate["id"],
                size=candidate["size"],
                action=KEEP if why else REMOVE,
                reason=why["reason"] if why else None,
                detail=why["detail"] if why else "no longer wanted",
            )
        )
    return sorted(decisions, key=lambda decision: decision["image"])


def group_candidates(found: Mapping[str, Optional[Mapping[str, Any]]], unsure: Iterable[str] = ()) -> List[Candidate]:
    """Candidates from ``{recorded name: CRI image or None}``: one per image id, with every recorded name of it
    (``unsure``: the recorded tags without a recorded image id)."""
    doubtful = set(unsure)
    by_id: Dict[str, Candidate] = {}
    for name, image in sorted(found.items()):
        if image is None:
            continue
        candidate = by_id.setdefault(
            image["id"],
            Candidate(
                names=[],
                id=image["id"],
                repo_tags=list(image.get("repo_tags", [])),
                repo_digests=list(image.get("repo_digests", [])),
                size=int(image.get("size", 0)),
                pinned=bool(image.get("pinned")),
                unsure=[],
            ),
        )
        candidate["names"].append(name)
        if name in doubtful:
            candidate["unsure"].append(name)
    return list(by_id.values())


def totals(decisions: Iterable[Decision]) -> Dict[str, int]:
    """Counts and bytes: ``removed`` images and ``freed_bytes`` (their CRI sizes), ``kept``."""
    removed = [decision for decision in decisions if decision["action"] == REMOVE]
    kept = [decision for decision in decisions if decision["action"] == KEEP]
    return dict(removed=len(removed), kept=len(kept), freed_bytes=sum(decision["size"] for decision in removed))
