# SPDX-License-Identifier: GPL-3.0-or-later
"""_prefetch/preflight: the disk guard on a real filesystem (the test's temp dir) and the runtime's pull sources.

The guard's estimate against a real registry and a full tmpfs are in tests/functional; the sources each runtime
reads, through a whole prefetch request, in tests/unit/plugins/module_utils/_runs/test_prefetch.py.
"""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import RetryPolicy
from ansible_collections.pinned.images.plugins.module_utils._prefetch.preflight import (
    DiskGuardRefused,
    DiskGuardSettings,
    SourceSettings,
    guard_disk,
    pull_sources,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import RegistriesConf

MISSING = [parse_image_ref(f"registry.example:5000/missing@sha256:{'e' * 64}")]


def settings(mode="free_only", min_free="0", image_store_path=None):
    return DiskGuardSettings(
        mode=mode,
        min_free=min_free,
        expansion_factor=2.0,
        image_store_path=image_store_path,
        docker_config=DockerConfig(),
        certs_dirs=(),
        registry_timeout=1.0,
        retry=RetryPolicy(),
    )


def test_off_reads_nothing():
    assert guard_disk(settings("off"), None, MISSING, RegistriesConf()) == (None, {})


def test_free_only_refuses_below_the_reserve_and_names_the_filesystem(tmp_path):
    guard, unreadable = guard_disk(settings(), str(tmp_path), MISSING, RegistriesConf())
    assert (guard["ok"], guard["filesystem"], guard["registry_requests"], unreadable) == (True, str(tmp_path), 0, {})
    with pytest.raises(DiskGuardRefused) as info:
        guard_disk(settings(min_free="100%"), str(tmp_path), MISSING, RegistriesConf())
    assert info.value.details["disk_guard"]["ok"] is False
    assert info.value.message.startswith("disk guard refused the prefetch, nothing was pulled: not enough free disk")


def test_image_store_path_wins_over_the_runtimes_filesystem_and_an_unreadable_one_is_named(tmp_path):
    guard, _unreadable = guard_disk(settings(image_store_path=str(tmp_path)), "/nonexistent", MISSING, RegistriesConf())
    assert guard["filesystem"] == str(tmp_path)
    with pytest.raises(CollectionError, match="cannot read the free space of the image filesystem None"):
        guard_disk(settings(), None, MISSING, RegistriesConf())


def test_the_estimate_asks_no_registry_when_nothing_is_missing(tmp_path):
    guard, _unreadable = guard_disk(settings("estimate"), str(tmp_path), [], RegistriesConf())
    assert guard["registry_requests"] == 0 and guard["message"].startswith("nothing to pull")


def test_crio_pulls_through_registries_conf_and_containerd_through_its_hosts_under_host_root(tmp_path):
    registries = RegistriesConf()
    given = SourceSettings(
        registries=registries, overrides=RegistriesConf(), containerd_config_path="/etc/c", host_root=str(tmp_path)
    )
    asked = []
    sources, files, warnings = pull_sources(given, {"runtime_name": "cri-o"}, lambda: asked.append(1) or {})
    assert (sources, files, warnings) == (registries, {"sources_from": "registries.conf: no registries.conf"}, [])
    containerd = {"runtime_name": "containerd", "runtime_version": "1.7.24"}
    sources, files, _warnings = pull_sources(given, containerd, lambda: asked.append(1) or {})
    # The option wins over CRI Status, which is not asked.
    assert (sources.config.roots, asked) == ((f"{tmp_path}/etc/c",), [])
