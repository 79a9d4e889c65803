#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_wheelhouse
short_description: Fill the controller's wheelhouse with grpcio and protobuf wheels for node interpreters
version_added: 0.1.0
description:
  - Runs on the controller (C(delegate_to) V(localhost)). For each node tag in O(targets), for example
    V(cp311-manylinux-x86_64), makes sure C(<path>/<tag>/) holds a wheel of each requirement of O(requirements)
    that applies to that Python version (environment markers evaluated for the target), and returns the wheels with
    their sha256.
  - Missing wheels are fetched with C(pip download --only-binary=:all:) for exactly that Python version,
    implementation and platform (C(manylinux2014)/C(manylinux_2_17) or C(musllinux_1_1)/C(musllinux_1_2), by machine), from the index
    pip is configured with. A tag whose wheels are all present needs no index (air-gapped sites fill the wheelhouse
    in advance with the playbook C(pinned.images.wheelhouse)).
author:
  - pinned.images developers (@pinned-images)
requirements:
  - pip in the controller's Python (only to download)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports what it would download and downloads nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  path:
    description:
      - The wheelhouse directory. Default C($PINNED_IMAGES_WHEELHOUSE), else C(~/.cache/pinned-images/wheelhouse)
        (C($XDG_CACHE_HOME) when set).
    type: path
  targets:
    description:
      - Node tags as M(pinned.images.node_python_deps) reports them, C(cp3<minor>-<manylinux|musllinux>-<machine>).
    type: list
    elements: str
    required: true
  requirements:
    description:
      - Requirement lines (C(requirements-node.txt) of this collection); comments and blank lines are ignored.
    type: list
    elements: str
    required: true
  download:
    description:
      - Download missing wheels. V(false) fails instead, naming the tag and the command that fills the wheelhouse.
    type: bool
    default: true
  pip:
    description:
      - The pip command. Default the module's own Python, C(python -m pip).
    type: list
    elements: str
  timeout:
    description: Seconds one C(pip download) may take.
    type: float
    default: 600
seealso:
  - module: pinned.images.node_python_deps
"""

EXAMPLES = r"""
- name: Wheels for the nodes' Python 3.9 on x86_64
  pinned.images.node_wheelhouse:
    targets: [cp39-manylinux-x86_64]
    requirements: "{{ lookup('ansible.builtin.file', 'requirements-node.txt') | split('\n') }}"
  delegate_to: localhost
  run_once: true
  register: wheelhouse
"""

RETURN = r"""
path:
  description: The wheelhouse directory.
  returned: always
  type: str
targets:
  description:
    - Per tag, its directory, its wheels, C(checksums) (name and sha256 of each wheel, as
      M(pinned.images.node_python_deps) takes them) and C(unmet) (requirements without a wheel, in check mode).
  returned: always
  type: dict
  sample:
    cp311-manylinux-x86_64:
      path: /root/.cache/pinned-images/wheelhouse/cp311-manylinux-x86_64
      unmet: []
      checksums:
        - name: protobuf-7.36.2-cp310-abi3-manylinux2014_x86_64.whl
          sha256: 0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
      wheels:
        - name: protobuf-7.36.2-cp310-abi3-manylinux2014_x86_64.whl
          path: /root/.cache/pinned-images/wheelhouse/cp311-manylinux-x86_64/protobuf-7.36.2-cp310-abi3-manylinux2014_x86_64.whl
          sha256: 0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
          size: 322000
bytes:
  description: The total size of the wheels of all targets.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._runs.node_wheelhouse import run
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path"),
            targets=dict(type="list", elements="str", required=True),
            requirements=dict(type="list", elements="str", required=True),
            download=dict(type="bool", default=True),
            pip=dict(type="list", elements="str"),
            timeout=dict(type="float", default=600),
        ),
        supports_check_mode=True,
    )
    end_module(module, run)


if __name__ == "__main__":
    main()
