# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Disk guard: will the images still to pull fit on the image filesystem, keeping a reserve free?

As in the reference (machine-config-operator): compressed layer sizes from the registry manifests, each layer
digest counted once across the set, multiplied by an expansion factor (2 for decompression), must fit in the
free space minus a reserve. Unlike the reference, a multi-arch index is resolved to the node's platform
instead of counting 0 bytes, and the free space is the filesystem's (statvfs ``f_bavail``), not the node's
allocatable ephemeral storage.
"""

from __future__ import annotations

import math
import os
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, TypedDict, Union

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "DEFAULT_EXPANSION_FACTOR",
    "DEFAULT_MIN_FREE",
    "LARGEST_SHOWN",
    "MODES",
    "DiskGuardError",
    "Estimate",
    "ImageEstimate",
    "check",
    "estimate",
    "filesystem_stats",
    "human_size",
    "parse_size",
    "unitless_size_warning",
]

MODES = ("estimate", "free_only", "off")
DEFAULT_MIN_FREE = "16Gi"
DEFAULT_EXPANSION_FACTOR = 2
LARGEST_SHOWN = 5
_UNITS = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(|[kKMGTPE]i?)B?$")
_PERCENT_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*%$")
_ALLOWED = (
    "bytes (1073741824), binary units (500Mi, 16Gi, 1.5Gi), decimal units (1G, 500M) or a percent of "
    "the filesystem size (10%)"
)


class DiskGuardError(CollectionError):
    """A size, expansion factor or guard mode that is not allowed; the message names the value and what is."""


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_size(value: Union[str, int], total: int | None = None) -> int:
    """``16Gi``, ``500Mi``, ``1G``, ``1.5Gi``, ``1073741824`` or ``10%`` (of ``total``) -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise DiskGuardError(f"size {value} is negative; allowed are {_ALLOWED}")
        return value
    if not isinstance(value, str):
        raise DiskGuardError(f"size {_describe(value)} is not a string or integer; allowed are {_ALLOWED}")
    text = value.strip()
    percent = _PERCENT_RE.match(text) if len(text) <= 64 else None
    if percent:
        share = Decimal(percent.group(1))
        if share > 100:
            raise DiskGuardError(f"size {_describe(value)} is more than 100%; allowed are 0% to 100%")
        if total is None:
            raise DiskGuardError(f"size {_describe(value)} is a percent; the filesystem size is needed to resolve it")
        return int(share * total / 100)
    match = _SIZE_RE.match(text) if len(text) <= 64 else None
    if not match:
        raise DiskGuardError(f"size {_describe(value)} is not understood; allowed are {_ALLOWED}")
    try:
        return int(Decimal(match.group(1)) * _UNITS[match.group(2)])
    except InvalidOperation:
        raise DiskGuardError(f"size {_describe(value)} is not understood; allowed are {_ALLOWED}") from None


def unitless_size_warning(value: object, name: str = "min_free") -> Optional[str]:
    """A warning when ``value`` is a bare number of fewer than 1 MiB (above 0): almost no reserve, so most likely
    its unit was left out (``16`` for ``16Gi``); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        return None
    size = int(str(value).strip())
    if not 0 < size < _UNITS["Mi"]:
        return None
    return (
        f"{name}: {value} has no unit, so it means {size} bytes, which keeps almost nothing free; "
        f"did you mean {size}Gi? Give the unit (16Gi, 500Mi), or 0 for no reserve"
    )


def human_size(size: int) -> str:
    """1610612736 -> ``1.5 GiB``; below 1 KiB in bytes."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024 or unit == "PiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def filesystem_stats(path: str) -> Tuple[int, int]:
    """``(total, free)`` bytes of the filesystem holding ``path``; free is what unprivileged writers get."""
    stats = os.statvfs(path)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


class ImageEstimate(TypedDict):
    """One image of an Estimate."""

    image: str
    layers: int
    compressed_bytes: int
    new_bytes: int
    required_bytes: int


class Estimate(TypedDict):
    """What ``estimate`` gives: the set's totals and ``per_image``."""

    images: int
    layers: int
    compressed_bytes: int
    expansion_factor: float
    required_bytes: int
    per_image: List[ImageEstimate]


