# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The machine-config-operator's side of the MachineConfiguration ``cluster`` for the fake API server: the object as
the MCO creates it, and the controller that merges the spec's node disruption policies with its built-in ones into
``status.nodeDisruptionPolicyStatus.clusterPolicies`` (``apihelpers.MergeClusterPolicies``, MCO 7ff337a: a user
entry replaces the built-in one of the same path, else it is appended) and sets ``status.observedGeneration``."""

from __future__ import annotations

import copy

KIND = "MachineConfiguration"
NAME = "cluster"
# Some of the MCO's built-in file policies (pkg/apihelpers/apihelpers.go, MCO 7ff337a); none covers crio.conf.d.
DEFAULT_FILE_POLICIES = (
    {"path": "/var/lib/kubelet/config.json", "actions": [{"type": "None"}]},
    {"path": "/etc/containers/policy.json", "actions": [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]},
    {"path": "/etc/containers/registries.conf", "actions": [{"type": "Special"}]},
    {"path": "/etc/crio/policies", "actions": [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]},
)
DEFAULT_SSHKEY_ACTIONS = ({"type": "None"},)


def cluster_policies(spec):
    """The merged ``clusterPolicies`` for a MachineConfiguration spec."""
    user = (spec or {}).get("nodeDisruptionPolicy") or {}
    files = [copy.deepcopy(f) for f in DEFAULT_FILE_POLICIES]
    for entry in user.get("files") or []:
        index = next((i for i, f in enumerate(files) if f["path"] == entry["path"]), None)
        if index is None:
            files.append(copy.deepcopy(entry))
        else:
            files[index] = copy.deepcopy(entry)
    sshkey = (user.get("sshkey") or {}).get("actions") or list(DEFAULT_SSHKEY_ACTIONS)
    return {
        "files": files,
        "units": copy.deepcopy(user.get("units") or []),
        "sshkey": {"actions": copy.deepcopy(sshkey)},
    }


def reconcile(server):
    """What the MCO's operator does after the object changed: status from the spec, observedGeneration."""
    with server._lock:
        obj = server.objects.get((KIND, NAME))
        if obj is None:
            return
        status = copy.deepcopy(obj.get("status") or {})
        status["nodeDisruptionPolicyStatus"] = {"clusterPolicies": cluster_policies(obj.get("spec"))}
        status["observedGeneration"] = obj["metadata"].get("generation", 1)
        if status != obj.get("status"):
            obj["status"] = status
            obj["metadata"]["resourceVersion"] = server._next_rv()


def add_machine_configuration(server, spec=None, supports_policies=True, reconciling=True):
    """Seed ``cluster`` as the MCO creates it (owned by ``machine-config-operator``). ``supports_policies``: its
    status has ``nodeDisruptionPolicyStatus`` (OpenShift 4.17+); ``reconciling``: the controller updates the status
    whenever a request follows a change (a moment after it, as the real one does)."""
    obj = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": KIND,
        "metadata": {"name": NAME},
        "spec": copy.deepcopy(spec) if spec is not None else {"managementState": "Managed"},
    }
    server.add(obj, manager="machine-config-operator")
    if supports_policies:
        reconcile(server)
        if reconciling:
            server.on_request(lambda _request: reconcile(server))
    return server.get(KIND, NAME)
