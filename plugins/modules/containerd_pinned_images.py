#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: containerd_pinned_images
short_description: Pin container images on a containerd node with the io.cri-containerd.pinned label
version_added: 0.1.0
author:
  - pinned.images developers (@pinned-images)
description:
  - Sets the label C(io.cri-containerd.pinned=pinned) on every image record (digest name, tags and image id) of each
    wanted image in containerd's C(k8s.io) namespace, through containerd's images API on its socket. containerd
    1.7.3 and later then report the image as C(pinned) through CRI, and the kubelet's image garbage collection never
    removes it.
  - The images come from O(images), or from PinnedImageSet objects (O(sets)); with O(pools) or O(node_labels) only
    the sets of this node's pools are used, as in M(pinned.images.crio_pinned_images).
  - Only images the runtime has (checked with the CRI C(ImageStatus) call) are pinned; any missing image fails the
    module before anything is written, unless O(force=true). Prefetch the images first, for example with
    M(pinned.images.prefetch).
  - Records this module pins also get the label C(pinned.images/pinned-by=pinned.images). Images that are no longer
    wanted lose both labels, but only on records carrying that mark, so a pin set by hand or by another tool stays.
    O(state=absent) removes every pin this module made; so does a selection of no image with O(allow_empty=true),
    which otherwise fails without touching a pin.
  - Nothing is written when nothing changes.
  - For CRI-O, use M(pinned.images.crio_pinned_images).
extends_documentation_fragment:
  - pinned.images.cri
  - pinned.images.host_root
  - pinned.images.image_selection
options:
  state:
    description:
      - V(present) pins the images and unpins what this module pinned before and is no longer wanted;
        V(absent) unpins everything this module pinned.
    type: str
    choices: [present, absent]
    default: present
  require_digest:
    description:
      - Accept only digest references in O(images). Patterns are never accepted.
    type: bool
    default: true
  force:
    description:
      - Pin the images the runtime has even when some are missing; the missing ones are listed in RV(missing)
        and pinned by a later run once they are present.
    type: bool
    default: false
  old_containerd:
    description:
      - What to do on containerd older than 1.7.3, which stores the label but does not report the image as pinned
        (so the kubelet may still garbage-collect it).
      - V(fail) fails with that message; V(warn) sets the labels anyway and warns.
      - A runtime that is not containerd always fails.
      - Its alias O(old_runtime) is its former name.
    type: str
    aliases: [old_runtime]
    choices: [fail, warn]
    default: fail
  settle_timeout:
    description:
      - Seconds to wait, after a change, until CRI reports the wanted images as pinned and the unpinned ones as not
        pinned. The CRI plugin learns of label changes from containerd's event stream, shortly after they are
        written; the module fails when it has not within this time.
      - Not used on containerd older than 1.7.3, which never reports the label.
    type: float
    default: 10.0
  containerd_namespace:
    description:
      - The containerd namespace of the images; the CRI plugin uses V(k8s.io).
    type: str
    default: k8s.io
attributes:
  check_mode:
    support: full
    description: Nothing is written; the result says what would change.
  diff_mode:
    support: full
    description: Shows the pinned image records before and after.
  platform:
    support: full
    platforms: posix
    description: Runs on POSIX hosts.
requirements:
  - PyYAML (on the node, to read set files)
notes:
  - O(cri_socket) is containerd's own socket, which serves both CRI and the images API.
  - A record pulled later under a new name (for example a new tag) is labelled by the next run.
seealso:
  - module: pinned.images.prefetch
  - module: pinned.images.crio_pinned_images
"""

EXAMPLES = r"""
- name: Pin two prefetched images on a containerd node
  pinned.images.containerd_pinned_images:
    images:
      - quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
      - registry.example.com/team/app@sha256:1111111111111111111111111111111111111111111111111111111111111111
  become: true

- name: Pin the images of the worker pool's PinnedImageSets, from files on the node
  pinned.images.containerd_pinned_images:
    sets:
      - /etc/pinned-images/sets
    pools: [worker]
  become: true

- name: Preview the change
  pinned.images.containerd_pinned_images:
    images: "{{ wanted_images }}"
  check_mode: true
  diff: true

- name: Set the labels on containerd 1.6 too, ready for an upgrade
  pinned.images.containerd_pinned_images:
    images: "{{ wanted_images }}"
    old_containerd: warn
  become: true

- name: Remove every pin this collection made
  pinned.images.containerd_pinned_images:
    state: absent
  become: true
"""

RETURN = r"""
images:
  description: The wanted images the node has, all pinned now (sorted).
  returned: always
  type: list
  elements: str
  sample:
    - quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
pinned:
  description: Wanted images that were not pinned before and are now (or would be, in check mode).
  returned: always
  type: list
  elements: str
unchanged:
  description: Wanted images that were pinned already (by this module or by someone else).
  returned: always
  type: list
  elements: str
unpinned:
  description: Images this module had pinned and that are no longer wanted, one name each.
  returned: always
  type: list
  elements: str
missing:
  description: Wanted images the runtime does not have; the module failed on them unless O(force=true).
  returned: always
  type: list
  elements: str
records:
  description: The image record names labelled (C(pinned)) and unlabelled (C(unpinned)).
  returned: always
  type: dict
  sample: {"pinned": ["quay.io/org/app@sha256:1111111111111111111111111111111111111111111111111111111111111111"], "unpinned": []}
set_names:
  description: The PinnedImageSets whose images were used, in the order they were found; empty with O(images).
  returned: always
  type: list
  elements: str
runtime:
  description: The runtime's CRI C(Version) (C(runtime_name), C(runtime_version), C(runtime_api_version)).
  returned: when the runtime answered
  type: dict
  sample: {"runtime_name": "containerd", "runtime_version": "1.7.24", "runtime_api_version": "v1"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import CRI_NAMESPACE
from ansible_collections.pinned.images.plugins.module_utils._runs.containerd_pinned_images import run
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    CRI_CLIENT_ARGUMENT_SPEC,
    HOST_ROOT_ARGUMENT_SPEC,
    SELECTION_ARGUMENT_SPEC,
    SELECTION_MUTUALLY_EXCLUSIVE,
    SELECTION_REQUIRED_BY,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module


def main():
    argument_spec = dict(
        SELECTION_ARGUMENT_SPEC,
        state=dict(type="str", default="present", choices=["present", "absent"]),
        require_digest=dict(type="bool", default=True),
        force=dict(type="bool", default=False),
        old_containerd=dict(type="str", default="fail", choices=["fail", "warn"], aliases=["old_runtime"]),
        containerd_namespace=dict(type="str", default=CRI_NAMESPACE),
        settle_timeout=dict(type="float", default=10.0),
        **CRI_CLIENT_ARGUMENT_SPEC,
        **HOST_ROOT_ARGUMENT_SPEC,
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        supports_check_mode=True,
        mutually_exclusive=SELECTION_MUTUALLY_EXCLUSIVE,
        required_by=SELECTION_REQUIRED_BY,
        required_if=[("state", "present", ("images", "sets"), True)],
    )
    end_module(module, run)


if __name__ == "__main__":
    main()
