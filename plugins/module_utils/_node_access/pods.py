# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node access pods (controller side): one short-lived privileged pod per node, as ``oc debug node/NAME`` makes,
through which the node plays run with the ``kubernetes.core.kubectl`` connection.

``PodSettings``: image, namespace, service account, priority class, where the host's ``/`` is mounted, labels, how
    long a pod may live, how long it may take to start.
``pod_name(node, run_id)``, ``pod_manifest(node, run_id, settings)``: the pod of a node in a run, labelled with the
    run and the node (``selector``) so that a later run finds the leftovers of an interrupted one.
``start_problem(pod) -> str | None``: why a pod will not run (image pull, config, scheduling, a failed container);
    None while it may still start. ``is_running(pod)``: its container runs.
``open_pods(client, nodes, run_id, settings, clock, sleep)``: remove the leftovers on these nodes, create the pods
    (owned by their Node when it can be read), wait until each runs or fails; the state of each (``PodState``). ``remove_pods(client, namespace, run_id)``.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TypedDict

from ansible_collections.pinned.images.plugins.module_utils._k8s.client import K8sClient
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._k8s.objects import KubeObject

__all__ = [
    "CONTAINER",
    "DEFAULT_HOST_ROOT",
    "MANAGED_LABEL",
    "NODE_LABEL",
    "RUN_LABEL",
    "PodSettings",
    "PodState",
    "is_running",
    "label_value",
    "open_pods",
    "pending_reason",
    "pod_manifest",
    "pod_name",
    "remove_ended_pods",
    "remove_pods",
    "selector",
    "start_problem",
]

MANAGED_LABEL = "pinned.images/node-access"
RUN_LABEL = "pinned.images/run"
NODE_LABEL = "pinned.images/node"
CONTAINER = "node-access"
DEFAULT_HOST_ROOT = "/host"
# Waiting reasons of a container that does not start by waiting longer (the kubelet's and the runtimes' names).
_FATAL_WAITING = (
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "CrashLoopBackOff",
)
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9._-]")


class PodState(TypedDict):
    """One node's pod: its name, whether it runs, and why not (empty when it does)."""

    node: str
    name: str
    namespace: str
    running: bool
    reason: str


@dataclass(frozen=True)
class PodSettings:
    """How the pods are made; ``lifetime``: seconds a pod lives at most (``activeDeadlineSeconds`` and its
    ``sleep``), so that the pods of an interrupted run end on their own."""

    image: str
    namespace: str
    service_account: Optional[str] = None
    priority_class: Optional[str] = None
    host_root: str = DEFAULT_HOST_ROOT
    labels: Mapping[str, str] = field(default_factory=dict)
    lifetime: int = 14400
    start_timeout: float = 120.0
    image_pull_policy: str = "IfNotPresent"


def label_value(text: str) -> str:
    """``text`` as a label value (at most 63 characters of ``[A-Za-z0-9._-]``, alphanumeric at both ends); a value
    that had to be cut ends in a hash of the whole, so that two long names stay apart."""
    value = _LABEL_VALUE.sub("-", text).strip("._-")
    if len(value) <= 63 and value == text:
        return value
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    return (value[:52].rstrip("._-") + "-" + digest).lstrip("._-")


def pod_name(node: str, run_id: str) -> str:
    """``pinned-images-<node>-<hash of run and node>``: a DNS label, new for each run, so a pod of an earlier run
    that is still terminating never blocks it."""
    base = re.sub(r"[^a-z0-9-]", "-", node.lower()).strip("-")[:40].strip("-")
    digest = hashlib.sha256(f"{run_id}\0{node}".encode()).hexdigest()[:8]
    return f"pinned-images-{base}-{digest}" if base else f"pinned-images-{digest}"


def selector(run_id: Optional[str] = None, node: Optional[str] = None) -> Dict[str, str]:
    """The labels of the pods of ``run_id`` on ``node`` (each None: any)."""
    labels = {MANAGED_LABEL: "true"}
    if run_id is not None:
        labels[RUN_LABEL] = label_value(run_id)
    if node is not None:
        labels[NODE_LABEL] = label_value(node)
    return labels


