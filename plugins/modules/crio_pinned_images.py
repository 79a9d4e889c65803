#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: crio_pinned_images
short_description: Pin container images on a CRI-O node with the pinned_images drop-in
version_added: 0.1.0
author:
  - pinned.images developers (@pinned-images)
description:
  - Writes the CRI-O configuration drop-in that lists the images CRI-O reports as pinned, so the kubelet's image
    garbage collection never removes them. The file is byte-identical to the one OpenShift's machine-config-operator
    writes for the same images (C([crio]) / C([crio.image]) / C(pinned_images = [...]), sorted, de-duplicated).
  - The images come from O(images), or from PinnedImageSet objects (O(sets)); with O(pools) or O(node_labels) only
    the sets of this node's pools are used, as the machine-config-operator selects them.
  - Before the file changes, every image must be present in the container runtime (checked with the CRI
    C(ImageStatus) call), unless O(force=true). Prefetch the images first, for example with M(pinned.images.prefetch).
  - The file is replaced atomically and rewritten only when its content changes; CRI-O is then told to reload.
  - CRI-O reads its drop-in directory in file-name order, and the last file that sets C(pinned_images) replaces the
    whole list. Before writing, the other files of the directory are read in that order, and when one read after
    O(dropin_path) sets C(pinned_images) without all of these images, the task fails and names it (in check mode too),
    since CRI-O would pin none of them.
  - After a reload the pins are proven, not assumed; the module reads CRI C(ImageStatus) back and waits, up to
    O(settle_timeout) seconds, until CRI reports every wanted image that is on the node as pinned and every image
    the file no longer lists as not pinned; otherwise the task fails and says which images CRI reports wrongly.
    On a rerun whose file is as wanted, CRI is read once; when it disagrees (an earlier reload failed), CRI-O is
    reloaded once, with a warning, and then waited for the same way (in check mode the task then reports a change). With
    O(crio_reload=none) CRI is only read and reported (RV(cri_pinned)).
  - O(state=absent) removes the file. A selection of no image (O(images=[]), or sets that select nothing for this
    node) fails without touching it, unless O(allow_empty=true), which removes it too. With O(state=present), one of
    O(images) and O(sets) is required.
  - This is for CRI-O only. containerd pins an image through the image label C(io.cri-containerd.pinned=pinned),
    which M(pinned.images.containerd_pinned_images) sets.
extends_documentation_fragment:
  - pinned.images.cri
  - pinned.images.host_root
  - pinned.images.image_selection
