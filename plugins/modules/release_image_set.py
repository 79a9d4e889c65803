#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: release_image_set
short_description: Turn an OpenShift release image into PinnedImageSets, read from its registry
version_added: 0.1.0
description:
  - Reads an OpenShift release image (the payload C(oc adm release info --pullspecs) lists) straight from its
    registry, with no C(oc). It reads the manifest (resolved to O(platform) for a multi-arch release), the config
    (which must carry the C(io.openshift.release) label) and the layer holding C(release-manifests/image-references)
    and C(release-manifests/release-metadata). Layers are streamed and reading stops once both files are read.
  - Returns the release version, its component images by digest, and PinnedImageSet objects ready for
    M(pinned.images.pinned_image_set), the C(pinned.images.cluster) role or the C(pinned.images.render) playbook.
  - Optionally estimates, as the disk guard of M(pinned.images.prefetch) does, the space the whole payload needs on
    a node, before anything is pulled.
  - Runs on the controller. Nothing is written unless O(dest) is given.
author:
  - pinned.images developers (@pinned-images)
extends_documentation_fragment:
  - pinned.images.registry
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The release is read as in a real run; O(dest) is not written, and the task is changed when it would be.
  diff_mode:
    support: full
    details: The O(dest) file before and after.
  platform:
    platforms: posix
options:
  release:
    description:
      - The release image, by digest (V(quay.io/openshift-release-dev/ocp-release@sha256:<64 hex digits>)) or by tag
        (V(quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64)); a tag is resolved to a digest, reported in
        RV(release_image).
    type: str
    required: true
  platform:
    description:
      - The platform whose manifest a multi-arch release is read by, and whose images the estimate counts, as
        V(os/arch[/variant]). Defaults to the platform of the controller.
    type: str
  include:
    description:
      - Keep only the components whose tag name (as in C(oc adm release info)) matches one of these shell patterns,
        for example V(machine-config-*). All components when empty.
    type: list
    elements: str
    default: []
  exclude:
    description:
      - Drop the components whose tag name matches one of these shell patterns.
    type: list
    elements: str
    default: []
  include_release_image:
    description:
      - Add the release image itself (by the digest read) to the images, as the cluster version operator pulls it first.
    type: bool
    default: true
  name:
    description:
      - Name of the PinnedImageSet; with O(pools), each set is named V(<name>-<pool>).
      - Defaults to V(release-<version>) (lower case, characters other than letters, digits, V(.) and V(-) as V(-)).
    type: str
  labels:
    description:
      - Labels of the set(s). With O(pools), each set also gets C(machineconfiguration.openshift.io/role=<pool>).
    type: dict
    default: {}
  pools:
    description:
      - One set per pool name (for example V([master, worker])), labelled for that pool's role, in RV(sets).
      - When empty, one set with O(labels) only.
    type: list
    elements: str
    default: []
  estimate:
    description:
      - Read the manifest of every image and report in RV(estimate) the space a node needs for the whole payload,
        as the disk guard of M(pinned.images.prefetch) counts it (each layer once, times O(expansion_factor)).
    type: bool
    default: true
  expansion_factor:
    description:
      - Compressed layer bytes are multiplied by this to estimate their unpacked size.
    type: float
    default: 2.0
  dest:
    description:
      - Write the set(s) to this YAML file (one document per set), atomically and only when the content changes.
    type: path
notes:
  - The sets name the images as the release lists them; mirrors apply to reads here and to pulls on the nodes.
  - A release whose image list exceeds the 500 images a PinnedImageSet holds fails; narrow it with O(include) or O(exclude).
seealso:
  - module: pinned.images.pinned_image_set
  - module: pinned.images.prefetch
"""

EXAMPLES = r"""
- name: Read the next release from a disconnected mirror, one set per pool
  pinned.images.release_image_set:
    release: quay.io/openshift-release-dev/ocp-release@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    pools: [master, worker]
    auth_file: "{{ playbook_dir }}/pull-secret.json"
    registry_mirrors:
      - prefix: quay.io/openshift-release-dev
        location: quay.io/openshift-release-dev
        mirrors:
          - location: mirror.example.com:8443/ocp
  register: release

- name: Hand the sets to the cluster
  pinned.images.pinned_image_set:
    definition: "{{ item }}"
  loop: "{{ release.sets }}"

- name: Write the set for GitOps, machine-config components only
  pinned.images.release_image_set:
    release: quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64
    include: ["machine-config-*"]
    dest: gitops/pinnedimagesets/release.yaml
"""

RETURN = r"""
release_image:
  description: The release image by digest (the index digest for a multi-arch release).
  returned: always
  type: str
  sample: quay.io/openshift-release-dev/ocp-release@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
version:
  description: The release version (C(release-metadata), else the C(io.openshift.release) label).
  returned: always
  type: str
  sample: 4.16.3
metadata:
  description: The C(release-metadata) document (C(version), C(previous), C(metadata)); empty when the release has none.
  returned: always
  type: dict
images:
  description: The images of the set(s), by digest, sorted.
  returned: always
  type: list
  elements: str
components:
  description: Tag name to image of the components kept by O(include) and O(exclude).
  returned: always
  type: dict
  sample: {"machine-config-operator": "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0a1b..."}
sets:
  description: The PinnedImageSet objects, one per pool in O(pools), else one.
  returned: always
  type: list
  elements: dict
set:
  description: The PinnedImageSet object, when there is exactly one.
  returned: when O(pools) has at most one name
  type: dict
source:
  description: Where the release was read from (a mirror, or the release's own registry).
  returned: always
  type: str
platform:
  description: The platform the multi-arch release was resolved to; empty for a single-platform release.
  returned: always
  type: str
layer:
  description: The layer that holds the release manifests, C(digest) and compressed C(size).
  returned: always
  type: dict
bytes_read:
  description: Layer bytes received from the registry to find the release manifests.
  returned: always
  type: int
estimate:
  description: What the payload needs on each node, as the prefetch disk guard counts it.
  returned: when O(estimate) is true
  type: dict
  contains:
    images:
      description: Images whose manifest was read.
      type: int
    layers:
      description: Distinct layers.
      type: int
    compressed_bytes:
      description: Sum of the distinct compressed layers.
      type: int
    required_bytes:
      description: RV(estimate.compressed_bytes) times O(expansion_factor).
      type: int
    expansion_factor:
      description: The O(expansion_factor) the estimate used.
      type: float
    required:
      description: RV(estimate.required_bytes) in words.
      type: str
    unreadable:
      description: Image to error, for the manifests that could not be read (not counted).
      type: dict
    registry_requests:
      description: HTTP requests made for the estimate.
      type: int
dest:
  description: The file written (or that would be).
  returned: when O(dest) is given
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._runs.options import REGISTRY_ARGUMENT_SPEC
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module
from ansible_collections.pinned.images.plugins.module_utils._runs.release_image_set import run


def main() -> None:
    argument_spec = dict(
        release=dict(type="str", required=True),
        platform=dict(type="str"),
        include=dict(type="list", elements="str", default=[]),
        exclude=dict(type="list", elements="str", default=[]),
        include_release_image=dict(type="bool", default=True),
        name=dict(type="str"),
        labels=dict(type="dict", default={}),
        pools=dict(type="list", elements="str", default=[]),
        estimate=dict(type="bool", default=True),
        expansion_factor=dict(type="float", default=2.0),
        dest=dict(type="path"),
    )
    argument_spec.update(REGISTRY_ARGUMENT_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
