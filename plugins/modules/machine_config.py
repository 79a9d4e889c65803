#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: machine_config
short_description: Render MachineConfigs that deliver the CRI-O pinned-images drop-in to OpenShift pools
version_added: 0.1.0
author:
  - pinned.images developers (@pinned-images)
description:
  - Renders one C(machineconfiguration.openshift.io/v1) MachineConfig per machine config pool. It makes Ignition write
    C(/etc/crio/crio.conf.d/50-pinned-images) (mode 0644), byte-identical to the drop-in the machine-config-operator
    writes for PinnedImageSets, so CRI-O pins the images and the kubelet never garbage-collects them.
  - The images come from O(images) (the same list for every pool) or from PinnedImageSet objects (O(sets)); each pool
    gets the union of the sets that select it. A pool left without images gets no MachineConfig (an existing one
    is removed).
  - The MachineConfigs can be written as YAML files into O(dest) (for a GitOps repository; atomic, and byte-stable
    for the same input), applied to the cluster with server-side apply (O(apply=true), field manager
    C(pinned-images)), or only returned.
  - B(Warning:) unless the machine-config-operator of the cluster has a reload rule for this path, a new or changed
    MachineConfig makes it drain and reboot every node of the pool, one after the other (as many at once as the
    pool's C(maxUnavailable) allows). With O(disruption_policy=true) (the default) the module delivers that rule
    too (OpenShift 4.17 and later) and, with O(apply=true), refuses to change a MachineConfig while the cluster's
    effective policy would still reboot the nodes (O(allow_reboot)).
  - B(Warning:) the images must already be present on every node of the pool (prefetched, for example with
    M(pinned.images.prefetch)). The drop-in only pins; a node that lacks an image does not pull it because of it, and
    a pinned image that is absent is protected from nothing.
  - The drop-in is read by CRI-O only; containerd nodes are not pinned by it.
extends_documentation_fragment:
  - pinned.images.k8s_auth
options:
  pools:
    description:
      - The machine config pools to render for, as names (V(worker)) or MachineConfigPool objects.
      - A name defined by a MachineConfigPool object in O(sets) means that object; otherwise a bare name means a pool
        shaped like OpenShift's built-in ones, which selects sets labelled C(machineconfiguration.openshift.io/role=<name>).
      - When omitted, the MachineConfigPool objects found in O(sets) are used.
    type: list
    elements: raw
  sets:
    description:
      - PinnedImageSet objects (dictionaries) or paths on the host running the module to YAML files or directories
        (C(*.yaml) and C(*.yml), not recursive) that hold them. MachineConfigPool objects in the files are used as pools.
      - A relative path is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
      - Validated as the C(machineconfiguration.openshift.io/v1) API does; all problems are reported at once and
        nothing is written or applied.
      - Mutually exclusive with O(images).
    type: list
    elements: raw
  images:
    description:
      - The images to pin on every pool in O(pools).
      - Mutually exclusive with O(sets).
    type: list
    elements: str
  require_digest:
    description:
      - Accept only digest references in O(images). With V(false), tag references and CRI-O's glob (V(quay.io/org/*))
        and keyword (V(*pause*)) patterns are accepted too.
    type: bool
    default: true
  name:
    description:
      - The name of each MachineConfig; C({pool}) is replaced by the pool name.
      - The result must be an RFC 1123 subdomain and different for each pool.
      - MachineConfigs are merged in name order; the default C(99-) prefix makes this drop-in win over earlier ones.
    type: str
    default: 99-{pool}-pinned-images
  ignition_version:
    description:
      - The Ignition config version of C(spec.config). V(3.2.0) is accepted by every machine-config-operator that
        serves v1 MachineConfigs.
    type: str
    choices: ['3.1.0', '3.2.0', '3.3.0', '3.4.0']
    default: '3.2.0'
  dest:
    description:
      - A directory to write each MachineConfig into, as C(<name>.yaml). It is created when missing.
      - The file starts with the line C(# Rendered by pinned.images ...) and the object carries the annotation
        C(pinned.images/rendered-by) (the ownership mark of docs/gitops.md). An existing file of that name without the
        mark (and not the bytes an earlier version wrote) is the user's, so the module fails naming it, before anything
        is written or applied, and never replaces nor removes it.
      - A relative path is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
    type: path
  apply:
    description:
      - Server-side apply the MachineConfigs to the cluster (field manager C(pinned-images)), or delete them with
        O(state=absent). Objects whose managed parts already match are not touched.
    type: bool
    default: false
  disruption_policy:
    description:
      - Also deliver the node disruption policy that makes the machine-config-operator reload CRI-O (C(Reload
        crio.service)) instead of draining and rebooting the nodes when the drop-in changes, the entry for
        C(/etc/crio/crio.conf.d/50-pinned-images) in C(spec.nodeDisruptionPolicy.files) of the
        C(operator.openshift.io/v1) MachineConfiguration named C(cluster) (OpenShift 4.17 and later).
      - With O(dest), written as C(machineconfiguration-cluster-pinned-images.yaml) beside the MachineConfigs
        (byte-stable; apply it with server-side apply so that only this entry is set). With O(apply=true),
        server-side applied (field manager C(pinned-images)) before the MachineConfigs, owning only that entry;
        the other entries stay as they are. An entry for the path changed by another field manager fails the task.
      - V(false) for clusters whose admins manage the policy themselves; the check of O(allow_reboot) still runs.
      - Ignored with O(state=absent), which leaves the file and the entry.
    type: bool
    default: true
    version_added: 0.1.0
  allow_reboot:
    description:
      - With O(apply=true), change MachineConfigs even when the machine-config-operator would drain and reboot the
        nodes of their pools for it.
      - With V(false) (the default) the module first reads C(status.nodeDisruptionPolicyStatus.clusterPolicies) of
        the MachineConfiguration C(cluster) and, when the policy for the drop-in is missing, is a reboot or is not
        reconciled yet (or the cluster predates node disruption policies), fails before any MachineConfig is
        changed, saying how many nodes of which pools would reboot (RV(reboot)).
    type: bool
    default: false
    version_added: 0.1.0
  disruption_policy_timeout:
    description:
      - How long (seconds) to wait for the machine-config-operator to show the policy in its status after it was
        applied (or while the status is not reconciled), before O(allow_reboot=false) refuses.
    type: float
    default: 120
    version_added: 0.1.0
  return_images:
    description:
      - Also return every image of each pool (RV(pools[].images)).
      - Off by default; the result then gives each pool's image count and the images added and removed, which stay
        small when a pool pins thousands of images.
    type: bool
    default: false
    version_added: 0.1.0
  return_objects:
    description:
      - Also return the rendered MachineConfig objects (RV(machine_configs)).
      - Off by default, since each object carries every image of its pool, base64-encoded.
    type: bool
    default: false
    version_added: 0.1.0
  state:
    description:
      - V(present) writes and/or applies the MachineConfigs.
      - V(absent) removes the files from O(dest) and, with O(apply=true), deletes the MachineConfigs from the cluster.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
    description: Nothing is written; the cluster is asked for a server-side dry run.
  diff_mode:
    support: full
    description: Shows each changed file or object before and after.
  platform:
    support: full
    platforms: posix
    description: Runs on POSIX hosts.
requirements:
  - PyYAML
notes:
  - The kubernetes Python library is needed only with O(apply=true).
  - The module runs where it is delegated to (usually the controller); paths in O(sets) and O(dest) are on that host.
  - With the local connection (C(delegate_to=localhost), C(ansible localhost -c local)) relative paths in O(sets),
    O(dest), O(kubeconfig), O(ca_cert), O(client_cert) and O(client_key) are resolved against the directory
    C(ansible) or C(ansible-playbook) was started in, not the playbook's directory; a relative path in O(sets)
    that does not exist is reported with that directory.
seealso:
  - module: pinned.images.crio_pinned_images
  - module: pinned.images.prefetch
"""

EXAMPLES = r"""
- name: Write MachineConfigs for the worker pool into a GitOps repository
  pinned.images.machine_config:
    pools: [worker]
    sets: [pinned-image-sets/]
    dest: gitops/cluster-config/machineconfigs
  delegate_to: localhost

- name: Apply them to the cluster (images already prefetched on every node of the pools)
  pinned.images.machine_config:
    pools: [master, worker]
    images:
      - quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
    apply: true
    kubeconfig: ~/.kube/config
  delegate_to: localhost

- name: Apply them where the admins manage the node disruption policy, accepting reboots
  pinned.images.machine_config:
    pools: [worker]
    sets: [pinned-image-sets/worker.yaml]
    apply: true
    disruption_policy: false
    allow_reboot: true
  delegate_to: localhost

- name: Only render, to inspect the objects and every image of each pool
  pinned.images.machine_config:
    pools: [worker]
    sets: [pinned-image-sets/worker.yaml]
    return_objects: true
    return_images: true
  register: rendered
  delegate_to: localhost

- name: Remove the MachineConfigs again
  pinned.images.machine_config:
    pools: [worker]
    state: absent
    apply: true
    dest: gitops/cluster-config/machineconfigs
  delegate_to: localhost
"""

RETURN = r"""
machine_configs:
  description: The rendered MachineConfig objects, one per pool that has images (empty with O(state=absent)).
  returned: when O(return_objects=true)
  type: list
  elements: dict
  sample:
    - apiVersion: machineconfiguration.openshift.io/v1
      kind: MachineConfig
      metadata:
        labels:
          machineconfiguration.openshift.io/role: worker
        name: 99-worker-pinned-images
      spec:
        config:
          ignition:
            version: 3.2.0
          storage:
            files:
              - contents:
                  source: "data:;base64,W2NyaW9dCiAgW2NyaW8uaW1hZ2VdCiAgICBwaW5uZWRfaW1hZ2VzID0gWyJxdWF5LmlvL29w..."
                mode: 420
                overwrite: true
                path: /etc/crio/crio.conf.d/50-pinned-images
pools:
  description: Per pool, the MachineConfig name, how many images it pins, the PinnedImageSets used and the images
    added and removed.
  returned: always
  type: list
  elements: dict
  contains:
    pool:
      description: The pool name.
      type: str
    name:
      description: The MachineConfig name.
      type: str
    image_count:
      description: How many images the pool pins; 0 when the pool gets no MachineConfig.
      type: int
    set_names:
      description: The PinnedImageSets that selected the pool.
      type: list
      elements: str
    added:
      description: The images this run pins that the pool did not before, sorted. Before means the pool's file
        in O(dest) when O(dest) is given (all images when the file was missing or unreadable), otherwise the
        pool's MachineConfig in the cluster.
      type: list
      elements: str
      returned: when O(dest) is given or O(apply=true)
    removed:
      description: The images the pool pinned before (as for RV(pools[].added)) that this run does not, sorted.
      type: list
      elements: str
      returned: when O(dest) is given or O(apply=true)
    images:
      description: Every image the pool pins (sorted, de-duplicated); empty when the pool gets no MachineConfig.
      type: list
      elements: str
      returned: when O(return_images=true)
  sample:
    - pool: worker
      name: 99-worker-pinned-images
      image_count: 2
      set_names: [worker-images]
      added: [quay.io/org/app@sha256:1111111111111111111111111111111111111111111111111111111111111111]
      removed: []
files:
  description: With O(dest), the files written or already up to date (the policy file of O(disruption_policy)
    included); with O(state=absent) or for pools without
    images, the files removed.
  returned: always
  type: list
  elements: str
  sample: [gitops/cluster-config/machineconfigs/99-worker-pinned-images.yaml]
file_changes:
  description: The files in O(dest) created, changed (their bytes differ) and removed (would be, in check mode).
    A file whose bytes already match is in none of the lists, even when its mode is fixed.
  returned: always
  type: dict
  contains:
    created:
      description: Files that did not exist.
      type: list
      elements: str
    changed:
      description: Files whose bytes differ from what is rendered.
      type: list
      elements: str
    removed:
      description: Files of pools left without images, or of every pool with O(state=absent).
      type: list
      elements: str
  sample:
    created: []
    changed: [gitops/cluster-config/machineconfigs/99-worker-pinned-images.yaml]
    removed: []
applied:
  description: With O(apply=true), the MachineConfigs created or updated on the cluster (would be, in check mode).
  returned: always
  type: list
  elements: str
  sample: [99-worker-pinned-images]
deleted:
  description: With O(apply=true), the MachineConfigs deleted from the cluster (would be, in check mode).
  returned: always
  type: list
  elements: str
disruption_policy:
  description: What happened to the node disruption policy (O(disruption_policy)).
  returned: always
  type: dict
  contains:
    file:
      description: The policy file in O(dest), written or up to date; null without O(dest) or O(disruption_policy),
        and with O(state=absent).
      type: str
    applied:
      description: The entry was server-side applied to the MachineConfiguration C(cluster) (would be, in check
        mode); false when it was already there.
      type: bool
  sample:
    file: gitops/cluster-config/machineconfigs/machineconfiguration-cluster-pinned-images.yaml
    applied: false
reboot:
  description: Only in a failure of O(allow_reboot=false) - why the nodes would reboot, how many, and per pool.
  returned: when the module refuses a change that would reboot nodes
  type: dict
  contains:
    reason:
      description: Why the machine-config-operator would reboot (no policy for the path, a Reboot policy, a status
        not reconciled, a cluster without node disruption policies).
      type: str
    nodes:
      description: How many nodes would reboot in all.
      type: int
    pools:
      description: Per pool whose MachineConfig would change, C(pool) and C(nodes) (its MachineConfigPool's
        C(status.machineCount), else the nodes its node selector selects).
      type: list
      elements: dict
  sample:
    reason: status.nodeDisruptionPolicyStatus.clusterPolicies of MachineConfiguration 'cluster' has no policy for
      /etc/crio/crio.conf.d/50-pinned-images
    nodes: 3
    pools: [{pool: worker, nodes: 3}]
"""

import copy

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import (
    DEFAULT_IGNITION_VERSION,
    DEFAULT_NAME_TEMPLATE,
    SUPPORTED_IGNITION_VERSIONS,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC
from ansible_collections.pinned.images.plugins.module_utils._runs.machine_config import run
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module


def _argument_spec():
    spec = dict(
        pools=dict(type="list", elements="raw"),
        sets=dict(type="list", elements="raw"),
        images=dict(type="list", elements="str"),
        require_digest=dict(type="bool", default=True),
        name=dict(type="str", default=DEFAULT_NAME_TEMPLATE),
        ignition_version=dict(type="str", default=DEFAULT_IGNITION_VERSION, choices=list(SUPPORTED_IGNITION_VERSIONS)),
        dest=dict(type="path"),
        apply=dict(type="bool", default=False),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        disruption_policy=dict(type="bool", default=True),
        allow_reboot=dict(type="bool", default=False),
        disruption_policy_timeout=dict(type="float", default=120),
        return_images=dict(type="bool", default=False),
        return_objects=dict(type="bool", default=False),
    )
    spec.update(copy.deepcopy(K8S_AUTH_ARG_SPEC))
    return spec


def main():
    module = AnsibleModule(
        argument_spec=_argument_spec(),
        supports_check_mode=True,
        mutually_exclusive=[("images", "sets")],
        required_if=[("state", "present", ("images", "sets"), True)],
    )
    end_module(module, run)


if __name__ == "__main__":
    main()
