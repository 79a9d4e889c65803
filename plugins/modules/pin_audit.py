#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: pin_audit
short_description: Report which of a node's wanted images are present and pinned, without changing anything
version_added: 0.1.0
description:
  - Reads, through the node's CRI, which of O(images) the runtime has and which it reports pinned, and how the pin
    method in force holds them. On CRI-O, the collection's drop-in and the effective C(pinned_images) once every
    drop-in is read. On containerd, the image records of the wanted images that lack the pin label.
  - Also reports the images pinned by someone else, and the images the collection pulled or pinned that O(images)
    no longer names (prune candidates, from the collection's own pins and O(record_file)).
  - Nothing is pulled, written or reloaded. The C(pinned.images.audit) playbook calls it once per node and decides
    which nodes drifted.
author:
  - pinned.images developers (@pinned-images)
extends_documentation_fragment:
  - pinned.images.cri
  - pinned.images.host_root
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  images:
    description:
      - The images the node should hold pinned. Tags and digests are both accepted.
    type: list
    elements: str
    required: true
  pin:
    description:
      - The pin method to read, as the prefetch's O(pinned.images.prefetch#module:pin) option. V(auto) is the drop-in
        on CRI-O, the image label on containerd 1.7.3 and later, and V(none) elsewhere and on a node the
        machine-config-operator manages.
    type: str
    choices: [none, auto, dropin, label]
    default: auto
  dropin_path:
    description:
      - The collection's CRI-O drop-in. The others in its directory are read too, in CRI-O's order.
    type: path
    default: /etc/crio/crio.conf.d/50-pinned-images
  record_file:
    description:
      - The prefetch's record of what the collection pulled and pinned, for the prune candidates.
      - Default the record in O(state_dir), where the prefetch keeps it by default. Without a record only the pins
        tell the prune candidates.
    type: path
  state_dir:
    description:
      - The node directory where the prefetch keeps its lock and record (the prefetch's and the prune's
        O(pinned.images.prefetch#module:state_dir)); read only, never made.
      - Default C($PINNED_IMAGES_STATE_DIR) when the module's environment sets it.
    type: path
    default: /var/lib/pinned-images/state
  mco_dir:
    description:
      - Where the machine-config-operator's files tell that it manages this node.
    type: path
    default: /etc/machine-config-daemon
seealso:
  - module: pinned.images.prefetch
  - module: pinned.images.cri_image_info
"""

EXAMPLES = r"""
- name: Audit the node's pins
  become: true
  pinned.images.pin_audit:
    images:
      - quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
  register: node_audit

- name: Fail when an image may be collected
  ansible.builtin.assert:
    that: node_audit.missing + node_audit.unpinned | length == 0
"""

RETURN = r"""
runtime:
  description: The runtime's name, version and CRI API version, and the endpoint used.
  returned: always
  type: dict
pin:
  description: The pin method asked for (O(pin)); with V(auto) or an explicit method, images the node cannot pin
    are drift (the C(pinned.images.audit) playbook's C(cannot_pin)).
  returned: always
  type: str
  sample: auto
method:
  description: The pin method in force (V(dropin), V(label) or V(none)).
  returned: always
  type: str
  sample: dropin
mco_managed:
  description: What tells that the machine-config-operator manages the node, or null.
  returned: always
  type: str
wanted:
  description: The images asked for, normalised.
  returned: always
  type: list
  elements: str
present:
  description: The wanted images the runtime has.
  returned: always
  type: list
  elements: str
pinned:
  description: The wanted images CRI reports pinned.
  returned: always
  type: list
  elements: str
missing:
  description: The wanted images the runtime does not have.
  returned: always
  type: list
  elements: str
unpinned:
  description: The wanted images present but not pinned, which the kubelet's image GC may remove.
  returned: always
  type: list
  elements: str
pinned_by_others:
  description: Images CRI reports pinned that no wanted image is and the collection does not pin.
  returned: always
  type: list
  elements: str
prune_candidates:
  description: Images on the node that the collection pulled or pins and that no wanted image is.
  returned: always
  type: list
  elements: str
crio:
  description: CRI-O's drop-ins (method V(dropin)).
  returned: when method is dropin
  type: dict
  contains:
    path:
      description: The collection's drop-in.
      type: str
    exists:
      description: Whether it exists.
      type: bool
    images:
      description: The C(pinned_images) it sets, null when it sets none.
      type: list
      elements: str
    effective:
      description: The C(pinned_images) CRI-O keeps once every drop-in is read.
      type: list
      elements: str
    effective_from:
      description: The drop-in that sets it (the last in name order that does), null when none does.
      type: str
    not_listed:
      description: The wanted images the collection's drop-in does not list.
      type: list
      elements: str
    not_effective:
      description: The wanted images the effective C(pinned_images) does not pin.
      type: list
      elements: str
containerd:
  description: containerd's image records (method V(label)).
  returned: when method is label
  type: dict
  contains:
    unlabelled:
      description: The records of the wanted images that lack the pin label.
      type: list
      elements: str
    records:
      description: How many image records containerd holds.
      type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._openshift.mco_node import (
    DEFAULT_DIRECTORY as MCO_DIRECTORY,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DEFAULT_PATH
from ansible_collections.pinned.images.plugins.module_utils._pins.method import PIN_AUTO, PIN_CHOICES
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    CRI_CLIENT_ARGUMENT_SPEC,
    HOST_ROOT_ARGUMENT_SPEC,
    NODE_STATE_ARGUMENT_SPEC,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module
from ansible_collections.pinned.images.plugins.module_utils._runs.pin_audit import run


def main() -> None:
    argument_spec = dict(
        images=dict(type="list", elements="str", required=True),
        pin=dict(type="str", choices=list(PIN_CHOICES), default=PIN_AUTO),
        dropin_path=dict(type="path", default=DEFAULT_PATH),
        record_file=dict(type="path"),
        mco_dir=dict(type="path", default=MCO_DIRECTORY),
        state_dir=NODE_STATE_ARGUMENT_SPEC["state_dir"],
    )
    argument_spec.update(CRI_CLIENT_ARGUMENT_SPEC)
    argument_spec.update(HOST_ROOT_ARGUMENT_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
