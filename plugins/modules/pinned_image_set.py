#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: pinned_image_set
short_description: Manage OpenShift PinnedImageSets in a cluster or as YAML files
version_added: 0.1.0
author:
  - pinned.images developers (@pinned-images)
description:
  - Creates, updates or deletes a C(machineconfiguration.openshift.io/v1) PinnedImageSet in a cluster with
    server-side apply (field manager C(pinned-images)), and/or writes it as C(<name>.yaml) into a directory, for
    example a GitOps repository.
  - The set is built from O(name), O(images), O(labels) and O(pool_selector), or taken from O(definition).
  - Before anything is applied or written, the set is validated as the v1 API validates it (digest references only,
    C(host[:port][/namespace]/name) form, 1 to 500 unique images, RFC 1123 name, label syntax). Every problem is
    reported at once and nothing is applied or written.
  - In the cluster, only the fields this module sets are owned by it; fields other managers set are kept. When another
    field manager owns a field this module would change, the module fails and names the field and the manager,
    unless O(force_conflicts=true).
  - Files are written atomically and byte-stable (same set, same bytes), so an unchanged set leaves the file alone.
  - On OpenShift, the machine config pools pick sets by label. The pools OpenShift creates select sets labelled
    C(machineconfiguration.openshift.io/role=<pool>) (for example V(worker) or V(master)).
extends_documentation_fragment:
  - pinned.images.k8s_auth
