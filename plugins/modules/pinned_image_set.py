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
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._atomic_file import (
    AtomicFileError,
    atomic_write,
    remove_file,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s_client import (
    connection_secrets,
    HAS_KUBERNETES,
    K8S_AUTH_ARG_SPEC,
    KUBERNETES_IMPORT_ERROR,
    K8sClient,
    K8sError,
    clean_object,
)
from ansible_collections.pinned.images.plugins.module_utils._label_selector import check_dns_subdomain
from ansible_collections.pinned.images.plugins.module_utils._pinned_image_set import (
    API_VERSION,
    PINNED_IMAGE_SET_KIND,
    PinnedImageSetError,
    validate_set,
)
from ansible_collections.pinned.images.plugins.module_utils._yaml import (
    HAS_YAML,
    YAML_IMPORT_ERROR,
    dump_yaml,
)

FIELD_MANAGER = "pinned-images"
_USED_METADATA = ("name", "labels", "annotations")
_USED_SPEC = ("pinnedImages", "machineConfigPoolSelector")


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


def _build_object(params):
    if params["definition"] is not None:
        return copy.deepcopy(params["definition"]), "definition"
    metadata = {"name": params["name"]}
    if params["labels"] is not None:
        metadata["labels"] = params["labels"]
    spec = {"pinnedImages": [{"name": image} for image in params["images"] or []]}
    if params["pool_selector"] is not None:
        spec["machineConfigPoolSelector"] = params["pool_selector"]
    return {"apiVersion": API_VERSION, "kind": PINNED_IMAGE_SET_KIND, "metadata": metadata, "spec": spec}, "parameters"


def _dropped_fields(obj):
    dropped = []
    for key in obj:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            dropped.append(key)
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    dropped.extend("metadata." + key for key in metadata if key not in _USED_METADATA)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    dropped.extend("spec." + key for key in spec if key not in _USED_SPEC)
    return dropped


def _render(image_set, obj):
    """The object to apply and write: the validated set plus the definition's annotations."""
    rendered = image_set.to_dict(include_pool_selector=image_set.pool_selector is not None)
    metadata = rendered["metadata"]
    if metadata.get("labels"):
        metadata["labels"] = dict(sorted(metadata["labels"].items()))
    annotations = (obj.get("metadata") or {}).get("annotations")
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return rendered


def _annotation_problems(obj, source):
    annotations = (obj.get("metadata") or {}).get("annotations") if isinstance(obj.get("metadata"), dict) else None
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [f"{source}: metadata.annotations must be a mapping of strings"]
    return [
        f"{source}: metadata.annotations[{key!r}] must be a string"
        for key, value in annotations.items()
        if not isinstance(key, str) or not isinstance(value, str)
    ]


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
    module.no_log_values.update(connection_secrets(module.params))
    params = module.params
    state = params["state"]
    dest = params["dest"]
    do_apply = params["apply"] if params["apply"] is not None else dest is None
    if not do_apply and dest is None:
        module.fail_json(msg="nothing to do: set dest to write a file, or apply=true to apply to the cluster")
    if dest is not None and not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=str(YAML_IMPORT_ERROR))

    obj, source = _build_object(params)
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = metadata.get("name")
    rendered = None
    if state == "present":
        problems = _annotation_problems(obj, source)
        image_set = None
        try:
            image_set = validate_set(obj, source=source)
        except PinnedImageSetError as exc:
            problems = list(exc.problems) + problems
        if problems:
            message = problems[0] if len(problems) == 1 else f"{len(problems)} problems found:\n" + "\n".join(
                "- " + p for p in problems
            )
            module.fail_json(msg=f"invalid PinnedImageSet, nothing was applied or written: {message}", problems=problems)
        dropped = _dropped_fields(obj) if params["definition"] is not None else []
        if dropped:
            module.warn("definition fields not used for a PinnedImageSet were dropped: " + ", ".join(dropped))
        rendered = _render(image_set, obj)
        name = image_set.name
    elif check_dns_subdomain(name, "metadata.name") is not None:
        module.fail_json(msg=f"invalid PinnedImageSet name {name!r}: it must be an RFC 1123 subdomain", problems=[])

    path = None
    if dest is not None:
        if os.path.exists(dest) and not os.path.isdir(dest):
            module.fail_json(msg=f"dest {dest} is not a directory; nothing was applied or written")
        path = os.path.join(dest, name + ".yaml")

    result = {"changed": False, "name": name}
    diffs = []
    if rendered is not None:
        result["definition"] = rendered

    if do_apply:
        if not HAS_KUBERNETES:
            module.fail_json(msg=missing_required_lib("kubernetes"), exception=str(KUBERNETES_IMPORT_ERROR))
        try:
            with K8sClient.from_params(params, tmpdir=module.tmpdir) as client:
                before = client.get(API_VERSION, PINNED_IMAGE_SET_KIND, name)
                after = None
                if state == "present":
                    after = client.apply(
                        rendered,
                        field_manager=FIELD_MANAGER,
                        force_conflicts=params["force_conflicts"],
                        dry_run=module.check_mode,
                    )
                elif before is not None:
                    client.delete(API_VERSION, PINNED_IMAGE_SET_KIND, name, dry_run=module.check_mode)
                for warning in client.warnings:
                    module.warn(f"API server: {warning}")
                host = client.host
        except K8sError as exc:
            module.fail_json(msg=str(exc), status=exc.status, reason=exc.reason)
        before_clean = clean_object(before)
        after_clean = clean_object(after)
        if before_clean != after_clean:
            result["changed"] = True
        if after_clean is not None:
            result["object"] = after_clean
        where = f"{PINNED_IMAGE_SET_KIND}/{name} on {host}"
        diffs.append(
            {
                "before": before_clean or {},
                "after": after_clean or {},
                "before_header": where if before is not None else f"{where} (absent)",
                "after_header": where if after is not None else f"{where} (absent)",
            }
        )

    if path is not None:
        result["path"] = path
        try:
            if state == "present":
                if not os.path.isdir(dest) and not module.check_mode:
                    os.makedirs(dest, mode=0o755, exist_ok=True)
                written = atomic_write(path, dump_yaml(rendered), mode=0o644, check_mode=module.check_mode)
            else:
                written = remove_file(path, check_mode=module.check_mode)
        except (AtomicFileError, OSError) as exc:
            module.fail_json(msg=str(exc), **result)
        result["file_changes"] = {"created": [], "changed": [], "removed": []}
        if state == "absent":
            kind = "removed" if written["changed"] else None
        else:
            kind = ("created" if written["created"] else "changed") if written["content_changed"] else None
        if kind:
            result["file_changes"][kind].append(path)
        result["changed"] = result["changed"] or written["changed"]
        diffs.append(written["diff"])

    if module._diff:
        result["diff"] = diffs[0] if len(diffs) == 1 else diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
