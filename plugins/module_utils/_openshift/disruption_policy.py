# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node disruption policy that lets the machine-config-operator (MCO) reload CRI-O, not reboot the pool, when a
MachineConfig changes the pinned-images drop-in (OpenShift 4.17+), and the check that a change would not reboot.

The collection owns one entry of the ``operator.openshift.io/v1`` MachineConfiguration named ``cluster``::

    spec:
      nodeDisruptionPolicy:
        files:                      # listType=map, key path: one field manager per entry
        - path: /etc/crio/crio.conf.d/50-pinned-images
          actions:
          - type: Reload
            reload:
              serviceName: crio.service

It is server-side applied with field manager ``pinned-images`` and holds nothing else, so the other entries (an
admin's) stay theirs. The MCO's controller merges the spec with its built-in policies into
``status.nodeDisruptionPolicyStatus.clusterPolicies``; the daemon looks a changed file up there (the exact path or
the longest directory above it, ``FindClosestFilePolicyPathMatch``) once ``status.observedGeneration`` has reached
``metadata.generation``, and reboots for a file without a policy (``pkg/daemon/update.go``, MCO 7ff337a).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import AtomicFileError, atomic_write
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import rendered_text
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import dump_yaml
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import DEFAULT_FIELD_MANAGER
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DEFAULT_PATH
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import label_selector_matches
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION as MCO_API_VERSION,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    default_pool,
)

__all__ = [
    "API_VERSION",
    "GITOPS_ANNOTATIONS",
    "KIND",
    "NAME",
    "POLICY_FILE_NAME",
    "POLL_INTERVAL",
    "RELOAD_SERVICE",
    "DisruptionPolicyError",
    "RebootRefused",
    "await_no_reboot",
    "check_no_reboot",
    "closest_policy",
    "policy_entry",
    "policy_file_object",
    "pool_node_counts",
    "reboot_reason",
    "refuse_reboot",
    "render_policy",
    "spec_entry",
    "sync_policy",
    "sync_policy_file",
]

API_VERSION = "operator.openshift.io/v1"
KIND = "MachineConfiguration"
# The one object the MCO reads (ctrlcommon.MCOOperatorKnobsObjectName).
NAME = "cluster"
RELOAD_SERVICE = "crio.service"
# The GitOps file, beside the MachineConfigs; not a MachineConfig name (those are <name>.yaml).
POLICY_FILE_NAME = "machineconfiguration-cluster-pinned-images.yaml"
POLL_INTERVAL = 2.0


class DisruptionPolicyError(CollectionError):
    """The node disruption policy cannot be applied or read."""


class RebootRefused(DisruptionPolicyError):
    """Applying the MachineConfigs would reboot nodes and that was not allowed."""

    def __init__(self, message: str, reason: str, pools: Sequence[Mapping[str, Any]]) -> None:
        nodes = sum(int(p["nodes"]) for p in pools)
        super().__init__(
            message, details={"reboot": {"reason": reason, "nodes": nodes, "pools": [dict(p) for p in pools]}}
        )


def policy_entry(path: str = DEFAULT_PATH) -> Dict[str, Any]:
    """The ``spec.nodeDisruptionPolicy.files[]`` entry: reload CRI-O when ``path`` changes."""
    return {"path": path, "actions": [{"type": "Reload", "reload": {"serviceName": RELOAD_SERVICE}}]}


def render_policy(path: str = DEFAULT_PATH) -> Dict[str, Any]:
    """The MachineConfiguration holding only the collection's entry (for server-side apply, and as a file)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": NAME},
        "spec": {"nodeDisruptionPolicy": {"files": [policy_entry(path)]}},
    }


# In the GitOps file only: a GitOps tool must never delete the MCO's singleton (pruning it when the file leaves the
# repository, or deleting the application), must apply it server-side (a client-side apply replaces the whole files
# list) and before the MachineConfigs (wave -1 of Argo CD's default 0).
GITOPS_ANNOTATIONS = {
    "argocd.argoproj.io/sync-options": "Prune=false,Delete=false,ServerSideApply=true",
    "argocd.argoproj.io/sync-wave": "-1",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
}


def policy_file_object(path: str = DEFAULT_PATH) -> Dict[str, Any]:
    """``render_policy`` with ``GITOPS_ANNOTATIONS``: the GitOps file's object."""
    obj = render_policy(path)
    obj["metadata"]["annotations"] = dict(GITOPS_ANNOTATIONS)
    return obj


