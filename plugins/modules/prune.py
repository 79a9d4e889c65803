#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: prune
short_description: Remove the images a node no longer wants that this collection pulled or pinned
version_added: 0.1.0
description:
  - Removes, through CRI C(RemoveImage), the images that O(record_file) names (the images M(pinned.images.prefetch)
    pulled or pinned on this node) and that O(images), the node's wanted list, no longer holds. An image the
    record does not name is never removed, so an image pulled outside this collection stays; without a record
    nothing is removed.
  - "An image is kept, with its reason, when: another name or a digest of it is wanted (V(wanted)); it has a name
    the record does not (a tag, or a digest under another repository), or the record holds its tag without an
    image id (V(other_names)); one of its names matches a O(keep) pattern (V(keep)); a container uses it, in any
    state (CRI C(ListContainers)), or it is the runtime's pause image (C(sandboxImage) in CRI C(Status))
    (V(in_use)); the runtime still reports it pinned once this collection's pin is gone, or its pin is not this
    collection's (V(pinned)); it is younger than O(min_age) (V(young))."
  - The images to remove lose this collection's pin first (the containerd label this collection set, or their
    exact entries of the CRI-O drop-in O(dropin_path), which CRI-O then reloads; a pattern entry, or one that also
    pins a wanted image, stays and keeps the image as V(pinned)), and CRI is read again before the removal. The
    first runtime error other than "not found" stops the removals.
  - The record forgets the images removed and those no longer on the node. A record that is not JSON, not this
    collection's format, not owned by this user or writable by others fails the task, naming it; nothing is
    removed.
author:
  - pinned.images developers (@pinned-images)
extends_documentation_fragment:
  - pinned.images.cri
  - pinned.images.host_root
  - pinned.images.node_state
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Unpins and removes nothing and leaves the record as it is; reports the images it would remove and the
      bytes they would free, with the reasons of the others.
  diff_mode:
    support: full
    details: The recorded images no longer wanted that the node has, before and after; and the drop-in's diff when
      the unpin rewrote it.
  platform:
    platforms: posix
