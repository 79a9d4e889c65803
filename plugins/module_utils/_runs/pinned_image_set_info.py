# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pinned_image_set_info module's run (controller side): which sets each pool gets and what each node pins.

Sets and pools come from the cluster (optional), then from set objects and files (``_sets.loading.load_sets``),
then the ``pools`` option; a later source replaces an earlier item of the same name, with a warning when they
differ (unlike ``load_sets``, which refuses two different definitions within one source).
``InfoRequest.from_params(params)``, ``describe_sets(request, tmpdir) -> Outcome``; failures are CollectionErrors.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, TypeVar

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import (
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    K8sClient,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection
from ansible_collections.pinned.images.plugins.module_utils._k8s.objects import KubeObject
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import k8s_connection
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome, hiding
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets, pool_fields, set_fields
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    MACHINE_CONFIG_POOL_KIND,
    MASTER_POOL,
    PINNED_IMAGE_SET_KIND,
    WORKER_POOL,
    MachineConfigPool,
    PinnedImageSet,
    PinnedImageSetError,
    as_pool,
    default_pool,
    validate_pool,
    validate_set,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.pools import (
    images_for_node,
    images_for_pool,
    missing_set_refs,
    pools_for_node,
    set_matches_pool,
)

__all__ = ["InfoRequest", "NodeLabels", "describe_sets", "merge_by_name", "run"]


class _Named(Protocol):
    """A set or a pool: what merge_by_name needs of an item."""

    @property
    def name(self) -> str: ...

    @property
    def source(self) -> Optional[str]: ...


_Item = TypeVar("_Item", bound=_Named)
# A node as the module takes and gives it: {name, labels}.
NodeLabels = Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class InfoRequest:
    """The module's options: where the sets and pools come from, the nodes to place, the connection."""

    cluster: bool
    paths: List[str]
    sets: List[Any]
    pools: Optional[List[Any]]
    nodes: Optional[List[Dict[str, Any]]]
    connection: K8sConnection

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "InfoRequest":
        """The options as the argument spec checked them; the sets and pools are checked as they are read."""
        return cls(
            cluster=params["cluster"],
            paths=params["paths"],
            sets=params["sets"],
            pools=params["pools"],
            nodes=params["nodes"],
            connection=k8s_connection(params),
        )


def _read_cluster(
    connection: K8sConnection, tmpdir: Optional[str], want_nodes: bool, warnings: List[str]
) -> Tuple[List[KubeObject], List[KubeObject], Optional[List[NodeLabels]]]:
    """(set objects, pool objects, nodes or None) from the cluster."""
    if not HAS_KUBERNETES:
        raise CollectionError(missing_required_lib("kubernetes"), details={"exception": str(KUBERNETES_IMPORT_ERROR)})
    with K8sClient.connect(connection, tmpdir=tmpdir) as client:
        sets = client.list(API_VERSION, PINNED_IMAGE_SET_KIND)
        pools = client.list(API_VERSION, MACHINE_CONFIG_POOL_KIND)
        nodes = None
        if want_nodes:
            nodes = [
                {"name": n["metadata"]["name"], "labels": n["metadata"].get("labels") or {}}
                for n in client.list("v1", "Node")
            ]
        warnings.extend(f"API server: {warning}" for warning in client.warnings)
    return sets, pools, nodes


def _cluster_items(
    objects: List[KubeObject], kind: str, validate: Callable[..., _Item], warnings: List[str]
) -> List[_Item]:
    """The valid cluster objects; an invalid one is skipped with a warning (the cluster is not ours to fix)."""
    items = []
    for obj in objects:
        try:
            items.append(validate(obj, source="cluster"))
        except PinnedImageSetError as exc:
            warnings.append(f"skipped a cluster {kind}: {exc}")
    return items


def merge_by_name(
    kind: str, base: Sequence[_Item], overrides: Sequence[_Item], key: Callable[[_Item], object], warnings: List[str]
) -> List[_Item]:
    """Items of ``overrides`` replace ``base`` items of the same name; order: base order, then new ones."""
    merged = {item.name: item for item in base}
    order = [item.name for item in base]
    for item in overrides:
        old = merged.get(item.name)
        if old is None:
            order.append(item.name)
        elif key(old) != key(item):
            warnings.append(f"{kind} {item.name!r} from {item.source} replaces the one from {old.source}")
        merged[item.name] = item
    return [merged[name] for name in order]


def _set_row(image_set: PinnedImageSet, pools: List[MachineConfigPool]) -> Dict[str, Any]:
    return {
        "name": image_set.name,
        "labels": dict(image_set.labels),
        "images": list(image_set.images),
        "pool_selector": copy.deepcopy(image_set.pool_selector),
        "source": image_set.source,
        "pools": [p.name for p in pools if set_matches_pool(p, image_set)],
    }


def _pool_row(pool: MachineConfigPool, sets: List[PinnedImageSet]) -> Dict[str, Any]:
    images, set_names = images_for_pool(pool, sets)
    return {
        "name": pool.name,
        "labels": dict(pool.labels),
        "machine_config_selector": copy.deepcopy(pool.machine_config_selector),
        "node_selector": copy.deepcopy(pool.node_selector),
        "pinned_image_sets": list(pool.pinned_image_sets),
        "source": pool.source,
        "sets": set_names,
        "images": images,
        "missing_sets": missing_set_refs(pool, sets),
    }


def _node_row(node: NodeLabels, pools: List[MachineConfigPool], sets: List[PinnedImageSet]) -> Dict[str, Any]:
    labels = node.get("labels") or {}
    entry: Dict[str, Any] = {"name": node["name"], "pools": [], "images": [], "sets": []}
    try:
        entry["pools"] = [p.name for p in pools_for_node(labels, pools)]
        entry["images"], entry["sets"] = images_for_node(labels, pools, sets)
    except PinnedImageSetError as exc:
        entry["error"] = str(exc)
    return entry


def describe_sets(request: InfoRequest, tmpdir: Optional[str] = None) -> Outcome:
    """The module's ``sets``, ``pools`` and ``nodes``; bad files or pools raise PinnedImageSetError."""
    warnings: List[str] = []
    cluster_sets: List[PinnedImageSet] = []
    cluster_pools: List[MachineConfigPool] = []
    cluster_nodes = None
    if request.cluster:
        set_objects, pool_objects, cluster_nodes = _read_cluster(
            request.connection, tmpdir, request.nodes is None, warnings
        )
        cluster_sets = _cluster_items(set_objects, PINNED_IMAGE_SET_KIND, validate_set, warnings)
        cluster_pools = _cluster_items(pool_objects, MACHINE_CONFIG_POOL_KIND, validate_pool, warnings)
    sources = list(request.sets) + list(request.paths)
    file_sets, file_pools = load_sets(sources) if sources else ([], [])
    extra_pools = []
    for value in request.pools or []:
        pool = as_pool(value)
        extra_pools.append(dataclasses.replace(pool, source=pool.source or "pools"))
    sets = merge_by_name(PINNED_IMAGE_SET_KIND, cluster_sets, file_sets, set_fields, warnings)
    pools = merge_by_name(MACHINE_CONFIG_POOL_KIND, cluster_pools, file_pools, pool_fields, warnings)
    pools = merge_by_name(MACHINE_CONFIG_POOL_KIND, pools, extra_pools, pool_fields, warnings)
    if not pools:
        pools = [dataclasses.replace(default_pool(name), source="default") for name in (MASTER_POOL, WORKER_POOL)]
    nodes = request.nodes if request.nodes is not None else (cluster_nodes or [])
    result = dict(
        changed=False,
        sets=[_set_row(s, pools) for s in sets],
        pools=[_pool_row(p, sets) for p in pools],
        nodes=[_node_row(n, pools, sets) for n in nodes],
    )
    return Outcome(result, warnings)


def run(invocation: Invocation) -> Outcome:
    """The module's run; the connection's secrets are hidden from its result and its failure."""
    request = InfoRequest.from_params(invocation.params)
    return hiding(request.connection.secrets(), lambda: describe_sets(request, invocation.tmpdir))
