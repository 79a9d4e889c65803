# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Loading PinnedImageSets and MachineConfigPools from objects, YAML files and directories."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import read_config_text, short_value
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import (
    HAS_YAML,
    YAML_IMPORT_ERROR,
    YAMLError,
    load_yaml_all,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import type_name
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    MACHINE_CONFIG_POOL_KIND,
    PINNED_IMAGE_SET_KIND,
    MachineConfigPool,
    PinnedImageSet,
    PinnedImageSetError,
    check_pool,
    check_set,
)

__all__ = ["MAX_EXPANDED_NODES", "MAX_SET_FILE_SIZE", "YAML_SUFFIXES", "load_sets", "pool_fields", "set_fields"]

YAML_SUFFIXES = (".yaml", ".yml")
# A full set (500 names of at most 447 characters) is about 250 KB; a bigger file is a wrong path or an attack.
MAX_SET_FILE_SIZE = 4 * 1024 * 1024
# Nodes of one file or input object counted as if every alias were written out: refuses alias ("billion laughs")
# bombs, which load cheaply (aliases share one object) but expand without bound wherever they are walked.
MAX_EXPANDED_NODES = 200_000


_END = object()
T = TypeVar("T", PinnedImageSet, MachineConfigPool)


def _frame(node: Union[Dict[Any, Any], List[Any]]) -> List[Any]:
    """[container, iterator over its values, its count so far (itself and its keys)]."""
    if isinstance(node, dict):
        return [node, iter(node.values()), 1 + len(node)]
    return [node, iter(node), 1]


def _expanded_size(root: Any, limit: int) -> int:
    """How many values ``root`` holds with every shared part counted each time it occurs; stops above ``limit``.

    Walks each distinct container once (sizes of finished ones are remembered), so the cost follows the
    size of the input, not of its expansion. A structure that contains itself counts as ``limit + 1``.
    """
    if not isinstance(root, (dict, list)):
        return 1
    done: Dict[int, int] = {}
    active = {id(root)}
    stack = [_frame(root)]
    while stack:
        frame = stack[-1]
        child = next(frame[1], _END)
        if child is _END:
            stack.pop()
            active.discard(id(frame[0]))
            done[id(frame[0])] = frame[2]
            if not stack:
                break
            stack[-1][2] += frame[2]
        elif not isinstance(child, (dict, list)):
            frame[2] += 1
        elif id(child) in done:
            frame[2] += done[id(child)]
        elif id(child) in active:
            return limit + 1
        else:
            active.add(id(child))
            stack.append(_frame(child))
            continue
        if stack and stack[-1][2] > limit:
            return int(stack[-1][2])
    return done[id(root)]


