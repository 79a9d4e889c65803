# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Image platforms (``os/architecture[/variant]``): this host's, parsing one, and the variants that run on it."""

from __future__ import annotations

import platform as _platform
import re
import sys
from dataclasses import dataclass
from typing import List, Union

from ansible_collections.pinned.images.plugins.module_utils._registry.errors import PlatformError

__all__ = ["Platform", "host_platform", "parse_platform", "variant_preference"]


@dataclass(frozen=True)
class Platform:
    """An image index platform: ``os/architecture[/variant]``."""

    os: str
    architecture: str
    variant: str = ""

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


# uname -m -> GOARCH and variant, as image indexes name platforms.
_MACHINE_TO_GOARCH = {
    "x86_64": ("amd64", ""),
    "amd64": ("amd64", ""),
    "aarch64": ("arm64", ""),
    "arm64": ("arm64", ""),
    "armv7l": ("arm", "v7"),
    "armv6l": ("arm", "v6"),
    "armv5tel": ("arm", "v5"),
    "i386": ("386", ""),
    "i686": ("386", ""),
    "ppc64le": ("ppc64le", ""),
    "s390x": ("s390x", ""),
    "riscv64": ("riscv64", ""),
    "mips64": ("mips64", ""),
    "loongarch64": ("loong64", ""),
}


def host_platform() -> Platform:
    """This machine as an index platform (x86_64 -> linux/amd64, armv7l -> linux/arm/v7, ...)."""
    machine = _platform.machine().lower()
    architecture, variant = _MACHINE_TO_GOARCH.get(machine, (machine, ""))
    os_name = "linux" if sys.platform.startswith("linux") else sys.platform
    return Platform(os_name, architecture, variant)


def parse_platform(value: Union[str, Platform, None]) -> Platform:
    """``os/arch[/variant]`` (``linux/arm64/v8``) -> Platform; a Platform passes through; None -> this host."""
    if value is None:
        return host_platform()
    if isinstance(value, Platform):
        return value
    parts = value.split("/") if isinstance(value, str) else []
    if len(parts) not in (2, 3) or not all(re.match(r"^[a-z0-9_.-]+$", p) for p in parts):
        raise PlatformError(f"platform {value!r} is not os/architecture[/variant], e.g. linux/amd64 or linux/arm/v7")
    return Platform(*parts)


def variant_preference(wanted: Platform) -> List[str]:
    """Variants acceptable for ``wanted``, best first (arm64 == arm64/v8; arm/v7 runs v6 and v5)."""
    if wanted.architecture == "arm64":
        order = [wanted.variant or "v8", "v8", ""]
    elif wanted.architecture == "arm":
        level = int(wanted.variant[1:]) if re.match(r"^v[5-8]$", wanted.variant or "") else 7
        order = [f"v{n}" for n in range(level, 4, -1)] + [""]
    else:
        order = [wanted.variant, ""]
    seen: List[str] = []
    for variant in order:
        if variant not in seen:
            seen.append(variant)
    return seen