def pod_manifest(node: str, run_id: str, settings: PodSettings) -> KubeObject:
    """The privileged pod of ``node``: pinned to it (``nodeName``, so no scheduler and every taint tolerated), the
    host's PID and network namespaces, its ``/`` at ``settings.host_root``, alive for ``settings.lifetime`` s."""
    spec: Dict[str, Any] = {
        "nodeName": node,
        "hostPID": True,
        "hostNetwork": True,
        "hostIPC": True,
        "restartPolicy": "Never",
        "activeDeadlineSeconds": settings.lifetime,
        "terminationGracePeriodSeconds": 0,
        "enableServiceLinks": False,
        # Nothing in the pod talks to the API server: no service account token on every node.
        "automountServiceAccountToken": False,
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": CONTAINER,
                "image": settings.image,
                "imagePullPolicy": settings.image_pull_policy,
                # A bounded life even where activeDeadlineSeconds is not enforced (a kubelet that is restarting).
                "command": ["sleep", str(settings.lifetime)],
                "securityContext": {"privileged": True, "runAsUser": 0},
                # Not BestEffort, the first evicted under the disk pressure big pulls cause; no limits, as the
                # module's memory follows the images.
                "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
                "volumeMounts": [{"name": "host", "mountPath": settings.host_root}],
            }
        ],
        "volumes": [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}],
    }
    if settings.service_account:
        spec["serviceAccountName"] = settings.service_account
    if settings.priority_class:
        spec["priorityClassName"] = settings.priority_class
    labels = dict(settings.labels)
    labels.update(selector(run_id, node))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(node, run_id),
            "namespace": settings.namespace,
            "labels": labels,
            "annotations": {"pinned.images/node": node, "pinned.images/run": run_id},
        },
        "spec": spec,
    }


def is_running(pod: Mapping[str, Any]) -> bool:
    """The pod is Running and its container has started."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    containers = status.get("containerStatuses") or []
    return any((item.get("state") or {}).get("running") is not None for item in containers) or not containers


def start_problem(pod: Mapping[str, Any]) -> Optional[str]:
    """Why ``pod`` will not run, in the pod's own words (container waiting or terminated reason and message, the
    pod's phase, an unschedulable condition); None while it may still start."""
    status = pod.get("status") or {}
    for item in status.get("containerStatuses") or []:
        state = item.get("state") or {}
        waiting = state.get("waiting") or {}
        if waiting.get("reason") in _FATAL_WAITING:
            return _worded(waiting.get("reason"), waiting.get("message"))
        terminated = state.get("terminated")
        if terminated is not None:
            return _worded(
                terminated.get("reason") or "Terminated",
                terminated.get("message") or f"the container exited with code {terminated.get('exitCode')}",
            )
    phase = status.get("phase")
    if phase in ("Failed", "Succeeded"):
        return _worded(status.get("reason") or phase, status.get("message") or f"the pod is {phase}")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            if condition.get("reason") == "Unschedulable":
                return _worded(condition.get("reason"), condition.get("message"))
    return None


