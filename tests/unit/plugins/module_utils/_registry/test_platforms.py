# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry/platforms: this host's platform and parsing os/architecture[/variant]."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._registry import platforms as _platforms
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    PlatformError,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import (
    Platform,
    host_platform,
    parse_platform,
)


@pytest.mark.parametrize(
    "machine, expected",
    [
        ("x86_64", "linux/amd64"),
        ("AMD64", "linux/amd64"),
        ("aarch64", "linux/arm64"),
        ("arm64", "linux/arm64"),
        ("armv7l", "linux/arm/v7"),
        ("armv6l", "linux/arm/v6"),
        ("ppc64le", "linux/ppc64le"),
        ("s390x", "linux/s390x"),
        ("i686", "linux/386"),
        ("riscv64", "linux/riscv64"),
        ("weird", "linux/weird"),
    ],
)
def test_host_platform(monkeypatch, machine, expected):
    monkeypatch.setattr(_platforms._platform, "machine", lambda: machine)
    monkeypatch.setattr(_platforms.sys, "platform", "linux")
    assert str(host_platform()) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("linux/amd64", Platform("linux", "amd64")),
        ("linux/arm/v7", Platform("linux", "arm", "v7")),
        (Platform("linux", "s390x"), Platform("linux", "s390x")),
    ],
)
def test_parse_platform(value, expected):
    assert parse_platform(value) == expected


@pytest.mark.parametrize("value", ["amd64", "linux/", "linux/amd64/v1/x", "Linux/AMD64", "", 5, "linux/amd 64"])
def test_parse_platform_invalid(value):
    with pytest.raises(PlatformError, match="os/architecture"):
        parse_platform(value)


def test_parse_platform_default_is_host():
    assert parse_platform(None) == host_platform()
