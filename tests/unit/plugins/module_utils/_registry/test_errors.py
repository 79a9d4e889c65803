# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry/errors: every registry error names its registry and derives from the collection's root."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._registry import errors


@pytest.mark.parametrize(
    "cls",
    [
        errors.RegistryAuthRejected,
        errors.ManifestUnknownError,
        errors.RegistryConnectionError,
        errors.RegistryTLSError,
        errors.DigestMismatchError,
        errors.ManifestFormatError,
        errors.PlatformNotFoundError,
    ],
)
def test_each_error_is_a_registry_error_naming_the_registry(cls):
    error = cls("no such thing", "quay.io")
    assert isinstance(error, errors.RegistryError) and isinstance(error, CollectionError)
    assert (error.registry, str(error)) == ("quay.io", "no such thing")


def test_a_tls_error_is_a_connection_error_and_a_bad_platform_no_registry_error():
    assert issubclass(errors.RegistryTLSError, errors.RegistryConnectionError)
    assert not issubclass(errors.PlatformError, errors.RegistryError)