def _files(obj: Optional[Mapping[str, Any]], *keys: str) -> List[Dict[str, Any]]:
    node: Any = obj
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return [f for f in node if isinstance(f, dict)] if isinstance(node, list) else []


def spec_entry(obj: Optional[Mapping[str, Any]], path: str = DEFAULT_PATH) -> Optional[Dict[str, Any]]:
    """The entry for ``path`` in ``spec.nodeDisruptionPolicy.files``, or None."""
    return next((f for f in _files(obj, "spec", "nodeDisruptionPolicy", "files") if f.get("path") == path), None)


def _contains(directory: str, path: str) -> bool:
    directory = directory.rstrip("/")
    return bool(directory) and path.startswith(directory + "/")


def closest_policy(files: Sequence[Mapping[str, Any]], path: str) -> Optional[Mapping[str, Any]]:
    """The entry whose path is ``path`` or the longest directory above it, as the MCO daemon chooses."""
    best: Optional[Mapping[str, Any]] = None
    for entry in files:
        candidate = entry.get("path")
        if not isinstance(candidate, str) or not (candidate == path or _contains(candidate, path)):
            continue
        if best is None or len(candidate) > len(str(best.get("path"))):
            best = entry
    return best


def _merged(files: Sequence[Mapping[str, Any]], pending: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    """``files`` with ``pending`` merged in as the MCO's controller does (same path replaced, else appended)."""
    merged = [pending if f.get("path") == pending.get("path") else f for f in files]
    return merged if any(f is pending for f in merged) else merged + [pending]


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def reboot_reason(
    obj: Optional[Mapping[str, Any]], path: str = DEFAULT_PATH, pending: Optional[Mapping[str, Any]] = None
) -> Optional[str]:
    """Why the MCO would still reboot a node for a change of ``path``; None when it would not."""
    if obj is None:
        return (
            f"the cluster has no {KIND} {NAME!r} ({API_VERSION}): its machine-config-operator predates node "
            "disruption policies (OpenShift 4.17)"
        )
    status = _status(obj)
    policy_status = status.get("nodeDisruptionPolicyStatus")
    if not isinstance(policy_status, Mapping):
        return (
            f"{KIND} {NAME!r} has no status.nodeDisruptionPolicyStatus: the machine-config-operator does not "
            "apply node disruption policies (OpenShift before 4.17, or the feature is off)"
        )
    files: List[Mapping[str, Any]] = list(_files(policy_status, "clusterPolicies", "files"))
    if pending is not None:
        files = _merged(files, pending)
    else:
        generation = (obj.get("metadata") or {}).get("generation")
        observed = status.get("observedGeneration")
        if generation is not None and observed != generation:
            return (
                f"{KIND} {NAME!r} is not reconciled yet (status.observedGeneration {observed} of generation "
                f"{generation}): its policies are not in effect"
            )
    entry = closest_policy(files, path)
    if entry is None:
        return f"status.nodeDisruptionPolicyStatus.clusterPolicies of {KIND} {NAME!r} has no policy for {path}"
    if any(isinstance(a, Mapping) and a.get("type") == "Reboot" for a in entry.get("actions") or []):
        return f"the policy for {entry.get('path')} in {KIND} {NAME!r} is Reboot"
    return None


def _get_configuration(client: Any) -> Optional[Dict[str, Any]]:
    """The MachineConfiguration ``cluster``; None also when the cluster does not serve the kind at all (OpenShift
    before 4.14, plain Kubernetes): the client raises a 404 for an unknown kind before it asks for the object."""
    try:
        obj: Optional[Dict[str, Any]] = client.get(API_VERSION, KIND, NAME)
    except K8sError as exc:
        if exc.status == 404:
            return None
        raise
    return obj


def _actions_text(entry: Optional[Mapping[str, Any]]) -> str:
    """``Reload crio.service, Drain`` for an entry's actions."""
    words = []
    for action in (entry or {}).get("actions") or []:
        if isinstance(action, Mapping):
            target = next((v.get("serviceName") for v in action.values() if isinstance(v, Mapping)), None)
            words.append(f"{action.get('type')} {target}" if target else str(action.get("type")))
    return ", ".join(words) or "no actions"


def _conflict_owners(error: K8sError) -> str:
    return "; ".join(str(c.get("message") or c.get("field") or "") for c in error.causes) or error.message


def sync_policy(
    client: Any, path: str = DEFAULT_PATH, check_mode: bool = False, field_manager: str = DEFAULT_FIELD_MANAGER
) -> Dict[str, Any]:
    """Server-side apply the collection's entry when the cluster's entry for ``path`` differs (dry run in check
    mode). ``client`` is a ``_k8s.client.K8sClient``. Returns ``{changed, diff, object}`` (``object``: the
    MachineConfiguration after the apply, as stored or as it would be). DisruptionPolicyError when the object is
    missing, another manager owns the entry, or the server dropped it (a CRD without ``spec.nodeDisruptionPolicy``)."""
    live = _get_configuration(client)
    if live is None:
        raise DisruptionPolicyError(
            f"{KIND} {NAME!r} ({API_VERSION}) does not exist: the machine-config-operator creates it, and honours "
            "node disruption policies from OpenShift 4.17; set disruption_policy to false on clusters without it"
        )
    desired = policy_entry(path)
    current = spec_entry(live, path)
    if current == desired:
        return {"changed": False, "diff": None, "object": live}
    try:
        stored = client.apply(render_policy(path), field_manager=field_manager, dry_run=check_mode)
    except K8sError as exc:
        if exc.status == 409:
            raise DisruptionPolicyError(
                f"the node disruption policy for {path} in {KIND} {NAME!r} was changed by another field manager "
                f"({_conflict_owners(exc)}): it is {_actions_text(current)}, not {_actions_text(desired)}; "
                "restore it, or set disruption_policy to false to leave the entry to them",
                details={"status": exc.status, "reason": exc.reason},
            ) from exc
        raise
    # A CRD without spec.nodeDisruptionPolicy (OpenShift 4.14 to 4.16) prunes the entry and answers 200.
    if spec_entry(stored, path) is None:
        raise DisruptionPolicyError(
            f"the API server dropped the node disruption policy for {path}: its {KIND} {NAME!r} ({API_VERSION}) has "
            "no spec.nodeDisruptionPolicy (OpenShift before 4.17). Set disruption_policy to false, and allow_reboot "
            "to true to roll the MachineConfigs out with reboots (or pin through PinnedImageSets instead)"
        )
    header = f"{KIND}/{NAME} spec.nodeDisruptionPolicy.files[path={path}]"
    diff = {
        "before": dump_yaml(current) if current is not None else "",
        "after": dump_yaml(desired),
        "before_header": header + ("" if current is not None else " (absent)"),
        "after_header": header,
    }
    return {"changed": True, "diff": diff, "object": stored}


def pool_node_counts(client: Any, pools: Sequence[str]) -> List[Dict[str, Any]]:
    """How many nodes each pool has: its MachineConfigPool's ``status.machineCount``, else the nodes its
    ``spec.nodeSelector`` (a built-in pool's when the cluster has no such pool) selects."""
    counts: List[Dict[str, Any]] = []
    nodes: Optional[List[Dict[str, Any]]] = None
    for name in pools:
        pool = client.get(MCO_API_VERSION, "MachineConfigPool", name)
        machine_count = ((pool or {}).get("status") or {}).get("machineCount")
        if isinstance(machine_count, int) and not isinstance(machine_count, bool):
            counts.append({"pool": name, "nodes": machine_count})
            continue
        selector = ((pool or {}).get("spec") or {}).get("nodeSelector") if pool else default_pool(name).node_selector
        if nodes is None:
            nodes = client.list("v1", "Node")
        # An empty selector selects nothing for a pool: the MCO skips such a pool.
        matched = [
            n for n in nodes if selector and label_selector_matches(selector, (n.get("metadata") or {}).get("labels"))
        ]
        counts.append({"pool": name, "nodes": len(matched)})
    return counts


def refuse_reboot(client: Any, pools: Sequence[str], reason: str, advice: str = "") -> None:
    """Raise RebootRefused naming how many nodes of which pools would reboot, and why; ``advice`` replaces the
    default of applying the policy first."""
    counts = pool_node_counts(client, pools)
    total = sum(c["nodes"] for c in counts)
    per_pool = ", ".join(f"{c['nodes']} of pool {c['pool']}" for c in counts)
    advice = advice or (
        "apply the node disruption policy first (disruption_policy: true, OpenShift 4.17+), or set "
        "allow_reboot to true to roll out with reboots"
    )
    raise RebootRefused(
        f"applying the MachineConfigs would drain and reboot {total} node{'' if total == 1 else 's'} ({per_pool}): "
        f"{reason}. Nothing was applied to the pools; {advice}",
        reason,
        counts,
    )


def await_no_reboot(
    client: Any,
    path: str = DEFAULT_PATH,
    timeout: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Read the MachineConfiguration until a change of ``path`` would not reboot (reason None) or ``timeout``
    seconds have passed; the MCO's controller updates the status a moment after the spec changes."""
    deadline = clock() + max(timeout, 0.0)
    while True:
        obj = _get_configuration(client)
        reason = reboot_reason(obj, path)
        # Only a status behind its spec changes by waiting.
        if reason is None or clock() >= deadline or _reconciled(obj):
            return obj, reason
        sleep(min(POLL_INTERVAL, max(deadline - clock(), 0.0)))


def _reconciled(obj: Optional[Mapping[str, Any]]) -> bool:
    """The status shows the spec (or never will: no object, no node disruption policy status)."""
    if obj is None:
        return True
    status = _status(obj)
    if not isinstance(status.get("nodeDisruptionPolicyStatus"), Mapping):
        return True
    generation = (obj.get("metadata") or {}).get("generation")
    return generation is None or status.get("observedGeneration") == generation


def check_no_reboot(
    client: Any,
    pools: Sequence[str],
    pending: bool,
    check_mode: bool,
    timeout: float,
    path: str = DEFAULT_PATH,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """RebootRefused when a change of ``path`` on ``pools`` would still reboot their nodes. ``pending``: the
    collection's entry is (or in check mode would be) in the spec; check mode predicts the MCO's merge with it, a
    real run waits up to ``timeout`` seconds for the MCO to show it in the status."""
    advice = ""
    if check_mode:
        reason = reboot_reason(_get_configuration(client), path, pending=policy_entry(path) if pending else None)
    else:
        obj, reason = await_no_reboot(client, path, timeout, sleep)
        if reason is not None and not _reconciled(obj):
            advice = (
                f"the machine-config-operator did not show the policy within disruption_policy_timeout "
                f"({timeout:g} s): run again, or give it longer, once the MCO is reconciling"
            )
    if reason is not None:
        refuse_reboot(client, pools, reason, advice)


def sync_policy_file(dest: str, path: str = DEFAULT_PATH, check_mode: bool = False) -> Dict[str, Any]:
    """Write the policy object to ``<dest>/POLICY_FILE_NAME`` (atomic, byte-stable, with the ownership mark);
    atomic_write's result with ``path``."""
    target = os.path.join(dest, POLICY_FILE_NAME)
    try:
        if not check_mode:
            os.makedirs(dest, mode=0o755, exist_ok=True)
        outcome = atomic_write(target, rendered_text(policy_file_object(path)), mode=0o644, check_mode=check_mode)
    except OSError as exc:
        raise AtomicFileError(exc.errno, f"cannot write {target}: {exc.strerror or exc}") from exc
    return dict(outcome, path=target)
