#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: pinned_image_status
short_description: Publish each node's PinnedImageSet prefetch result as a Node annotation
version_added: 0.1.0
author:
  - pinned.images developers (@pinned-images)
description:
  - Writes, on each Kubernetes Node, an annotation holding the node's PinnedImageSet status in the shape of the
    MachineConfigNode C(status.pinnedImageSets) field (C(desiredGeneration), C(currentGeneration),
    C(lastFailedGeneration), C(lastFailedGenerationError)) with the conditions C(PinnedImageSetsProgressing) and
    C(PinnedImageSetsDegraded), so that clusters without the machine-config-operator show the same status.
  - With O(nodes[].state=progressing) (a run starts), the sets with work to do read as progressing, never as an
    error. With O(nodes[].state=done) (the run ended), each set is current when all its images are on the node, and
    failed otherwise, with the error.
  - The desired generation of a set is its C(metadata.generation) in the cluster when the cluster has the same set
    (same images); otherwise a counter kept in the annotation that goes up whenever the set's images change.
  - The annotation is changed with a JSON merge patch, and only when its content changes. The patch names the
    C(resourceVersion) of the Node it was computed from; when another writer changed the Node meanwhile (HTTP 409),
    the status is computed again from the fresh annotation, up to 3 times, so a concurrent write is never lost.
  - Nodes the cluster does not have are reported in RV(missing) with a warning, not as an error.
extends_documentation_fragment:
  - pinned.images.k8s_auth
options:
  nodes:
    description:
      - The nodes and their results.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The Node name.
        type: str
        required: true
      state:
        description:
          - V(progressing) when the node's prefetch starts, V(done) when it ended (successfully or not).
        type: str
        choices: [progressing, done]
        default: done
      sets:
        description:
          - The PinnedImageSets of the node, with their images. Sets no longer listed are dropped from the status.
        type: list
        elements: dict
        default: []
        suboptions:
          name:
            description: The set name.
            type: str
            required: true
          images:
            description: The images of the set.
            type: list
            elements: str
            default: []
          generation:
            description: The set's C(metadata.generation), when known; overrides the lookup in the cluster.
            type: int
      images:
        description:
          - With O(nodes[].state=done), the per-image results of M(pinned.images.prefetch) (C(image), C(status),
            C(error)); a set fails when one of its images is not V(present) or V(pulled).
        type: list
        elements: dict
        default: []
      error:
        description:
          - With O(nodes[].state=done), an error that failed the whole node (runtime unreachable, pin step failed,
            node not attempted); every set of the node fails with it.
        type: str
  annotation:
    description:
      - The annotation key.
    type: str
    default: pinned.images/pinned-image-sets
  cluster_generations:
    description:
      - Read the PinnedImageSets of the cluster to use their C(metadata.generation). When they cannot be read
        (no CRD, no RBAC), a warning is given and the counter in the annotation is used.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Nothing is patched; RV(nodes) shows what would be written.
  diff_mode:
    support: none
    description: The result shows the status written for each node.
  platform:
    support: full
    platforms: posix
    description: Runs on POSIX hosts; usually on the controller (delegated to localhost).
notes:
  - "RBAC: C(list) and C(patch) on C(nodes); C(list) on C(pinnedimagesets.machineconfiguration.openshift.io) for
    O(cluster_generations)."
  - The annotation value is compact JSON with sorted keys.
  - On OpenShift, the machine-config-operator reports the same in the MachineConfigNode objects for the sets it
    handles itself.
seealso:
  - module: pinned.images.prefetch
  - module: pinned.images.pinned_image_set_info
"""

EXAMPLES = r"""
- name: Mark the nodes as progressing before the prefetch
  pinned.images.pinned_image_status:
    nodes:
      - name: worker-0
        state: progressing
        sets:
          - name: worker-pinned-images
            images:
              - quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
  delegate_to: localhost

- name: Record the result
  pinned.images.pinned_image_status:
    nodes:
      - name: worker-0
        state: done
        sets: "{{ worker_sets }}"
        images: "{{ prefetch_result.images }}"
    kubeconfig: ~/.kube/config
  delegate_to: localhost
"""

RETURN = r"""
nodes:
  description: Per node, the status written (or that would be written) and whether it changed.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The Node name.
      type: str
    changed:
      description: Whether the annotation changed.
      type: bool
    summary:
      description: V(progressing), V(degraded) or V(current).
      type: str
    status:
      description: The status document stored in the annotation.
      type: dict
  sample:
    - name: worker-0
      changed: true
      summary: current
      status:
        pinnedImageSets:
          - name: worker-pinned-images
            desiredGeneration: 2
            currentGeneration: 2
        conditions:
          - type: PinnedImageSetsProgressing
            status: "False"
            reason: AsExpected
            message: ""
            lastTransitionTime: "2026-01-01T00:00:00Z"
          - type: PinnedImageSetsDegraded
            status: "False"
            reason: AsExpected
            message: ""
            lastTransitionTime: "2026-01-01T00:00:00Z"
        imageListHashes:
          worker-pinned-images: sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
missing:
  description: Nodes the cluster does not have.
  returned: always
  type: list
  elements: str
"""

import copy
from typing import Any, Dict

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._openshift.node_status import (
    DEFAULT_ANNOTATION,
    STATE_DONE,
    STATES,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module
from ansible_collections.pinned.images.plugins.module_utils._runs.pinned_image_status import run


def _argument_spec() -> Dict[str, Any]:
    spec = dict(
        nodes=dict(
            type="list",
            elements="dict",
            required=True,
            options=dict(
                name=dict(type="str", required=True),
                state=dict(type="str", choices=list(STATES), default=STATE_DONE),
                sets=dict(
                    type="list",
                    elements="dict",
                    default=[],
                    options=dict(
                        name=dict(type="str", required=True),
                        images=dict(type="list", elements="str", default=[]),
                        generation=dict(type="int"),
                    ),
                ),
                images=dict(type="list", elements="dict", default=[]),
                error=dict(type="str"),
            ),
        ),
        annotation=dict(type="str", default=DEFAULT_ANNOTATION),
        cluster_generations=dict(type="bool", default=True),
    )
    spec.update(copy.deepcopy(K8S_AUTH_ARG_SPEC))
    return spec


def main() -> None:
    module = AnsibleModule(argument_spec=_argument_spec(), supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