options:
  name:
    description:
      - The name of the set (an RFC 1123 subdomain; sets are cluster-scoped).
      - Required unless O(definition) is given. Mutually exclusive with O(definition).
    type: str
  images:
    description:
      - The images to pin, as digest references with the registry written out,
        V(quay.io/org/name@sha256:<64 lower-case hex digits>).
      - Required with O(state=present) unless O(definition) is given. Mutually exclusive with O(definition).
    type: list
    elements: str
  labels:
    description:
      - Labels of the set. Machine config pools select sets by these labels, for example
        C(machineconfiguration.openshift.io/role=worker) for the worker pool.
      - Mutually exclusive with O(definition).
    type: dict
  pool_selector:
    description:
      - A label selector (C(matchLabels), C(matchExpressions)) over machine config pool labels, rendered as
        C(spec.machineConfigPoolSelector), the field of the original PinnedImageSet proposal.
      - The v1 API of current OpenShift releases does not have this field and prunes it (the API server's warning is
        reported); there, use O(labels). It is kept in files written with O(dest).
      - Mutually exclusive with O(definition).
    type: dict
  definition:
    description:
      - A complete PinnedImageSet object, as an alternative to O(name), O(images), O(labels) and O(pool_selector).
      - Only C(metadata.name), C(metadata.labels), C(metadata.annotations), C(spec.pinnedImages) and
        C(spec.machineConfigPoolSelector) are used; other fields are dropped with a warning.
    type: dict
  state:
    description:
      - V(present) creates or updates the set; V(absent) deletes it from the cluster and removes its file from O(dest).
    type: str
    choices: [present, absent]
    default: present
  dest:
    description:
      - A directory to write the set to, as C(<dest>/<name>.yaml) (mode C(0644); keys sorted, so the same set always
        gives the same bytes). It is created when missing.
      - The file starts with the line C(# Rendered by pinned.images ...) and the object carries the annotation
        C(pinned.images/rendered-by) (the ownership mark of docs/gitops.md). An existing file of that name without the
        mark (and not the bytes an earlier version wrote) is the user's, so the module fails naming it, before anything
        is written or applied, and never replaces nor removes it.
      - A relative path is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
    type: path
  apply:
    description:
      - Whether to apply the set to the cluster (or delete it from there with O(state=absent)).
      - Defaults to V(true) when O(dest) is not set and to V(false) when it is.
    type: bool
  force_conflicts:
    description:
      - Take ownership of fields another field manager owns instead of failing (server-side apply C(force)).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: The API server checks the change with a server-side dry run (C(dryRun=All)); no file is written.
  diff_mode:
    support: full
    description: Shows the object (without server-maintained metadata) and the file before and after.
  platform:
    support: full
    platforms: posix
    description: Runs on POSIX hosts; to reach a cluster, usually on the controller (delegated to localhost).
requirements:
  - PyYAML
notes:
  - "RBAC for the cluster: C(get), C(create) and C(patch) on C(pinnedimagesets.machineconfiguration.openshift.io);
    C(delete) for O(state=absent)."
  - The module needs the C(kubernetes) Python library only when it talks to a cluster.
seealso:
  - module: pinned.images.pinned_image_set_info
  - module: pinned.images.crio_pinned_images
"""

EXAMPLES = r"""
- name: Pin two images on the worker pool
  pinned.images.pinned_image_set:
    name: worker-pinned-images
    labels:
      machineconfiguration.openshift.io/role: worker
    images:
      - quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
      - registry.example.com/team/app@sha256:1111111111111111111111111111111111111111111111111111111111111111
    kubeconfig: ~/.kube/config
  delegate_to: localhost

- name: Write the set into a GitOps repository instead of applying it
  pinned.images.pinned_image_set:
    name: worker-pinned-images
    labels:
      machineconfiguration.openshift.io/role: worker
    images: "{{ worker_images }}"
    dest: "{{ playbook_dir }}/gitops/pinned-image-sets"
  delegate_to: localhost

- name: Apply a set from a file, with a token
  pinned.images.pinned_image_set:
    definition: "{{ lookup('ansible.builtin.file', 'sets/master.yaml') | from_yaml }}"
    host: https://api.cluster.example.com:6443
    api_key: "{{ cluster_token }}"
    ca_cert: /etc/pki/cluster-ca.pem
  delegate_to: localhost

- name: Preview the change with a server-side dry run
  pinned.images.pinned_image_set:
    name: worker-pinned-images
    labels:
      machineconfiguration.openshift.io/role: worker
    images: "{{ worker_images }}"
  check_mode: true
  diff: true
  delegate_to: localhost

- name: Remove the set
  pinned.images.pinned_image_set:
    name: worker-pinned-images
    state: absent
  delegate_to: localhost
"""

RETURN = r"""
name:
  description: The name of the set.
  returned: always
  type: str
  sample: worker-pinned-images
definition:
  description: The PinnedImageSet as rendered from the options, as applied and written.
  returned: when O(state=present)
  type: dict
  sample:
    apiVersion: machineconfiguration.openshift.io/v1
    kind: PinnedImageSet
    metadata:
      name: worker-pinned-images
      labels:
        machineconfiguration.openshift.io/role: worker
    spec:
      pinnedImages:
        - name: quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000
object:
  description:
    - The set as the API server stored it (or would store it, in check mode), without C(managedFields),
      C(resourceVersion), C(uid), C(generation) and C(creationTimestamp).
    - Fields set by other field managers are included.
  returned: when applied to the cluster with O(state=present)
  type: dict
path:
  description: The file the set was written to (or removed from).
  returned: when O(dest) is set
  type: str
  sample: /srv/gitops/pinned-image-sets/worker-pinned-images.yaml
file_changes:
  description: The file in O(dest) under C(created), C(changed) (its bytes differ) or C(removed) (would be, in
    check mode); all three lists are empty when the file's bytes already match.
  returned: when O(dest) is set
  type: dict
  sample:
    created: []
    changed: [/srv/gitops/pinned-image-sets/worker-pinned-images.yaml]
    removed: []
"""

import copy

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module
from ansible_collections.pinned.images.plugins.module_utils._runs.pinned_image_set import run


def _argument_spec():
    spec = dict(
        name=dict(type="str"),
        images=dict(type="list", elements="str"),
        labels=dict(type="dict"),
        pool_selector=dict(type="dict"),
        definition=dict(type="dict"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        dest=dict(type="path"),
        apply=dict(type="bool"),
        force_conflicts=dict(type="bool", default=False),
    )
    spec.update(copy.deepcopy(K8S_AUTH_ARG_SPEC))
    return spec


def main():
    module = AnsibleModule(
        argument_spec=_argument_spec(),
        mutually_exclusive=[
            ("definition", "name"),
            ("definition", "images"),
            ("definition", "labels"),
            ("definition", "pool_selector"),
        ],
        required_one_of=[("name", "definition")],
        required_if=[("state", "present", ("images", "definition"), True)],
        supports_check_mode=True,
    )
    end_module(module, run)


if __name__ == "__main__":
    main()
