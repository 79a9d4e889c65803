# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The machine_config module's run (controller side): its options as a MachineConfigRequest, the MachineConfigs
rendered per pool (``_openshift/machine_config``), then written into ``dest`` and/or applied, with the node
disruption policy (``_openshift/disruption_policy``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import refuse_foreign
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import (
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    K8sClient,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection
from ansible_collections.pinned.images.plugins.module_utils._openshift import disruption_policy
from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import (
    MachineConfigError,
    image_changes,
    owned_files,
    render_for_pools,
    sync_cluster,
    sync_files,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import validate_pinned_images
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import k8s_connection
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome, hiding
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
from ansible_collections.pinned.images.plugins.module_utils._sets.model import MachineConfigPool, PinnedImageSet
from ansible_collections.pinned.images.plugins.module_utils._sets.pools import resolve_pools

__all__ = ["MachineConfigRequest", "machine_config_request", "plan", "pool_summary", "run", "run_machine_config"]


@dataclass(frozen=True)
class MachineConfigRequest:
    """The machine_config module's options (``_runs/machine_config`` reads them)."""

    pools: Optional[List[Any]]
    sets: Optional[List[Any]]
    images: Optional[List[str]]
    require_digest: bool
    name: str
    ignition_version: str
    dest: Optional[str]
    apply: bool
    state: str
    return_images: bool
    return_objects: bool
    connection: K8sConnection
    # The MachineConfiguration's node disruption policy (``_openshift.disruption_policy``), and whether a change
    # may reboot the pools' nodes (else it waits up to ``disruption_policy_timeout`` seconds for the policy).
    disruption_policy: bool
    allow_reboot: bool
    disruption_policy_timeout: float


def plan(request: MachineConfigRequest) -> List[Dict[str, Any]]:
    """The entries of ``render_for_pools`` for the module's request; raises a CollectionError (bad sets, pools,
    images or names) before anything is written or applied."""
    sets: List[PinnedImageSet] = []
    file_pools: List[MachineConfigPool] = []
    if request.sets is not None:
        sets, file_pools = load_sets(request.sets)
    pools = resolve_pools(request.pools, file_pools) if request.pools is not None else file_pools
    if not pools:
        raise MachineConfigError("no pools: give pools, or MachineConfigPool objects in sets")
    images: Optional[List[str]] = None
    if request.state == "absent":
        images = []
    elif request.sets is None:
        images = validate_pinned_images(request.images or [], require_digest=request.require_digest)
    return render_for_pools(
        pools, sets=sets, images=images, name_template=request.name, ignition_version=request.ignition_version
    )


def pool_summary(entry: Dict[str, Any], previous: Optional[List[str]], with_images: bool) -> Dict[str, Any]:
    """A pool of the module's result: ``pool``, ``name``, ``image_count``, ``set_names``; ``added`` and ``removed``
    against ``previous`` (the images pinned before) when known; ``images`` with ``with_images``."""
    row: Dict[str, Any] = {
        "pool": entry["pool"],
        "name": entry["name"],
        "image_count": len(entry["images"]),
        "set_names": entry["set_names"],
    }
    if previous is not None:
        row.update(image_changes(previous, entry["images"]))
    if with_images:
        row["images"] = entry["images"]
    return row


def run_machine_config(
    request: MachineConfigRequest, check_mode: bool, diff: bool, tmpdir: Optional[str] = None
) -> Dict[str, Any]:
    """The machine_config module's run: render, then write into ``dest`` and/or apply (see the module's docs)."""
    entries = plan(request)
    if request.apply and not HAS_KUBERNETES:
        raise CollectionError(missing_required_lib("kubernetes"), details={"exception": str(KUBERNETES_IMPORT_ERROR)})
    result: Dict[str, Any] = dict(
        changed=False, files=[], applied=[], deleted=[], file_changes=dict(created=[], changed=[], removed=[])
    )
    diffs: List[Dict[str, Any]] = []
    # added/removed: against the files in dest, else against the cluster; unknown with neither.
    previous: Optional[Dict[str, List[str]]] = None
    # The policy goes with the MachineConfigs it makes reboot-free; state=absent leaves it (a removal is a change).
    with_policy = request.disruption_policy and request.state == "present"
    result["disruption_policy"] = dict(file=None, applied=False)
    if request.dest:
        # A user's file of the same name is never replaced nor removed.
        refuse_foreign(owned_files(entries, request.dest, with_policy))
        outcome = sync_files(entries, request.dest, state=request.state, check_mode=check_mode)
        result.update(files=outcome["files"], file_changes=outcome["file_changes"])
        result["changed"] |= outcome["changed"]
        diffs.extend(outcome["diffs"])
        previous = outcome["previous_images"]
        if with_policy:
            written = disruption_policy.sync_policy_file(request.dest, check_mode=check_mode)
            result["files"].append(written["path"])
            result["disruption_policy"]["file"] = written["path"]
            if written["content_changed"]:
                result["file_changes"]["created" if written["created"] else "changed"].append(written["path"])
            if written["changed"]:
                result["changed"] = True
                diffs.append(written["diff"])
    if request.apply:
        try:
            with K8sClient.connect(request.connection, tmpdir=tmpdir) as client:
                if with_policy:
                    policy = disruption_policy.sync_policy(client, check_mode=check_mode)
                    result["disruption_policy"]["applied"] = policy["changed"]
                    result["changed"] |= policy["changed"]
                    if policy["changed"]:
                        diffs.append(policy["diff"])

                def no_reboot(pools: List[str]) -> None:
                    disruption_policy.check_no_reboot(
                        client, pools, with_policy, check_mode, request.disruption_policy_timeout
                    )

                outcome = sync_cluster(
                    entries,
                    client,
                    state=request.state,
                    check_mode=check_mode,
                    before_change=None if request.allow_reboot else no_reboot,
                )
        except CollectionError as exc:
            # The files in dest are written by then: the failure says which.
            raise MachineConfigError(exc.problems, message=exc.message, details=dict(result, **exc.details)) from exc
        result.update(applied=outcome["applied"], deleted=outcome["deleted"])
        result["changed"] |= outcome["changed"]
        diffs.extend(outcome["diffs"])
        if previous is None:
            previous = outcome["previous_images"]
    result["pools"] = [
        pool_summary(e, None if previous is None else previous[e["name"]], request.return_images) for e in entries
    ]
    if request.return_objects:
        result["machine_configs"] = [e["machine_config"] for e in entries if e["machine_config"] is not None]
    if diff and diffs:
        result["diff"] = diffs
    return result


def machine_config_request(params: Mapping[str, Any]) -> MachineConfigRequest:
    """The module's options; the sets, pools and images are checked by ``plan``, all before anything changes."""
    if not 0 <= params["disruption_policy_timeout"] < math.inf:
        raise MachineConfigError(
            f"disruption_policy_timeout must be 0 or more seconds (finite), got {params['disruption_policy_timeout']}"
        )
    return MachineConfigRequest(
        pools=params["pools"],
        sets=params["sets"],
        images=params["images"],
        require_digest=params["require_digest"],
        name=params["name"],
        ignition_version=params["ignition_version"],
        dest=params["dest"],
        apply=params["apply"],
        state=params["state"],
        return_images=params["return_images"],
        return_objects=params["return_objects"],
        connection=k8s_connection(params),
        disruption_policy=params["disruption_policy"],
        allow_reboot=params["allow_reboot"],
        disruption_policy_timeout=params["disruption_policy_timeout"],
    )


def run(invocation: Invocation) -> Outcome:
    """The module's run; the connection's secrets are hidden from its result and its failure."""
    request = machine_config_request(invocation.params)
    return hiding(
        request.connection.secrets(),
        lambda: Outcome(run_machine_config(request, invocation.check_mode, invocation.diff, invocation.tmpdir)),
    )