def pending_reason(pod: Mapping[str, Any]) -> str:
    """What a pod that has not started yet is waiting for, for the message of a timeout."""
    status = pod.get("status") or {}
    for item in status.get("containerStatuses") or []:
        waiting = (item.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return _worded(waiting.get("reason"), waiting.get("message"))
    for condition in status.get("conditions") or []:
        if condition.get("status") == "False" and (condition.get("reason") or condition.get("message")):
            return _worded(condition.get("reason") or condition.get("type"), condition.get("message"))
    return f"phase {status.get('phase') or 'unknown'}"


def _worded(reason: Any, message: Any) -> str:
    return f"{reason}: {message}" if message else str(reason)


def _failure(name: str, settings: PodSettings, why: str) -> str:
    return f"the node access pod {name} in namespace {settings.namespace} did not start: {why}"


def _node_owner(client: K8sClient, node: str) -> Optional[Dict[str, Any]]:
    """The Node as the pod's owner, so that the garbage collector removes the pod with its node; None when the
    Node cannot be read (no RBAC to get nodes: the labels still find the pod)."""
    try:
        found = client.get("v1", "Node", node)
    except K8sError:
        return None
    uid = ((found or {}).get("metadata") or {}).get("uid")
    if not uid:
        return None
    return {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}


def remove_pods(client: K8sClient, namespace: str, labels: Mapping[str, str]) -> List[str]:
    """Delete the pods of ``namespace`` with ``labels``; the names deleted."""
    removed = []
    for pod in client.list("v1", "Pod", dict(labels), namespace=namespace):
        name = pod["metadata"]["name"]
        if client.delete("v1", "Pod", name, namespace):
            removed.append(name)
    return sorted(removed)


def remove_ended_pods(client: K8sClient, nodes: Sequence[str], run_id: str, namespace: str) -> List[str]:
    """Delete the pods of other runs on ``nodes`` that have ended (phase Succeeded or Failed, as at their
    deadline); the names deleted. A pod that runs or is starting may belong to a run still under way (its execs
    would die with it), so it stays: the node lock keeps two runs from pulling on a node at once, and an
    interrupted run's pods end at their own deadline or go with ``kubectl delete pod -l`` (docs/nodes.md)."""
    wanted = {label_value(node) for node in nodes}
    removed = []
    for pod in client.list("v1", "Pod", selector(), namespace=namespace):
        labels = pod["metadata"].get("labels") or {}
        if labels.get(NODE_LABEL) not in wanted or labels.get(RUN_LABEL) == label_value(run_id):
            continue
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            continue
        name = pod["metadata"]["name"]
        if client.delete("v1", "Pod", name, namespace):
            removed.append(name)
    return sorted(removed)


def open_pods(
    client: K8sClient,
    nodes: Sequence[str],
    run_id: str,
    settings: PodSettings,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    interval: float = 0.5,
) -> Dict[str, Any]:
    """Remove the ended pods earlier runs left on ``nodes`` (``remove_ended_pods``), create one pod per node and wait until each runs, fails or
    ``settings.start_timeout`` passes; ``{pods: [PodState], removed: [names]}``. A pod the API refuses (RBAC,
    admission) fails its node with the API's error; listing the leftovers fails the whole call (K8sError)."""
    removed = remove_ended_pods(client, nodes, run_id, settings.namespace)
    states: Dict[str, PodState] = {}
    for node in nodes:
        manifest = pod_manifest(node, run_id, settings)
        owner = _node_owner(client, node)
        if owner is not None:
            manifest["metadata"]["ownerReferences"] = [owner]
        name = manifest["metadata"]["name"]
        state = PodState(node=node, name=name, namespace=settings.namespace, running=False, reason="")
        try:
            client.create(manifest)
        except K8sError as error:
            if error.status != 409:
                state["reason"] = _failure(name, settings, error.message)
        states[node] = state
    deadline = clock() + settings.start_timeout
    waiting = [node for node in nodes if not states[node]["reason"]]
    while waiting:
        # One list of the run's pods per round, not a get per pod: a big cluster has a pod per node.
        found = {
            pod["metadata"]["name"]: pod
            for pod in client.list("v1", "Pod", selector(run_id), namespace=settings.namespace)
        }
        for node in list(waiting):
            state = states[node]
            pod = found.get(state["name"])
            if pod is None:
                state["reason"] = _failure(state["name"], settings, "the pod was deleted")
            elif is_running(pod):
                state["running"] = True
            else:
                problem = start_problem(pod)
                if problem is None and clock() < deadline:
                    continue
                why = problem or f"not running after {settings.start_timeout:g} s ({pending_reason(pod)})"
                state["reason"] = _failure(state["name"], settings, why)
            waiting.remove(node)
        if waiting:
            sleep(interval)
    return {"pods": [states[node] for node in nodes], "removed": sorted(removed)}
