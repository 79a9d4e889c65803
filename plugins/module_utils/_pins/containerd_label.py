# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Pinning on containerd: the image label ``io.cri-containerd.pinned=pinned`` on every record of a wanted image.

containerd (1.7.3 and later) reports an image as ``pinned`` through CRI when one of its image records carries the
label, and the kubelet never garbage-collects pinned images. Every record (digest name, tags, the image id) of a
wanted image is labelled, so CRI reports it pinned whichever name the kubelet uses. Records this collection pins also
get ``OWNER_LABEL_KEY``; only those are ever unpinned, so a pin set by hand or by another tool stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError, CriImage, RuntimeVersion
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    MissingImagesError,
    NotReportedError,
    PinnedImagesError,
    is_pattern,
    validate_pinned_images,
    wait_reported,
)

__all__ = [
    "MIN_VERSION",
    "OWNER_LABEL_KEY",
    "OWNER_VALUE",
    "PIN_KEYS",
    "PIN_LABEL_KEY",
    "PIN_VALUE",
    "LabelSettings",
    "OldRuntimeError",
    "PinClient",
    "auto_pin_problem",
    "parse_version",
    "pin_labels",
    "runtime_problem",
    "sync_containerd_pins",
    "validate_images",
]

PIN_LABEL_KEY = "io.cri-containerd.pinned"
PIN_VALUE = "pinned"
# Marks the pins this collection made: only these are removed when an image is no longer wanted.
OWNER_LABEL_KEY = "pinned.images/pinned-by"
OWNER_VALUE = "pinned.images"
PIN_KEYS = (PIN_LABEL_KEY, OWNER_LABEL_KEY)
# containerd/containerd#8817 (1.7.3): the CRI plugin reports the label as Image.pinned.
MIN_VERSION = (1, 7, 3)
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


class PinClient(Protocol):
    """The calls of the label pin: ``ContainerdClient`` has them (a record is a dict of ``_cri.containerd``)."""

    def version(self) -> RuntimeVersion: ...

    def image_status(self, image: str) -> Optional[CriImage]: ...

    def list_records(self, filters: Iterable[str] = ()) -> List[Dict[str, Any]]: ...

    def update_labels(
        self, record: Mapping[str, Any], labels: Mapping[str, str], keys: Iterable[str]
    ) -> Dict[str, Any]: ...


class OldRuntimeError(CollectionError):
    """The runtime would store the label but not report the image pinned; ``version`` is its CRI Version."""

    def __init__(self, message: str, version: Mapping[str, Any]) -> None:
        super().__init__(message, details={"runtime": version})
        self.version = version


def parse_version(text: str) -> Optional[Tuple[int, ...]]:
    """(major, minor, patch) of a containerd version string (``"1.7.24~ds1"``, ``"v1.7.3"``), None when it has
    none."""
    match = _VERSION_RE.match(text or "")
    return tuple(int(part) for part in match.groups()) if match else None


def runtime_problem(version: Mapping[str, Any]) -> Optional[str]:
    """Why the runtime described by a CRI ``Version`` result will not honour the pin label; None when it will."""
    name, text = version.get("runtime_name", ""), version.get("runtime_version", "")
    if name != "containerd":
        return (
            f"the runtime is {name or 'unknown'} {text}, not containerd; pin CRI-O images with "
            "pinned.images.crio_pinned_images, or with pinned.images.prefetch's pin=dropin or pin=auto "
            "(node_pin in the pinned.images.node role)"
        )
    parsed = parse_version(text)
    wanted = ".".join(map(str, MIN_VERSION))
    if parsed is None:
        return f"cannot read the containerd version {text!r}; containerd reports the {PIN_LABEL_KEY} label from {wanted} on"
    if parsed < MIN_VERSION:
        return (
            f"containerd {text} will not honour the pin: it stores the {PIN_LABEL_KEY} label but reports images as pinned "
            f"through CRI (and so protects them from the kubelet's image garbage collection) only from {wanted} on"
        )
    return None