options:
  images:
    description:
      - The images the node wants (the union of its sets); a recorded image that is not one of them is a candidate.
    type: list
    elements: str
    required: true
  allow_empty:
    description:
      - With O(images=[]) every recorded image is a candidate. V(false) fails before the runtime is contacted,
        naming O(images); V(true) prunes them.
    type: bool
    default: false
  keep:
    description:
      - Patterns (C(fnmatch) with C(*), C(?), C([...])) of image names never removed, for example V(quay.io/org/base*).
        Matched against every name of an image (its tags, digests and id).
    type: list
    elements: str
    default: []
  min_age:
    description:
      - Images younger than this are kept, as V(90s), V(30m), V(2h), V(7d) or seconds. The age is the time since
        this collection first recorded the image (CRI tells no pull time). V(0) keeps none for their age.
    type: str
    default: "0"
  record_file:
    description:
      - The record of the images M(pinned.images.prefetch) pulled and pinned on this node (its
        O(pinned.images.prefetch#module:record_file)).
      - Default is C(pinned-images-record.json) in O(state_dir), where M(pinned.images.prefetch) keeps it by
        default, so that an ad hoc prune with only O(images) follows an ad hoc prefetch.
    type: path
  lock_file:
    description:
      - The node lock M(pinned.images.prefetch) takes (its O(pinned.images.prefetch#module:lock_file)); the prune
        holds it, so that a prefetch never runs at the same time. Not taken in check mode.
      - Default is C(prefetch.lock) in O(state_dir), the prefetch's default.
    type: path
  run_id:
    description:
      - A name for this run, written to O(lock_file).
    type: str
  pin:
    description:
      - How this collection pinned the images, to unpin them. V(auto) picks by the runtime, as
        M(pinned.images.prefetch) does (the drop-in on CRI-O unless the machine-config-operator manages the node,
        the label on containerd 1.7.3 and later); V(none) unpins nothing.
    type: str
    choices: [none, auto, dropin, label]
    default: auto
  mco_dir:
    description:
      - The machine-config-daemon's directory, as M(pinned.images.prefetch)'s O(pinned.images.prefetch#module:mco_dir).
    type: path
    default: /etc/machine-config-daemon
  dropin_path:
    description:
      - The CRI-O drop-in this collection pins with.
    type: path
    default: /etc/crio/crio.conf.d/50-pinned-images
  crio_reload:
    description:
      - How CRI-O is made to read the drop-in once the unpin rewrote it, as M(pinned.images.prefetch)'s.
    type: str
    choices: [none, systemd, signal]
    default: systemd
  crio_pid_file:
    description:
      - File holding the CRI-O process id, for O(crio_reload=signal).
    type: path
  settle_timeout:
    description:
      - Seconds to wait after the unpin until CRI reports the images unpinned (CRI-O after it reloaded the drop-in,
        containerd after the label change reached its CRI image cache). An image still pinned then is kept as
        V(pinned).
    type: float
    default: 10.0
seealso:
  - module: pinned.images.prefetch
"""

EXAMPLES = r"""
- name: Remove the images this node no longer wants
  become: true
  pinned.images.prune:
    images: "{{ node_wanted_images }}"
    keep:
      - quay.io/openshift-release-dev/*
    min_age: 1d
"""

RETURN = r"""
images:
  description: One decision per recorded image the node has that no wanted image is (one per image id).
  returned: always
  type: list
  elements: dict
  contains:
    image:
      description: The alphabetically first of its recorded names.
      type: str
    names:
      description: Its recorded names.
      type: list
      elements: str
    id:
      description: The runtime's image id.
      type: str
    size:
      description: Its size in bytes as CRI reports it.
      type: int
    action:
      description: V(remove) (removed, or in check mode would be) or V(keep).
      type: str
    reason:
      description: Why it is kept, V(wanted), V(other_names), V(keep), V(in_use), V(pinned) or V(young); null when removed.
      type: str
    detail:
      description: The reason in words (the container, the pattern, the age).
      type: str
removed:
  description: The images removed (in check mode, that would be).
  returned: always
  type: list
  elements: str
kept:
  description: The images kept.
  returned: always
  type: list
  elements: str
gone:
  description: Recorded names no longer on the node, which the record forgets.
  returned: always
  type: list
  elements: str
totals:
  description: C(removed), C(kept) and C(freed_bytes).
  returned: always
  type: dict
freed_bytes:
  description: The sum of the CRI sizes of the images removed (in check mode, that would be); layers they share
    with kept images stay on disk, so the disk may gain less.
  returned: always
  type: int
  sample: 734003200
record_file:
  description: The record read.
  returned: always
  type: str
record_changed:
  description: Whether the record was rewritten.
  returned: when not in check mode
  type: bool
pin:
  description: C(method) (the pin method unpinned), C(changed), C(unpinned) (the label records or drop-in entries
    removed).
  returned: always
  type: dict
runtime:
  description: The runtime's CRI Version and endpoint.
  returned: always
  type: dict
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
from ansible_collections.pinned.images.plugins.module_utils._runs.prune import run


def main():
    spec = dict(
        images=dict(type="list", elements="str", required=True),
        allow_empty=dict(type="bool", default=False),
        keep=dict(type="list", elements="str", default=[]),
        min_age=dict(type="str", default="0"),
        record_file=dict(type="path"),
        lock_file=dict(type="path"),
        run_id=dict(type="str"),
        pin=dict(type="str", choices=list(PIN_CHOICES), default=PIN_AUTO),
        mco_dir=dict(type="path", default=MCO_DIRECTORY),
        dropin_path=dict(type="path", default=DEFAULT_PATH),
        crio_reload=dict(type="str", choices=["none", "systemd", "signal"], default="systemd"),
        crio_pid_file=dict(type="path"),
        settle_timeout=dict(type="float", default=10.0),
        **CRI_CLIENT_ARGUMENT_SPEC,
        **HOST_ROOT_ARGUMENT_SPEC,
        **NODE_STATE_ARGUMENT_SPEC,
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
