# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # The options that select the images to pin (module_utils._runs.options.SELECTION_ARGUMENT_SPEC).
    DOCUMENTATION = r"""
options:
  images:
    description:
      - The images to pin.
      - With O(require_digest=true) each must be a digest reference with its registry written out,
        V(quay.io/org/name@sha256:<64 hex digits>).
      - Mutually exclusive with O(sets).
    type: list
    elements: str
  sets:
    description:
      - PinnedImageSet objects (dictionaries) or paths on the managed node to YAML files or directories
        (C(*.yaml) and C(*.yml), not recursive) that hold them.
      - Files may hold several documents; documents of other kinds are ignored, except MachineConfigPool objects,
        which are used as pools for O(node_labels).
      - Every set is validated as the C(machineconfiguration.openshift.io/v1) API does (digests only, at most
        500 images, unique names, RFC 1123 names); all problems are reported at once and nothing is written.
      - Without O(pools) and O(node_labels) the images of all sets are pinned.
      - Mutually exclusive with O(images).
    type: list
    elements: raw
  pools:
    description:
      - Machine config pools, as names or MachineConfigPool objects.
      - Without O(node_labels), the pools this node belongs to; the sets of these pools are used. A bare name means
        a pool shaped like OpenShift's built-in ones (it selects sets labelled
        C(machineconfiguration.openshift.io/role=<name>)).
      - With O(node_labels), further candidate pools next to the MachineConfigPool objects found in O(sets).
      - Requires O(sets).
    type: list
    elements: raw
    aliases: [pool]
  node_labels:
    description:
      - The labels of this node. The node's pools are picked by each pool's C(spec.nodeSelector), with the
        machine-config-operator's rules (C(master) wins over a custom pool, a custom pool over C(worker), and
        C(worker) sets still apply next to a custom pool).
      - When no pool is given or found in O(sets), OpenShift's built-in C(master) and C(worker) pools are assumed.
      - Requires O(sets).
    type: dict
  allow_empty:
    description:
      - What a selection of no image does with O(state=present) (O(images=[]), or O(sets) that select no image for
        this node, for example an empty directory).
      - V(false) fails before anything is touched, naming what was looked at, since an empty or misspelt input must not
        remove the pins, which are what keep the images from the kubelet's garbage collection.
      - V(true) empties the pins, as O(state=absent) does.
    type: bool
    default: false
"""
