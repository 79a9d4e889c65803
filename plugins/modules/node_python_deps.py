#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_python_deps
short_description: Give the node modules grpcio and protobuf in a private directory, without pip
version_added: 0.1.0
description:
  - Reports whether this interpreter imports C(grpc) and C(google.protobuf) at versions the node modules accept, and
    its tag (Python version, implementation, libc family, machine), for example V(cp311-manylinux-x86_64).
  - With O(state=present), unpacks wheels already copied to the node into C(<path>/<tag>/site), checks each wheel by
    sha256 and writes a manifest of the sha256 of every unpacked file. The system Python is not touched. A directory
    that matches its manifest and the wheels is left alone; a changed, missing or extra file makes the module unpack
    the whole directory anew (atomically swapped in).
  - The node modules use the directory when it is V(/var/lib/pinned-images/python) or the environment variable
    C(PINNED_IMAGES_PYTHON_DIR) names it (the C(pinned.images.node) role sets it), and only while it belongs to the
    user running them, is writable by no one else and matches its manifest. C(PYTHONPATH=<path>/<tag>/site) works
    too.
  - With O(state=absent), removes O(path).
  - The role C(pinned.images.node) runs this module when a node module reports missing dependencies; the playbook
    C(pinned.images.node_deps) runs it for ad hoc use. See C(docs/nodes.md).
author:
  - pinned.images developers (@pinned-images)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports whether it would unpack or remove the directory, and writes nothing.
  diff_mode:
    support: none
    details: RV(reason) says what differs.
  platform:
    platforms: posix
options:
  path:
    description:
      - The private directory; one subdirectory per interpreter tag. Only root should be able to write it.
    type: path
    default: /var/lib/pinned-images/python
  state:
    description:
      - V(present) unpacks O(wheels), V(absent) removes O(path). Omitted, the module only reports.
    type: str
    choices: [present, absent]
  wheels:
    description:
      - The wheels to unpack, for O(state=present), each with the sha256 the controller's wheelhouse has
        (M(pinned.images.node_wheelhouse) returns them as C(checksums)). They must have been copied to
        C(<path>/<tag>/wheels/).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The wheel's file name.
        type: str
        required: true
      sha256:
        description: Its sha256 (hex).
        type: str
        required: true
seealso:
  - module: pinned.images.node_wheelhouse
  - module: pinned.images.prefetch
"""

EXAMPLES = r"""
- name: What does this node's Python need?
  pinned.images.node_python_deps:
  register: node_deps

- name: Unpack the wheels copied to the node
  become: true
  pinned.images.node_python_deps:
    state: present
    wheels:
      - name: grpcio-1.85.3-cp311-cp311-manylinux_2_17_x86_64.whl
        sha256: 3f1c0e7b6a1f7e4e62a7d1b4c5e0e2c8d9b3a4f5e6d7c8b9a0f1e2d3c4b5a697

- name: Remove the private directory
  become: true
  pinned.images.node_python_deps:
    state: absent
"""

RETURN = r"""
interpreter:
  description: This interpreter as the wheelhouse needs it.
  returned: always
  type: dict
  contains:
    executable:
      description: Its path.
      type: str
    version:
      description: Its full version.
      type: str
    python:
      description: Major and minor version.
      type: str
    implementation:
      description: V(cp) for CPython.
      type: str
    libc:
      description: V(manylinux) (glibc) or V(musllinux).
      type: str
    libc_version:
      description: The glibc version, empty on musl.
      type: str
    machine:
      description: The machine, for example V(x86_64) or V(aarch64).
      type: str
    tag:
      description: The directory and wheelhouse tag.
      type: str
  sample:
    executable: /usr/bin/python3
    version: 3.11.2
    python: "3.11"
    implementation: cp
    libc: manylinux
    libc_version: "2.36"
    machine: x86_64
    tag: cp311-manylinux-x86_64
importable:
  description:
    - Whether this interpreter imports grpc and protobuf at versions the node modules accept without the private
      directory, so that it needs none.
  returned: always
  type: bool
problem:
  description: Why it does not, or null.
  returned: always
  type: str
pythonpath:
  description: The directory to put on C(PYTHONPATH) for this interpreter.
  returned: always
  type: str
  sample: /var/lib/pinned-images/python/cp311-manylinux-x86_64/site
reason:
  description: Why the directory was (or would be) unpacked anew, for O(state=present).
  returned: when state is present
  type: str
  sample: /var/lib/pinned-images/python/cp311-manylinux-x86_64/site/grpc/__init__.py was changed
files:
  description: The number of files in the directory after the run, for O(state=present).
  returned: when state is present
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._node_python.paths import DEFAULT_DIR
from ansible_collections.pinned.images.plugins.module_utils._runs.node_python_deps import run
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default=DEFAULT_DIR),
            state=dict(type="str", choices=["present", "absent"]),
            wheels=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=dict(type="str", required=True),
                    sha256=dict(type="str", required=True),
                ),
            ),
        ),
        required_if=[("state", "present", ("wheels",))],
        supports_check_mode=True,
    )
    end_module(module, run)


if __name__ == "__main__":
    main()
