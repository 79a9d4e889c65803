# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Container image references: parsing, validation and Docker Hub normalisation.

The grammar follows the distribution reference grammar that CRI-O, containerd and the kubelet use;
digests are restricted to sha256 with 64 lower-case hex digits, as PinnedImageSet requires.
``unique_sorted_images(names)`` gives the list the MCO writes to the CRI-O drop-in (blank names dropped,
de-duplicated, sorted; blank means ``go_trim_space(name) == ""``, Go's ``strings.TrimSpace``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, List, Set

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "DOCKER_HUB",
    "DOCKER_HUB_ALIASES",
    "GO_SPACE",
    "MAX_NAME_LENGTH",
    "MAX_REFERENCE_LENGTH",
    "ImageRef",
    "ImageReferenceError",
    "go_trim_space",
    "parse_image_ref",
    "unique_sorted_images",
]

DOCKER_HUB = "docker.io"
DOCKER_HUB_ALIASES = frozenset((DOCKER_HUB, "index.docker.io", "registry-1.docker.io"))
# distribution/reference (since v0.6.0) caps the path, without the host, at 255 characters.
MAX_NAME_LENGTH = 255
# Long enough for any valid reference; stops hostile multi-kilobyte input before the regexes run.
MAX_REFERENCE_LENGTH = 1024

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_RE = re.compile(
    r"^(?:" + _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$"
)
_PATH_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_SHA256_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
# A bare 64-hex name is an image id, which ParseNormalizedNamed refuses as a name.
_IMAGE_ID_RE = re.compile(r"^[0-9a-f]{64}$")
# str.isspace() (re's \s for str patterns is the same test) or an ASCII control character.
_SPACE_OR_CONTROL_RE = re.compile(r"[\s\x00-\x1f\x7f]")


class ImageReferenceError(CollectionError):
    """An image reference that does not parse or breaks a rule."""


def _describe(value: str) -> str:
    shown = value if len(value) <= 80 else value[:77] + "..."
    return repr(shown)


@dataclass(frozen=True)
class ImageRef:
    """A parsed reference; ``registry`` is normalised (``docker.io`` for Docker Hub)."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.repository}"

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += ":" + self.tag
        if self.digest:
            text += "@" + self.digest
        return text


def _split_domain(name: str) -> tuple[str, str]:
    first, sep, rest = name.partition("/")
    # A first component is a registry host when it looks like one; otherwise Docker Hub is meant.
    if sep and (
        "." in first or ":" in first or first == "localhost" or first.startswith("[") or first != first.lower()
    ):
        return first, rest
    return DOCKER_HUB, name


def parse_image_ref(value: object, require_digest: bool = True) -> ImageRef:
    """Parse ``[host[:port]/]path[:tag][@sha256:<hex>]``; raise ImageReferenceError naming the problem."""
    if not isinstance(value, str):
        raise ImageReferenceError(f"image reference must be a string, got {type(value).__name__}")
    if not value:
        raise ImageReferenceError("image reference is empty")
    if len(value) > MAX_REFERENCE_LENGTH:
        raise ImageReferenceError(
            f"image reference {_describe(value)} is {len(value)} characters long; at most {MAX_REFERENCE_LENGTH} are allowed"
        )
    if _SPACE_OR_CONTROL_RE.search(value):
        raise ImageReferenceError(f"image reference {_describe(value)} contains whitespace or control characters")

    remainder, at, after_at = value.partition("@")
    digest: str | None = None
    if at:
        digest = after_at
        if "@" in digest:
            raise ImageReferenceError(f"image reference {_describe(value)} has more than one '@'")
        if not _SHA256_RE.match(digest):
            raise ImageReferenceError(
                f"image reference {_describe(value)} has digest {_describe(digest)}; "
                "allowed is sha256: followed by 64 lower-case hex digits"
            )

    tag = None
    last_slash = remainder.rfind("/")
    colon = remainder.rfind(":")
    if colon > last_slash:
        remainder, tag = remainder[:colon], remainder[colon + 1 :]
        if not _TAG_RE.match(tag):
            raise ImageReferenceError(
                f"image reference {_describe(value)} has invalid tag {_describe(tag)}; "
                "a tag is 1-128 characters of letters, digits, '_', '.', '-' and does not start with '.' or '-'"
            )

    if not remainder:
        raise ImageReferenceError(f"image reference {_describe(value)} has no repository name")
    if _IMAGE_ID_RE.match(value):
        raise ImageReferenceError(
            f"image reference {_describe(value)} is a 64-hex image id, not a repository name "
            "(the runtimes refuse it as a name too)"
        )

    registry, path = _split_domain(remainder)
    if not _DOMAIN_RE.match(registry):
        raise ImageReferenceError(f"image reference {_describe(value)} has invalid registry host {_describe(registry)}")
    if registry in DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
        # Official images live under library/, whichever spelling of the Hub was used.
        if "/" not in path:
            path = "library/" + path
    if len(path) > MAX_NAME_LENGTH:
        raise ImageReferenceError(
            f"image reference {_describe(value)} has a repository path of {len(path)} characters; "
            f"at most {MAX_NAME_LENGTH} are allowed (the registry host is not counted)"
        )
    for component in path.split("/"):
        if not _PATH_COMPONENT_RE.match(component):
            raise ImageReferenceError(
                f"image reference {_describe(value)} has invalid path component {_describe(component)}; "
                "components are lower-case letters and digits separated by '.', '_', '__' or '-'"
            )

    if require_digest and not digest:
        raise ImageReferenceError(
            f"image reference {_describe(value)} is not pinned by digest; "
            "use name@sha256:<64 hex digits> or set require_digest to false"
        )
    return ImageRef(registry=registry, repository=path, tag=tag, digest=digest)


# Go's unicode.IsSpace, which strings/bytes.TrimSpace use: Python's str.strip() also removes U+001C..U+001F,
# which Go keeps.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"
)


def go_trim_space(text: str) -> str:
    """``text`` trimmed as Go's ``strings.TrimSpace`` does (see GO_SPACE)."""
    return text.strip(GO_SPACE)


def unique_sorted_images(names: Iterable[object]) -> List[str]:
    """Blank names dropped, de-duplicated, sorted: the list the MCO writes (``uniqueSortedImageNames``)."""
    unique: Set[str] = set()
    for name in names:
        if isinstance(name, str) and go_trim_space(name):
            unique.add(name)
    # Code-point order is UTF-8 byte order, which Go's sort.Strings uses.
    return sorted(unique)