def auto_pin_problem(wanted: str, version: Mapping[str, Any]) -> Optional[str]:
    """Why ``pin=auto`` pins nothing on this containerd (older than 1.7.3), with the fix; None elsewhere."""
    if wanted != "auto" or version.get("runtime_name") != "containerd":
        return None
    problem = runtime_problem(version)
    if problem is None:
        return None
    return (
        f"{problem}; pin=auto pins nothing on this node, so the kubelet may remove these images. Upgrade "
        f"containerd to {'.'.join(map(str, MIN_VERSION))} or later"
    )


def validate_images(images: object, require_digest: bool = True) -> List[str]:
    """The checked, de-duplicated, sorted list; patterns name no image record, so they are refused."""
    names = validate_pinned_images(images, require_digest=require_digest)
    patterns = [name for name in names if is_pattern(name)]
    if patterns:
        raise PinnedImagesError(
            [f"{name!r} is a pattern; containerd pins image records, name each image" for name in patterns]
        )
    return names


def _is_pinned(record: Mapping[str, Any]) -> bool:
    labels: Mapping[str, str] = record["labels"]
    return labels.get(PIN_LABEL_KEY) == PIN_VALUE


def _is_ours(record: Mapping[str, Any]) -> bool:
    labels: Mapping[str, str] = record["labels"]
    return labels.get(OWNER_LABEL_KEY) == OWNER_VALUE


def _display_name(names: Iterable[str]) -> str:
    """One name for a group of records: a digest reference, else a tag, else the image id."""
    return sorted(names, key=lambda n: (n.startswith("sha256:"), "@" not in n, n))[0]


def _render(records: Iterable[str]) -> str:
    return "".join(f"{name}\n" for name in sorted(records))


