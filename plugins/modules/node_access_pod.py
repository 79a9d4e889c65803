#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_access_pod
short_description: Open (or remove) one short-lived privileged pod per node to run the node modules through
version_added: 0.1.0
author:
  - pinned.images developers (@pinned-images)
description:
  - With O(state=present), creates on each of O(nodes) one privileged pod, as C(oc debug node/NAME) does. Each is pinned to
    the node (C(nodeName)), in the host's PID, network and IPC namespaces, the host's V(/) mounted at O(host_root),
    tolerating every taint, running C(sleep) for O(lifetime) seconds with C(activeDeadlineSeconds) of the same, so
    that the pods of an interrupted run end on their own. Then waits until each runs, fails to start, or
    O(start_timeout) passes.
  - Each pod is labelled C(pinned.images/node-access=true), C(pinned.images/run=RUN_ID) and
    C(pinned.images/node=NODE), and owned by its Node when the Node can be read (the garbage collector removes
    it with the node). Pods of other runs on the same nodes that have ended (phase C(Succeeded) or C(Failed), as an
    interrupted run's, once their lifetime is over) are deleted first; a running one may belong to a live run and is
    left alone.
  - A pod that does not start fails only its node, with the pod's own reason (C(ErrImagePull), C(Unschedulable),
    ...) or the API's refusal (RBAC, Pod Security or SecurityContextConstraints admission, HTTP 403), in RV(pods).
  - With O(state=absent), deletes every pod of O(run_id) in O(namespace).
  - The C(pinned.images.prefetch) playbook uses it for C(cluster_node_access=pod), with the connection plugin
    C(kubernetes.core.kubectl) to run the node role through the pods.
extends_documentation_fragment:
  - pinned.images.k8s_auth
options:
  state:
    description: V(present) opens the pods, V(absent) removes those of O(run_id).
    type: str
    choices: [present, absent]
    default: present
  nodes:
    description: The Node names to open a pod on (O(state=present)).
    type: list
    elements: str
    default: []
  run_id:
    description: Names the run; its pods carry it as a label, and O(state=absent) removes them by it.
    type: str
    required: true
  namespace:
    description:
      - The namespace of the pods. It must allow privileged pods (Pod Security C(privileged); on OpenShift the
        service account needs the C(privileged) SecurityContextConstraints).
    type: str
    default: default
  image:
    description:
      - The pods' image; the node modules run with its Python (V(registry.access.redhat.com/ubi9/python-311)). Without
        grpcio and protobuf, the node role provides them (C(node_python_deps)). Required with O(state=present).
    type: str
  image_pull_policy:
    description: The container's C(imagePullPolicy).
    type: str
    choices: [Always, IfNotPresent, Never]
    default: IfNotPresent
  service_account:
    description: The pods' service account (the namespace's default one when omitted).
    type: str
  priority_class:
    description: The pods' priority class (V(system-node-critical) lets them in on a full node).
    type: str
  host_root:
    description: Where the pods mount the host's V(/); the node modules' O(pinned.images.prefetch#module:host_root).
    type: str
    default: /host
  labels:
    description: More labels of the pods.
    type: dict
    default: {}
  lifetime:
    description: Seconds a pod lives at most (C(activeDeadlineSeconds) and its C(sleep)).
    type: int
    default: 14400
  start_timeout:
    description: Seconds to wait for the pods to run; a pod not running by then fails its node.
    type: float
    default: 120
attributes:
  check_mode:
    support: partial
    description: Nothing is created or deleted, and RV(pods) is empty.
    details: The prefetch playbook runs this module outside check mode, as its node plays need the pods even to report
      what they would do.
  diff_mode:
    support: none
    description: No diff is given.
  platform:
    support: full
    platforms: posix
    description: Runs where the cluster is reached, usually the controller.
notes:
  - "RBAC in O(namespace): C(create), C(get), C(list) and C(delete) on C(pods), and C(create) and C(get) on
    C(pods/exec) for the connection plugin (kubectl >= 1.30 opens exec with a WebSocket GET). See the minimal Role
    in docs/nodes.md of the collection."
seealso:
  - module: pinned.images.prefetch
"""

EXAMPLES = r"""
- name: Open a pod on each node
  pinned.images.node_access_pod:
    nodes: [worker-0, worker-1]
    run_id: prefetch-20260101
    namespace: pinned-images
    image: registry.access.redhat.com/ubi9/python-311
  register: node_pods

- name: Remove the pods of the run
  pinned.images.node_access_pod:
    state: absent
    run_id: prefetch-20260101
    namespace: pinned-images
"""

RETURN = r"""
pods:
  description: The pod of each node, in the order of O(nodes).
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: The Node name.
      type: str
    name:
      description: The pod's name.
      type: str
    namespace:
      description: The pod's namespace.
      type: str
    running:
      description: Whether the pod runs (the node can be reached through it).
      type: bool
    reason:
      description: Why the pod does not run (empty when it does).
      type: str
  sample:
    - node: worker-0
      name: pinned-images-worker-0-1a2b3c4d
      namespace: pinned-images
      running: false
      reason: "the node access pod pinned-images-worker-0-1a2b3c4d in namespace pinned-images did not start:
        ErrImagePull: pull access denied"
removed:
  description: The pods deleted (leftovers of other runs with O(state=present), the run's with O(state=absent)).
  returned: always
  type: list
  elements: str
"""

import copy
from typing import Any, Dict

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC
from ansible_collections.pinned.images.plugins.module_utils._runs.node_access_pod import run
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module


def _argument_spec() -> Dict[str, Any]:
    spec = dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        nodes=dict(type="list", elements="str", default=[]),
        run_id=dict(type="str", required=True),
        namespace=dict(type="str", default="default"),
        image=dict(type="str"),
        image_pull_policy=dict(type="str", choices=["Always", "IfNotPresent", "Never"], default="IfNotPresent"),
        service_account=dict(type="str"),
        priority_class=dict(type="str"),
        host_root=dict(type="str", default="/host"),
        labels=dict(type="dict", default={}),
        lifetime=dict(type="int", default=14400),
        start_timeout=dict(type="float", default=120.0),
    )
    spec.update(copy.deepcopy(K8S_AUTH_ARG_SPEC))
    return spec


def main() -> None:
    module = AnsibleModule(argument_spec=_argument_spec(), supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
