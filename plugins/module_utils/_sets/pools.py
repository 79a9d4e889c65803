# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Which sets a MachineConfigPool gets and which pools a node is in, as the machine-config-operator decides."""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import unique_sorted_images
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import (
    label_selector_matches,
    selector_is_empty,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    MASTER_POOL,
    OS_LABEL,
    WORKER_POOL,
    MachineConfigPool,
    PinnedImageSet,
    PinnedImageSetError,
    as_pool,
    default_pool,
)

__all__ = [
    "describe_sources",
    "empty_selection_message",
    "images_for_node",
    "images_for_pool",
    "images_for_sets",
    "missing_set_refs",
    "pools_for_node",
    "resolve_pools",
    "set_matches_pool",
    "sets_for_pool",
    "wanted_images",
]


def set_matches_pool(pool: Any, image_set: PinnedImageSet) -> bool:
    """True when the pool's non-empty machineConfigSelector selects the set's labels, or the set selects the pool.

    The MCO's controller skips a pool whose selector is missing or empty and overwrites spec.pinnedImageSets
    with what the selector matches, so the pool's own list decides nothing.
    """
    pool = as_pool(pool)
    selector = pool.machine_config_selector
    if not selector_is_empty(selector) and label_selector_matches(selector, image_set.labels):
        return True
    if image_set.pool_selector is not None and label_selector_matches(image_set.pool_selector, pool.labels):
        return True
    return False


def sets_for_pool(pool: Any, sets: Iterable[PinnedImageSet]) -> List[PinnedImageSet]:
    """The sets that belong to ``pool``, in the order of ``sets``."""
    pool = as_pool(pool)
    result, seen = [], set()
    for image_set in sets:
        if image_set.name not in seen and set_matches_pool(pool, image_set):
            seen.add(image_set.name)
            result.append(image_set)
    return result


def missing_set_refs(pool: Any, sets: Iterable[PinnedImageSet]) -> List[str]:
    """Names the pool references in spec.pinnedImageSets that are not among ``sets``."""
    pool = as_pool(pool)
    known = {s.name for s in sets}
    return [name for name in pool.pinned_image_sets if name not in known]


def pools_for_node(node_labels: Optional[Mapping[str, str]], pools: Iterable[Any]) -> List[MachineConfigPool]:
    """The pools a node belongs to, with the MCO's master > custom > worker rule: pools whose non-empty nodeSelector
    matches (none for a Windows node), then ``[custom|master, worker]``, ``[master]`` or ``[worker]``; more than one
    custom pool raises PinnedImageSetError."""
    node_labels = node_labels or {}
    if node_labels.get(OS_LABEL) == "windows":
        return []
    master = worker = None
    custom = []
    for pool in (as_pool(p) for p in pools):
        selector = pool.node_selector
        if selector_is_empty(selector) or not label_selector_matches(selector, node_labels):
            continue
        if pool.name == MASTER_POOL:
            master = pool
        elif pool.name == WORKER_POOL:
            worker = pool
        else:
            custom.append(pool)
    if len(custom) > 1:
        raise PinnedImageSetError(
            f"the node belongs to {len(custom)} custom pools ({', '.join(p.name for p in custom)}); "
            "the machine-config-operator allows at most one"
        )
    if custom:
        return [master or custom[0]] + ([worker] if worker else [])
    if master:
        return [master]
    return [worker] if worker else []


def images_for_sets(sets: Iterable[PinnedImageSet]) -> List[str]:
    """The union of the sets' images, blank names dropped, de-duplicated, sorted."""
    return unique_sorted_images(name for image_set in sets for name in image_set.images)


def images_for_pool(pool: Any, sets: Iterable[PinnedImageSet]) -> Tuple[List[str], List[str]]:
    """(images, set_names) of one pool."""
    chosen = sets_for_pool(pool, sets)
    return images_for_sets(chosen), [s.name for s in chosen]


def images_for_node(
    node_labels: Optional[Mapping[str, str]], pools: Iterable[Any], sets: Iterable[PinnedImageSet]
) -> Tuple[List[str], List[str]]:
    """(images, set_names): the union over the sets of every pool the node belongs to."""
    chosen, seen = [], set()
    for pool in pools_for_node(node_labels, pools):
        for image_set in sets_for_pool(pool, sets):
            if image_set.name not in seen:
                seen.add(image_set.name)
                chosen.append(image_set)
    return images_for_sets(chosen), [s.name for s in chosen]


def resolve_pools(values: Iterable[Any], known: Iterable[MachineConfigPool]) -> List[MachineConfigPool]:
    """Pools given by name or object; a name among ``known`` (the pools of the set files) means that pool, any
    other name a pool shaped like OpenShift's built-in ones (``default_pool``). Raises PinnedImageSetError."""
    by_name = {pool.name: pool for pool in known}
    return [by_name[value] if isinstance(value, str) and value in by_name else as_pool(value) for value in values]


def wanted_images(
    images: Optional[List[str]],
    sets: Any,
    pools: Optional[List[Any]],
    node_labels: Optional[Mapping[str, str]],
    validate: Callable[[List[str]], List[str]],
) -> Tuple[List[str], List[str]]:
    """(images, set_names) selected by a pinning module's options; raises PinnedImageSetError.

    Without ``sets``: ``validate(images or [])`` and no set names. With ``node_labels``: the sets of the node's
    pools among the pools found in the set files plus ``pools`` (OpenShift's ``master`` and ``worker`` when
    there are none). With ``pools`` only: the sets of those pools. Otherwise every set.
    """
    if sets is None:
        return validate(images or []), []
    loaded, file_pools = load_sets(sets)
    given = resolve_pools(pools or [], file_pools)
    if node_labels is not None:
        names = {pool.name for pool in file_pools}
        candidates = file_pools + [pool for pool in given if pool.name not in names]
        if not candidates:
            candidates = [default_pool("master"), default_pool("worker")]
        return images_for_node(node_labels, candidates, loaded)
    if pools is not None:
        chosen, seen = [], set()
        for pool in given:
            for image_set in sets_for_pool(pool, loaded):
                if image_set.name not in seen:
                    seen.add(image_set.name)
                    chosen.append(image_set)
        return images_for_sets(chosen), [s.name for s in chosen]
    return images_for_sets(loaded), [s.name for s in loaded]


def describe_sources(sets: Iterable[Any]) -> str:
    """The set sources as a user gave them: paths as written, objects by their name."""
    described = []
    for source in sets:
        if isinstance(source, Mapping):
            name = (source.get("metadata") or {}).get("name") if isinstance(source.get("metadata"), Mapping) else None
            described.append("the object %s" % (name or "without a name"))
        else:
            described.append(str(source))
    return ", ".join(described) or "no source"


def empty_selection_message(
    images: Optional[List[str]],
    sets: Any,
    pools: Optional[List[Any]],
    node_labels: Optional[Mapping[str, str]],
    set_names: List[str],
) -> str:
    """What a selection that resolved to no image looked at, for the error that refuses to empty the pins."""
    if sets is None:
        return "images is empty"
    looked = "sets (%s) selected no image" % describe_sources(sets)
    if node_labels is not None:
        looked += " for a node with the labels %s" % ", ".join("%s=%s" % item for item in sorted(node_labels.items()))
    elif pools is not None:
        names = [pool if isinstance(pool, str) else (pool.get("metadata") or {}).get("name") for pool in pools]
        looked += " for the pools %s" % ", ".join(str(name) for name in names)
    return looked + " (sets found: %s)" % (", ".join(set_names) or "none")