def sync_containerd_pins(
    client: PinClient,
    images: Optional[Iterable[str]],
    state: str = "present",
    check_mode: bool = False,
    force: bool = False,
    old_containerd: str = "fail",
    settle_timeout: float = 10.0,
    known: Optional[Mapping[str, CriImage]] = None,
) -> Dict[str, Any]:
    """Label every record of each of ``images`` (validated) as pinned; unpin the records this collection pinned
    that no wanted image has any more. ``state=absent`` unpins everything this collection pinned.

    The runtime must be containerd >= 1.7.3 (OldRuntimeError), unless ``old_containerd='warn'``. Unless ``force``,
    every wanted image must be present (checked through CRI ImageStatus; MissingImagesError, nothing written);
    with ``force`` the missing ones are left out and listed. A record pinned by someone else is never touched.
    ``known`` maps wanted images to the CRI images a caller already read (the prefetch's present check); only the
    others are asked through ImageStatus.
    After a change on a runtime that honours the label, waits up to ``settle_timeout`` seconds until CRI reports
    the wanted images pinned and the unpinned ones not (NotReportedError otherwise).
    Returns ``{changed, images, pinned, unpinned, unchanged, missing, records, cri_pinned, runtime, warnings,
    diff}`` (``cri_pinned``: what CRI reports per wanted image, None when absent):
    ``pinned`` are the wanted images CRI did not report pinned before, ``unchanged`` the other wanted ones,
    ``unpinned`` one name per image CRI no longer reports pinned, ``records`` the record names labelled or
    unlabelled.
    """
    wanted = list(images or []) if state == "present" else []
    version = client.version()
    warnings: List[str] = []
    problem = runtime_problem(version)
    if problem:
        if old_containerd != "warn" or version.get("runtime_name") != "containerd":
            raise OldRuntimeError(problem, version)
        warnings.append(problem + "; labels set anyway (old_containerd=warn)")

    already_read = known or {}
    statuses = {name: already_read.get(name) or client.image_status(name) for name in wanted}
    missing = [name for name, status in statuses.items() if status is None]
    if missing and not force:
        raise MissingImagesError(missing)
    found = {name: status for name, status in statuses.items() if status is not None}
    present = [name for name in wanted if name in found]

    records = {record["name"]: record for record in client.list_records()}
    wanted_records: Dict[str, str] = {}  # record name -> wanted image
    for name, image in found.items():
        for record_name in [image["id"], *image["repo_tags"], *image["repo_digests"]]:
            if record_name in records:
                wanted_records.setdefault(record_name, name)

    # A record already pinned by someone else stays theirs: no owner mark, so it is never unpinned here.
    to_pin = [n for n in sorted(wanted_records) if not _is_pinned(records[n])]
    to_unpin = [n for n in sorted(records) if n not in wanted_records and _is_ours(records[n])]

    before = sorted(n for n, r in records.items() if _is_pinned(r))
    after = sorted((set(before) | set(to_pin)) - {n for n in to_unpin if _is_pinned(records[n])})
    # CRI reports an image (one image id) pinned when any of its records is: these images were, these still are.
    image_ids = {n: found[image]["id"] for n, image in wanted_records.items()}
    for name in sorted(set(before) | set(to_unpin)):
        if name not in image_ids:
            other = client.image_status(name)
            image_ids[name] = other["id"] if other else name
    was = {image_ids[n] for n in before}
    still = {image_ids[n] for n in after}
    lost = [n for n in to_unpin if image_ids[n] not in still]
    # What CRI reports per wanted image: read before any change, then what the wait after the change saw.
    reported: Dict[str, Optional[bool]] = {
        name: bool(status.get("pinned")) if status else None for name, status in statuses.items()
    }
    if not check_mode:
        for name in to_pin:
            client.update_labels(records[name], {PIN_LABEL_KEY: PIN_VALUE, OWNER_LABEL_KEY: OWNER_VALUE}, PIN_KEYS)
        for name in to_unpin:
            client.update_labels(records[name], {}, PIN_KEYS)
        if (to_pin or to_unpin) and not problem:
            expected = {name: True for name in present}
            expected.update({n: False for n in lost})
            try:
                reported.update(wait_reported(client, expected, settle_timeout, "the labels are written"))
            except NotReportedError as exc:
                # The labels are written: the failure result says what changed.
                raise NotReportedError(
                    exc.message,
                    details={
                        "changed": True,
                        "images": sorted(present),
                        "records": {"pinned": to_pin, "unpinned": to_unpin},
                    },
                ) from exc

    newly = {name for name in present if found[name]["id"] not in was}
    unpinned_groups: Dict[str, List[str]] = {}
    for name in lost:
        unpinned_groups.setdefault(image_ids[name], []).append(name)
    return {
        "changed": bool(to_pin or to_unpin),
        "images": sorted(present),
        "pinned": sorted(newly),
        "unchanged": sorted(name for name in present if name not in newly),
        "unpinned": sorted(_display_name(names) for names in unpinned_groups.values()),
        "missing": missing,
        "records": {"pinned": to_pin, "unpinned": to_unpin},
        "cri_pinned": reported,
        "runtime": version,
        "warnings": warnings,
        "diff": {
            "before": _render(before),
            "after": _render(after),
            "before_header": "pinned image records",
            "after_header": "pinned image records",
        },
    }


@dataclass(frozen=True)
class LabelSettings:
    """The pin options of ``sync_containerd_pins``."""

    force: bool = False
    old_containerd: str = "fail"
    settle_timeout: float = 10.0


def pin_labels(
    client: PinClient,
    images: List[str],
    settings: LabelSettings,
    check_mode: bool,
    state: str = "present",
    known: Optional[Mapping[str, CriImage]] = None,
) -> Dict[str, Any]:
    """``sync_containerd_pins`` for ``containerd_pinned_images`` and the prefetch's pin; a CRI error, or CRI not
    reporting the pins, is raised as a CollectionError that names the pin (its details kept)."""
    try:
        return sync_containerd_pins(
            client,
            images,
            state=state,
            check_mode=check_mode,
            force=settings.force,
            old_containerd=settings.old_containerd,
            settle_timeout=settings.settle_timeout,
            known=known,
        )
    except (CriError, NotReportedError) as exc:
        raise CollectionError(
            exc.problems, message="cannot pin on containerd: " + exc.message, details=exc.details
        ) from exc