def estimate(
    manifests: Union[Mapping[Any, Any], Iterable[Tuple[Any, Any]]], expansion_factor: float = DEFAULT_EXPANSION_FACTOR
) -> Estimate:
    """Bytes needed to pull ``manifests``: {image: ManifestInfo} or [(image, ManifestInfo)].

    Each layer digest counts once across the set. ``per_image`` gives each image's own compressed size and the
    part of it first seen in that image (``new_bytes``; order-dependent, in the given order).
    """
    if (
        isinstance(expansion_factor, bool)
        or not isinstance(expansion_factor, (int, float))
        or not math.isfinite(expansion_factor)
        or expansion_factor <= 0
    ):
        raise DiskGuardError(f"expansion_factor {_describe(expansion_factor)} must be a finite number above 0")
    items = manifests.items() if isinstance(manifests, dict) else manifests
    seen: Dict[str, int] = {}
    per_image: List[ImageEstimate] = []
    for image, info in items:
        own: Dict[str, int] = {}
        for digest, size in info.layers:
            own.setdefault(digest, size)
        new = {d: s for d, s in own.items() if d not in seen}
        seen.update(new)
        per_image.append(
            {
                "image": str(image),
                "layers": len(own),
                "compressed_bytes": sum(own.values()),
                "new_bytes": sum(new.values()),
                "required_bytes": int(sum(own.values()) * expansion_factor),
            }
        )
    compressed = sum(seen.values())
    return {
        "images": len(per_image),
        "layers": len(seen),
        "compressed_bytes": compressed,
        "expansion_factor": expansion_factor,
        "required_bytes": int(compressed * expansion_factor),
        "per_image": per_image,
    }


def _largest(estimated: Mapping[str, Any]) -> List[Dict[str, Any]]:
    ranked = sorted(estimated.get("per_image", []), key=lambda i: (-i["required_bytes"], i["image"]))
    return [
        {"image": i["image"], "required_bytes": i["required_bytes"], "required": human_size(i["required_bytes"])}
        for i in ranked[:LARGEST_SHOWN]
    ]


def check(
    estimated: Mapping[str, Any],
    total: int,
    free: int,
    min_free: Union[str, int] = DEFAULT_MIN_FREE,
    mode: str = "estimate",
    pulls: Optional[int] = None,
) -> Dict[str, Any]:
    """Decide whether the pull fits. ``min_free`` is bytes or a size string (``16Gi``, ``10%`` of ``total``).

    ``estimate``: fail when free - reserve < required; ``free_only``: fail when free < reserve; ``off``: never.
    ``pulls=0`` (nothing to pull) always passes: the guard guards pulls, and a full disk stays as full.
    Returns a dict for module output; ``ok`` says whether to go on and ``message`` explains it.
    """
    if mode not in MODES:
        raise DiskGuardError(f"disk guard mode {_describe(mode)} is not one of {', '.join(MODES)}")
    reserve = parse_size(min_free, total)
    required = estimated.get("required_bytes", 0) if mode == "estimate" else 0
    result: Dict[str, Any] = {
        "mode": mode,
        "ok": True,
        "required_bytes": required,
        "available_bytes": free,
        "reserve_bytes": reserve,
        "total_bytes": total,
        "headroom_bytes": free - reserve - required,
        "images": estimated.get("images", 0),
        "largest_images": _largest(estimated) if mode == "estimate" else [],
        "required": human_size(required),
        "available": human_size(free),
        "reserve": human_size(reserve),
    }
    if mode == "off":
        result["message"] = "disk guard is off"
        return result
    if pulls == 0:
        result["message"] = (
            f"nothing to pull, the disk guard passes: {human_size(free)} free of "
            f"{human_size(total)}, reserve {human_size(reserve)}"
        )
        return result
    if mode == "free_only":
        result["ok"] = free >= reserve
        verdict = "enough" if result["ok"] else "not enough"
        result["message"] = (
            f"{verdict} free disk space: {human_size(free)} free of {human_size(total)}, reserve {human_size(reserve)}"
        )
        return result
    result["ok"] = free - reserve >= required
    factor = estimated.get("expansion_factor", DEFAULT_EXPANSION_FACTOR)
    message = (
        f"{result['images']} image(s) need {human_size(required)} "
        f"({human_size(estimated.get('compressed_bytes', 0))} compressed x{factor:g}); "
        f"{human_size(free)} free of {human_size(total)}, reserve {human_size(reserve)}"
    )
    if result["ok"]:
        result["message"] = f"enough disk space: {message}"
    else:
        largest = ", ".join(f"{i['image']} ({i['required']})" for i in result["largest_images"])
        short = human_size(-result["headroom_bytes"])
        result["message"] = f"not enough disk space, {short} short: {message}; largest: {largest}"
    return result
