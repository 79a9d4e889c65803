# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a node holds of its wanted images and how CRI and the pin files say they are pinned (node side, Python
3.8+). Read only: no pull, no write, no reload. The controller decides what is drift (``plugin_utils/_audit``).

The kubelet's image GC skips only pinned images and images in use: a wanted image present but not pinned may go.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple, cast

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import read_bytes
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriImage
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import (
    OWNER_LABEL_KEY,
    OWNER_VALUE,
    PIN_LABEL_KEY,
    PIN_VALUE,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    MAX_DROPIN_SIZE,
    covers,
    dropin_pinned_images,
    effective_pins,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.method import METHOD_DROPIN, METHOD_LABEL
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import find_present
from ansible_collections.pinned.images.plugins.module_utils._prune.record import read_record

__all__ = ["AuditSettings", "audit_node"]


@dataclass(frozen=True)
class AuditSettings:
    """What the node should hold and where its pins are: the wanted images, the pin method in force (``pin_method``
    already applied), CRI-O's drop-in of the collection and the record (None: none read)."""

    wanted: Tuple[ImageRef, ...]
    method: str
    dropin_path: str
    record_file: Optional[str]


class _ListedOnce:
    """The client with ListImages answered once: the audit and ``find_present`` read the same list."""

    def __init__(self, client: Any, listed: List[CriImage]) -> None:
        self._client = client
        self._listed = listed

    def list_images(self) -> List[CriImage]:
        return self._listed

    def image_status(self, image: str) -> Optional[CriImage]:
        found: Optional[CriImage] = self._client.image_status(image)
        return found


def _names(image: Mapping[str, Any]) -> List[str]:
    return list(image["repo_digests"]) + list(image["repo_tags"])


def _display(image: Mapping[str, Any]) -> str:
    names = _names(image)
    return names[0] if names else str(image["id"])


def _dropin(path: str, wanted: List[str]) -> Dict[str, Any]:
    """CRI-O's view: the list the collection's drop-in holds (None: absent or sets none), the effective
    ``pinned_images`` once every drop-in is read, and the file that sets it (the last in name order)."""
    text = read_bytes(path, MAX_DROPIN_SIZE)
    listed = dropin_pinned_images(text.decode("utf-8", "replace")) if text is not None else None
    effective, source = effective_pins(path, listed or [])
    return dict(
        path=path,
        exists=text is not None,
        images=listed,
        effective=effective,
        effective_from=source,
        not_listed=[name for name in wanted if not covers(listed or [], name)],
        not_effective=[name for name in wanted if not covers(effective, name)],
    )


def _labels(client: Any, present: Mapping[str, CriImage]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """containerd's view: the records of the wanted images that lack the pin label, and every record."""
    records = client.list_records()
    by_name = {record["name"]: record for record in records}
    unlabelled: List[str] = []
    for image in present.values():
        for name in [image["id"], *_names(image)]:
            record = by_name.get(name)
            if record is not None and record["labels"].get(PIN_LABEL_KEY) != PIN_VALUE and name not in unlabelled:
                unlabelled.append(name)
    return dict(unlabelled=sorted(unlabelled), records=len(records)), records


def _ours(
    settings: AuditSettings, image: Mapping[str, Any], dropin: Optional[Mapping[str, Any]], owned: Set[str]
) -> bool:
    """Whether the collection pins this image: an owner-marked record, or an entry of its drop-in."""
    names = [str(image["id"]), *_names(image)]
    if settings.method == METHOD_LABEL:
        return any(name in owned for name in names)
    if settings.method == METHOD_DROPIN and dropin is not None:
        return any(covers(dropin["images"] or [], name) for name in names)
    return False


def audit_node(client: Any, settings: AuditSettings) -> Dict[str, Any]:
    """The node's images against ``settings.wanted``: ``present``, ``pinned`` (as CRI reports), ``missing``,
    ``unpinned`` (present, not pinned: the kubelet's GC may remove them), ``pinned_by_others`` (pinned images no
    set wants that the collection does not pin), ``prune_candidates`` (images the collection pulled or pinned that
    no set wants any more and the node still holds), with CRI-O's drop-ins (``crio``) or containerd's labels
    (``containerd``) as the method in force reads them, and ``warnings``."""
    wanted = [str(ref) for ref in settings.wanted]
    listed: List[CriImage] = client.list_images()
    # find_present only lists and asks ImageStatus; the wrapper has no pull on purpose.
    present = find_present(cast(Any, _ListedOnce(client, listed)), list(settings.wanted))
    warnings: List[str] = []
    result: Dict[str, Any] = dict(
        wanted=wanted,
        present=[name for name in wanted if name in present],
        pinned=[name for name in wanted if name in present and present[name]["pinned"]],
        missing=[name for name in wanted if name not in present],
        unpinned=[name for name in wanted if name in present and not present[name]["pinned"]],
    )
    dropin: Optional[Dict[str, Any]] = None
    owned: Set[str] = set()
    if settings.method == METHOD_DROPIN:
        dropin = result["crio"] = _dropin(settings.dropin_path, wanted)
    elif settings.method == METHOD_LABEL:
        result["containerd"], records = _labels(client, present)
        owned = {r["name"] for r in records if r["labels"].get(OWNER_LABEL_KEY) == OWNER_VALUE}
    wanted_ids = {image["id"] for image in present.values()}
    others = [image for image in listed if image["id"] not in wanted_ids]
    result["pinned_by_others"] = sorted(
        _display(image) for image in others if image["pinned"] and not _ours(settings, image, dropin, owned)
    )
    recorded: Dict[str, Any] = {}
    if settings.record_file:
        try:
            recorded = read_record(settings.record_file)
        except CollectionError as err:
            warnings.append(f"prune candidates not known: {err.message}")
    candidates = {_display(image) for image in others if _ours(settings, image, dropin, owned)}
    candidates.update(
        _display(image) for image in others if any(name in recorded for name in [str(image["id"]), *_names(image)])
    )
    result["prune_candidates"] = sorted(candidates)
    result["warnings"] = warnings
    return result