options:
  dropin_path:
    description:
      - The drop-in file.
      - Its alias O(path) is its former name; M(pinned.images.prefetch) and M(pinned.images.prune) call it
        O(dropin_path) too.
    type: path
    aliases: [path]
    default: /etc/crio/crio.conf.d/50-pinned-images
  state:
    description:
      - V(present) writes the drop-in; V(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
  require_digest:
    description:
      - Accept only digest references in O(images).
      - With V(false), tag references and CRI-O's patterns are accepted too, a glob with one trailing C(*)
        (V(quay.io/org/*)) or a keyword between two C(*) (V(*pause*)). Patterns are not checked for presence.
    type: bool
    default: true
  force:
    description:
      - Write the file even when some images are not present in the container runtime.
      - Pinning an absent image protects nothing and hides a failed prefetch; the default refuses and lists every
        missing image.
      - With O(crio_reload=none) too, no runtime is needed. Where none answers (an image build, a bootc or Image
        Builder step, a node before CRI-O starts), the file is written with a warning, and CRI is not read back.
    type: bool
    default: false
  crio_reload:
    description:
      - How to make CRI-O read the changed file; only done when the content changed.
      - V(systemd) runs C(systemctl reload crio) (the unit sends SIGHUP). V(signal) sends SIGHUP to the process
        whose id is in O(crio_pid_file). V(none) leaves it to you.
      - Its alias O(reload) is its former name.
    type: str
    aliases: [reload]
    choices: [none, systemd, signal]
    default: systemd
  crio_pid_file:
    description:
      - File holding the CRI-O process id, for O(crio_reload=signal).
      - Its alias O(pid_file) is its former name.
    type: path
    aliases: [pid_file]
  settle_timeout:
    description:
      - Seconds to wait after a reload until CRI reports the pins as the drop-ins say.
    type: float
    default: 10.0
attributes:
  check_mode:
    support: full
    description: Nothing is written and CRI-O is not reloaded; presence and the other drop-ins are still checked.
  diff_mode:
    support: full
    description: Shows the drop-in before and after.
  platform:
    support: full
    platforms: posix
    description: Runs on POSIX hosts.
requirements:
  - PyYAML (on the node, to read set files)
notes:
  - The file is compared with the wanted text after trimming surrounding whitespace, as the machine-config-operator
    does, so a file it wrote is not rewritten.
  - On OpenShift, nodes whose pools have PinnedImageSets get this file from the machine-config-operator; do not manage
    it with both.
  - Paths in O(sets) are read on the managed node; give them as absolute paths.
seealso:
  - module: pinned.images.prefetch
  - module: pinned.images.machine_config
  - module: pinned.images.containerd_pinned_images
"""

EXAMPLES = r"""
- name: Pin two prefetched images
  pinned.images.crio_pinned_images:
    images:
      - quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
      - registry.example.com/team/app@sha256:1111111111111111111111111111111111111111111111111111111111111111
  become: true

- name: Pin the images of the worker pool's PinnedImageSets, from files on the node
  pinned.images.crio_pinned_images:
    sets:
      - /etc/pinned-images/sets
    pools: [worker]
  become: true

- name: Pick the node's pools from its labels and the pools in the set files
  pinned.images.crio_pinned_images:
    sets: [/etc/pinned-images/cluster.yaml]
    node_labels: "{{ node_info.resources[0].metadata.labels }}"
  become: true

- name: Preview the change without reloading CRI-O
  pinned.images.crio_pinned_images:
    images: "{{ wanted_images }}"
    crio_reload: none
  check_mode: true
  diff: true

- name: Stop pinning
  pinned.images.crio_pinned_images:
    state: absent
  become: true
"""

RETURN = r"""
path:
  description: The drop-in file.
  returned: always
  type: str
  sample: /etc/crio/crio.conf.d/50-pinned-images
images:
  description: The pinned images as written (sorted, de-duplicated); empty when the file is absent.
  returned: always
  type: list
  elements: str
  sample:
    - quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
set_names:
  description: The PinnedImageSets whose images were used, in the order they were found; empty with O(images).
  returned: always
  type: list
  elements: str
  sample: [worker-pinned-images]
reloaded:
  description: Whether CRI-O was told to reload.
  returned: always
  type: bool
  sample: true
cri_pinned:
  description:
    - What CRI C(ImageStatus) reports after the run, per image (the wanted ones and those the file no longer
      lists; patterns are not images); V(true) pinned, V(false) not pinned, V(null) not on the node.
  returned: always
  type: dict
  sample:
    quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000: true
overridden_by:
  description: The later drop-ins whose C(pinned_images) would void the wanted pins, when the module refused.
  returned: failure
  type: list
  elements: str
missing:
  description: Images not present in the runtime, when the module refused to pin them.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DEFAULT_PATH
from ansible_collections.pinned.images.plugins.module_utils._runs.crio_pinned_images import run
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
        dropin_path=dict(type="path", default=DEFAULT_PATH, aliases=["path"]),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        require_digest=dict(type="bool", default=True),
        force=dict(type="bool", default=False),
        crio_reload=dict(type="str", default="systemd", choices=["none", "systemd", "signal"], aliases=["reload"]),
        crio_pid_file=dict(type="path", aliases=["pid_file"]),
        settle_timeout=dict(type="float", default=10.0),
        **CRI_CLIENT_ARGUMENT_SPEC,
        **HOST_ROOT_ARGUMENT_SPEC,
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        supports_check_mode=True,
        mutually_exclusive=SELECTION_MUTUALLY_EXCLUSIVE,
        required_by=SELECTION_REQUIRED_BY,
        required_if=[("crio_reload", "signal", ("crio_pid_file",)), ("state", "present", ("images", "sets"), True)],
    )
    end_module(module, run)


if __name__ == "__main__":
    main()
