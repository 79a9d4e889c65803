# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The registry client's errors: each names the registry (host[:port])."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "DigestMismatchError",
    "ManifestFormatError",
    "ManifestUnknownError",
    "PlatformError",
    "PlatformNotFoundError",
    "RegistryAuthRejected",
    "RegistryConnectionError",
    "RegistryError",
    "RegistryTLSError",
]


class RegistryError(CollectionError):
    """A registry request failed; ``registry`` names the registry (host[:port])."""

    def __init__(self, message: str, registry: str = "") -> None:
        super().__init__(message)
        self.registry = registry


class RegistryAuthRejected(RegistryError):
    """Credentials were missing or rejected (HTTP 401/403, or by the token server)."""


class ManifestUnknownError(RegistryError):
    """The registry does not know the repository or manifest (HTTP 404, MANIFEST_UNKNOWN, NAME_UNKNOWN)."""


class RegistryConnectionError(RegistryError):
    """The registry could not be reached: refused, timed out, unresolvable, reset."""


class RegistryTLSError(RegistryConnectionError):
    """TLS verification or the handshake failed, or certs.d holds unusable files."""


class DigestMismatchError(RegistryError):
    """The manifest's sha256 differs from the digest that was asked for."""


class ManifestFormatError(RegistryError):
    """The manifest is not JSON, not a supported media type, or has malformed fields."""


class PlatformError(CollectionError):
    """A platform that is not ``os/architecture[/variant]``; the message names it and the allowed form."""


class PlatformNotFoundError(RegistryError):
    """A manifest list / OCI index has no manifest for the requested platform."""