def _too_big(value: Any, source: Any) -> Optional[str]:
    """The problem of an input that expands beyond :data:`MAX_EXPANDED_NODES`, else None."""
    if _expanded_size(value, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
        return (
            f"{source}: expands to more than {MAX_EXPANDED_NODES} values once its YAML aliases (*name) are written "
            "out, or refers to itself; write the objects without anchors and aliases"
        )
    return None


def _yaml_documents(path: str) -> Tuple[List[Any], List[str]]:
    """(documents, problems) of a YAML file no bigger than :data:`MAX_SET_FILE_SIZE`."""
    if not HAS_YAML:  # pragma: no cover
        return [], [f"{path}: PyYAML is needed to read YAML files ({YAML_IMPORT_ERROR})"]
    try:
        text = read_config_text(path, "set file", MAX_SET_FILE_SIZE, PinnedImageSetError)
    except PinnedImageSetError as exc:
        return [], exc.problems
    try:
        documents = load_yaml_all(text)
    except YAMLError as exc:
        return [], [f"{path}: not valid YAML: {exc}".replace("\n", " ")]
    except RecursionError:  # the pure-Python loader on deep nesting (libyaml stops at 1000 levels)
        return [], [f"{path}: not valid YAML: nested too deeply"]
    problem = _too_big(documents, path)
    return ([], [problem]) if problem else (documents, [])


def _expand(
    obj: Any,
    source: str,
    from_file: bool,
    sets: List[PinnedImageSet],
    pools: List[MachineConfigPool],
    problems: List[str],
) -> None:
    """Sort one object into sets or pools; files ignore other kinds, direct input does not."""
    if obj is None and from_file:
        return
    if isinstance(obj, PinnedImageSet):
        sets.append(obj)
        return
    if isinstance(obj, MachineConfigPool):
        pools.append(obj)
        return
    if not isinstance(obj, dict):
        problems.append(f"{source}: expected a Kubernetes object (mapping), got {type_name(obj)}")
        return
    kind = obj.get("kind")
    if kind == "List" or (kind is None and isinstance(obj.get("items"), list) and "spec" not in obj):
        items = obj.get("items")
        if not isinstance(items, list):
            problems.append(f"{source}: List has no items list")
            return
        for index, item in enumerate(items):
            _expand(item, f"{source} items[{index}]", from_file, sets, pools, problems)
        return
    if kind == PINNED_IMAGE_SET_KIND:
        image_set, found = check_set(obj, source)
        problems.extend(found)
        if image_set is not None:
            sets.append(image_set)
    elif kind == MACHINE_CONFIG_POOL_KIND:
        pool, found = check_pool(obj, source)
        problems.extend(found)
        if pool is not None:
            pools.append(pool)
    elif not from_file:
        problems.append(
            f"{source}: kind is {short_value(kind)}; expected {PINNED_IMAGE_SET_KIND} or {MACHINE_CONFIG_POOL_KIND}"
        )


def _load_file(path: str, sets: List[PinnedImageSet], pools: List[MachineConfigPool], problems: List[str]) -> None:
    documents, found = _yaml_documents(path)
    problems.extend(found)
    many = len(documents) > 1
    for index, document in enumerate(documents):
        source = f"{path} (document {index + 1})" if many else path
        _expand(document, source, True, sets, pools, problems)


def set_fields(image_set: PinnedImageSet) -> Tuple[Any, ...]:
    """What makes two sets of one name the same set."""
    return (image_set.labels, image_set.images, image_set.pool_selector)


def pool_fields(pool: MachineConfigPool) -> Tuple[Any, ...]:
    """What makes two pools of one name the same pool."""
    return (pool.labels, pool.machine_config_selector, pool.node_selector, pool.pinned_image_sets)


def _unique_by_name(
    items: List[T], kind: str, fields: Callable[[T], Tuple[Any, ...]], note: str, problems: List[str]
) -> List[T]:
    """``items`` without exact repeats of a name; a name defined twice differently is a problem."""
    unique: List[T] = []
    by_name: Dict[str, T] = {}
    for item in items:
        first = by_name.get(item.name)
        if first is None:
            by_name[item.name] = item
            unique.append(item)
        elif fields(first) != fields(item):
            problems.append(
                f"{item.source or 'input'}: {kind} {item.name!r} is also defined, differently, "
                f"in {first.source or 'input'}{note}"
            )
    return unique


def load_sets(sources: Any) -> Tuple[List[PinnedImageSet], List[MachineConfigPool]]:
    """Load and validate sets and pools from dicts, instances, YAML files and directories.

    ``sources`` is a list (or one item) of: a PinnedImageSet / MachineConfigPool object dict (or a ``kind: List`` of
    them), an instance, or a path to a YAML file (multi-document; other kinds are ignored) or a directory
    (``*.yaml`` / ``*.yml``, sorted, not recursive). Sets with the same name must be identical (exact repeats are
    dropped). A file above ``MAX_SET_FILE_SIZE`` is refused unread, and one holding more than
    ``MAX_EXPANDED_NODES`` values once its YAML aliases are counted out (or containing itself) unexpanded.

    Returns ``(sets, pools)``; raises PinnedImageSetError naming every problem found in any source.
    """
    if sources is None:
        sources = []
    elif isinstance(sources, (str, bytes, os.PathLike, dict, PinnedImageSet, MachineConfigPool)):
        sources = [sources]
    sets: List[PinnedImageSet] = []
    pools: List[MachineConfigPool] = []
    problems: List[str] = []
    for position, item in enumerate(sources):
        if isinstance(item, (str, bytes, os.PathLike)):
            path = os.fsdecode(item)
            if os.path.isdir(path):
                try:
                    names = sorted(n for n in os.listdir(path) if n.endswith(YAML_SUFFIXES))
                except OSError as exc:
                    problems.append(f"{path}: cannot list directory: {exc.strerror or exc}")
                    continue
                for name in names:
                    full = os.path.join(path, name)
                    if os.path.isfile(full):
                        _load_file(full, sets, pools, problems)
            elif os.path.exists(path):
                _load_file(path, sets, pools, problems)
            else:
                problems.append(f"{path}: no such file or directory")
        else:
            problem = _too_big(item, f"sets[{position}]")
            if problem:
                problems.append(problem)
            else:
                _expand(item, f"sets[{position}]", False, sets, pools, problems)

    unique_sets = _unique_by_name(
        sets, PINNED_IMAGE_SET_KIND, set_fields, "; set names are cluster-wide and must be unique", problems
    )
    unique_pools = _unique_by_name(pools, MACHINE_CONFIG_POOL_KIND, pool_fields, "", problems)
    if problems:
        raise PinnedImageSetError(problems)
    return unique_sets, unique_pools
