# SPDX-License-Identifier: GPL-3.0-or-later
"""Pools given to a module by name or object, resolved against the pools of the set files."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    PinnedImageSetError,
    default_pool,
    validate_pool,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.pools import resolve_pools


def pool(name: str, team: str) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "MachineConfigPool",
        "metadata": {"name": name},
        "spec": {"machineConfigSelector": {"matchLabels": {"team": team}}},
    }


def test_a_name_means_the_pool_of_the_set_files_else_an_openshift_shaped_one():
    worker = validate_pool(pool("worker", "w"))
    resolved = resolve_pools(["worker", "master", pool("infra", "infra")], [worker])
    assert resolved[0] is worker and resolved[1] == default_pool("master")
    assert resolved[2].name == "infra" and resolved[2].machine_config_selector == {"matchLabels": {"team": "infra"}}


def test_a_bad_name_or_object_is_refused():
    with pytest.raises(PinnedImageSetError):
        resolve_pools(["Not A Name"], [])
    with pytest.raises(PinnedImageSetError):
        resolve_pools([{"kind": "MachineConfigPool"}], [])
