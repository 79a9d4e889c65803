# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pinned_image_status module's run (controller side): its options as a StatusRequest, then each node's status
written by ``_openshift/node_status.write_node_status``."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import (
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    K8sClient,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection
from ansible_collections.pinned.images.plugins.module_utils._openshift.node_status import (
    NodeParams,
    cluster_generations,
    live_node,
    summarise,
    write_node_status,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import k8s_connection
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["StatusRequest", "publish_statuses", "run"]


@dataclass(frozen=True)
class StatusRequest:
    """The pinned_image_status module's options: the nodes' statuses (as the argument spec gives them), the
    annotation, whether to read the clusters' set generations, and the connection."""

    nodes: List[NodeParams]
    annotation: str
    cluster_generations: bool
    connection: K8sConnection


def publish_statuses(
    request: StatusRequest, check_mode: bool, tmpdir: Optional[str], warnings: List[str], now: Optional[str] = None
) -> Dict[str, Any]:
    """The pinned_image_status module: write each node's status annotation; the module's result.

    Warnings are appended to ``warnings`` as they come, so a failure keeps them. A failure is a CollectionError
    whose details hold the result so far (``changed``, ``nodes``, ``missing``) and, from the API, ``status`` and
    ``reason``.
    """
    if not HAS_KUBERNETES:
        raise CollectionError(missing_required_lib("kubernetes"), details={"exception": str(KUBERNETES_IMPORT_ERROR)})
    annotation = request.annotation
    now = now or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    result: Dict[str, Any] = {"changed": False, "nodes": [], "missing": []}
    try:
        with K8sClient.connect(request.connection, tmpdir=tmpdir) as client:
            generations = cluster_generations(client, warnings) if request.cluster_generations else {}
            live = {
                (node.get("metadata") or {}).get("name"): live_node(node, annotation)
                for node in client.list("v1", "Node")
            }
            for node in request.nodes:
                name = node["name"]
                written = write_node_status(
                    client, node, live.get(name), annotation, now, generations, check_mode, warnings
                )
                if written is None:
                    result["missing"].append(name)
                    continue
                status, changed, live[name] = written
                result["changed"] |= changed
                result["nodes"].append(
                    {"name": name, "changed": changed, "summary": summarise(status), "status": status}
                )
            warnings.extend(f"API server: {warning}" for warning in client.warnings)
    except CollectionError as exc:
        raise CollectionError(exc.problems, message=exc.message, details=dict(result, **exc.details)) from exc
    if result["missing"]:
        warnings.append(
            "the cluster has no node named " + ", ".join(result["missing"]) + "; their status was not written"
        )
    return result


def run(invocation: Invocation) -> Outcome:
    """The module's run. The warnings are given on failure too: an unreadable annotation seen before the failure is
    still worth one."""
    params = invocation.params
    request = StatusRequest(
        nodes=params["nodes"],
        annotation=params["annotation"],
        cluster_generations=params["cluster_generations"],
        connection=k8s_connection(params),
    )
    secrets = frozenset(request.connection.secrets())
    warnings: List[str] = []
    try:
        result = publish_statuses(request, invocation.check_mode, invocation.tmpdir, warnings)
    except CollectionError as error:
        return Outcome(warnings=warnings, secrets=secrets, failure=error)
    return Outcome(result, warnings, secrets)
