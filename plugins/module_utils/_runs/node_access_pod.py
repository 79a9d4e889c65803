# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node_access_pod module's run (controller side): ``state=present`` opens a pod on each node
(``_node_access/pods.open_pods``), ``state=absent`` removes the pods of the run."""

from __future__ import annotations

from typing import Any, Dict

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import K8sClient
from ansible_collections.pinned.images.plugins.module_utils._node_access.pods import (
    PodSettings,
    open_pods,
    remove_pods,
    selector,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import k8s_connection
from ansible_collections.pinned.images.plugins.module_utils._runs.options import Problems
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["pod_settings", "run"]


def pod_settings(params: Dict[str, Any]) -> PodSettings:
    """The pods' settings of the options, every problem in one error."""
    problems = Problems()
    problems.above_zero(params, "lifetime")
    problems.above_zero(params, "start_timeout")
    if params["state"] == "present" and not params["image"]:
        problems.add(
            "image is required with state=present: an image with Python, as registry.access.redhat.com/ubi9/python-311"
        )
    if not params["host_root"].startswith("/") or params["host_root"].rstrip("/") == "":
        problems.add(f"host_root must be an absolute path other than /, got {params['host_root']!r}")
    problems.raise_any()
    return PodSettings(
        image=params["image"] or "",
        namespace=params["namespace"],
        service_account=params["service_account"] or None,
        priority_class=params["priority_class"] or None,
        host_root=params["host_root"],
        labels={str(key): str(value) for key, value in (params["labels"] or {}).items()},
        lifetime=params["lifetime"],
        start_timeout=params["start_timeout"],
        image_pull_policy=params["image_pull_policy"],
    )


def run(invocation: Invocation) -> Outcome:
    """The module's run: the pods of the nodes and their state, or the pods removed."""
    params = dict(invocation.params)
    connection = k8s_connection(params)
    secrets = frozenset(connection.secrets())
    try:
        settings = pod_settings(params)
        with K8sClient.connect(connection, invocation.tmpdir) as client:
            if params["state"] == "absent":
                removed = (
                    [] if invocation.check_mode else remove_pods(client, settings.namespace, selector(params["run_id"]))
                )
                return Outcome(dict(changed=bool(removed), removed=removed, pods=[]), list(client.warnings), secrets)
            if invocation.check_mode:
                return Outcome(dict(changed=False, removed=[], pods=[]), secrets=secrets)
            result = open_pods(client, params["nodes"], params["run_id"], settings)
            warnings = list(client.warnings)
    except CollectionError as error:
        return Outcome(secrets=secrets, failure=error)
    return Outcome(dict(result, changed=True), warnings, secrets)
