#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: pinned_image_set_info
short_description: Show PinnedImageSets, machine config pools and the images each node pins
version_added: 0.1.0
author:
  - pinned.images developers (@pinned-images)
description:
  - Reads C(machineconfiguration.openshift.io/v1) PinnedImageSets and MachineConfigPools from a cluster
    (O(cluster=true)) and/or from YAML files and directories (O(paths)), and nodes from the cluster or from O(nodes).
  - Works out, as the machine-config-operator does, which pools each node belongs to, which sets those pools select,
    and the list of images the node pins (the union of those sets, de-duplicated and sorted).
  - Sets and pools from O(paths) replace cluster ones of the same name (with a warning when they differ), so a
    change can be previewed against the live cluster; pools from O(pools) replace both.
  - Never changes anything.
extends_documentation_fragment:
  - pinned.images.k8s_auth
options:
  cluster:
    description:
      - Read PinnedImageSets and MachineConfigPools from the cluster, and its nodes unless O(nodes) is given.
    type: bool
    default: false
  paths:
    description:
      - YAML files, or directories of C(*.yaml) and C(*.yml) files (not recursive), holding PinnedImageSet and
        MachineConfigPool objects (several documents per file, and C(kind=List), are fine; other kinds are ignored).
      - Every set is validated; all problems are reported at once.
      - A relative path is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
    type: list
    elements: path
    default: []
  sets:
    description:
      - PinnedImageSet and MachineConfigPool objects (dictionaries, or a C(kind=List) of them), or paths as in
        O(paths); read with O(paths) and validated the same way.
    type: list
    elements: raw
    default: []
    version_added: 0.1.0
  pools:
    description:
      - More machine config pools, as MachineConfigPool objects or as names. A name means a pool shaped like
        OpenShift's built-in ones (it selects sets labelled C(machineconfiguration.openshift.io/role=<name>) and nodes
        labelled C(node-role.kubernetes.io/<name>)).
      - When no pool is found anywhere, OpenShift's built-in C(master) and C(worker) pools are assumed.
    type: list
    elements: raw
  nodes:
    description:
      - The nodes to report on, instead of the cluster's nodes.
    type: list
    elements: dict
    suboptions:
      name:
        description: The node name.
        type: str
        required: true
      labels:
        description: The node labels.
        type: dict
        default: {}
attributes:
  check_mode:
    support: full
    description: The module never changes anything.
  diff_mode:
    support: none
    description: The module never changes anything.
  platform:
    support: full
    platforms: posix
    description: Runs on POSIX hosts; to reach a cluster, usually on the controller (delegated to localhost).
requirements:
  - PyYAML
notes:
  - "RBAC for O(cluster=true): C(list) on C(pinnedimagesets.machineconfiguration.openshift.io),
    C(machineconfigpools.machineconfiguration.openshift.io) and, without O(nodes), C(nodes)."
  - The module needs the C(kubernetes) Python library only with O(cluster=true).
seealso:
  - module: pinned.images.pinned_image_set
"""

EXAMPLES = r"""
- name: What does each node of the cluster pin?
  pinned.images.pinned_image_set_info:
    cluster: true
  register: pinned
  delegate_to: localhost

- name: Preview the effect of the sets in a GitOps repository on the cluster's nodes
  pinned.images.pinned_image_set_info:
    cluster: true
    paths:
      - "{{ playbook_dir }}/gitops/pinned-image-sets"
  delegate_to: localhost

- name: Work offline, from files and known node labels
  pinned.images.pinned_image_set_info:
    paths:
      - sets/
    nodes:
      - name: worker-0
        labels:
          node-role.kubernetes.io/worker: ""
  delegate_to: localhost

- name: Prefetch exactly what this node will pin
  pinned.images.prefetch:
    images: "{{ (pinned.nodes | selectattr('name', 'equalto', inventory_hostname) | first).images }}"
"""

RETURN = r"""
sets:
  description: The PinnedImageSets found.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The set name.
      type: str
      sample: worker-pinned-images
    labels:
      description: The set labels.
      type: dict
      sample: {machineconfiguration.openshift.io/role: worker}
    images:
      description: The images of the set, in the order given.
      type: list
      elements: str
    pool_selector:
      description: C(spec.machineConfigPoolSelector), when the set has one.
      type: dict
    source:
      description: Where the set came from, V(cluster) or a file path.
      type: str
      sample: cluster
    pools:
      description: The pools that select the set.
      type: list
      elements: str
      sample: [worker]
pools:
  description: The machine config pools used.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The pool name.
      type: str
      sample: worker
    labels:
      description: The pool labels.
      type: dict
    machine_config_selector:
      description: C(spec.machineConfigSelector), which selects sets by their labels.
      type: dict
    node_selector:
      description: C(spec.nodeSelector), which selects the pool's nodes.
      type: dict
    pinned_image_sets:
      description:
        - The sets the pool names in C(spec.pinnedImageSets), as reported.
        - They do not decide the pool's sets; the MCO's controller overwrites this list with what the pool's
          C(spec.machineConfigSelector) matches, and so does RV(pools[].sets).
      type: list
      elements: str
    source:
      description: Where the pool came from, V(cluster), a file path, V(pools) or V(default).
      type: str
    sets:
      description:
        - The names of the sets the pool selects, as the MCO's controller decides. Its non-empty
          C(spec.machineConfigSelector) matches the set's labels (a missing or empty one matches none), or the
          set's C(spec.machineConfigPoolSelector) matches the pool's labels.
      type: list
      elements: str
    images:
      description: The images of those sets, de-duplicated and sorted.
      type: list
      elements: str
    missing_sets:
      description: Sets named in C(spec.pinnedImageSets) that were not found.
      type: list
      elements: str
nodes:
  description: For each node, its pools and the images it pins.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The node name.
      type: str
      sample: worker-0
    pools:
      description: The pools the node belongs to.
      type: list
      elements: str
      sample: [worker]
    images:
      description: The images the node pins, de-duplicated and sorted.
      type: list
      elements: str
    sets:
      description: The sets those images come from, in the order they were found.
      type: list
      elements: str
    error:
      description: Why the node's pools could not be worked out (for example, two custom pools select it).
      type: str
      returned: when the node's pools are ambiguous
"""

import copy

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module
from ansible_collections.pinned.images.plugins.module_utils._runs.pinned_image_set_info import run


def _argument_spec():
    spec = dict(
        cluster=dict(type="bool", default=False),
        paths=dict(type="list", elements="path", default=[]),
        sets=dict(type="list", elements="raw", default=[]),
        pools=dict(type="list", elements="raw"),
        nodes=dict(
            type="list",
            elements="dict",
            options=dict(
                name=dict(type="str", required=True),
                labels=dict(type="dict", default={}),
            ),
        ),
    )
    spec.update(copy.deepcopy(K8S_AUTH_ARG_SPEC))
    return spec


def main():
    module = AnsibleModule(argument_spec=_argument_spec(), supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
