#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: prefetch
short_description: Pull container images onto a node through the CRI API
version_added: 0.1.0
description:
  - Pulls a list of images into the node's container runtime (CRI-O or containerd) through the CRI C(runtime.v1)
    gRPC API, the way the kubelet does, and reports what happened to each image.
  - Images already present are not pulled again. Images are de-duplicated first; the rest are pulled by a bounded
    pool of workers, with retries and exponential backoff.
  - Errors a retry cannot fix (credentials rejected, manifest unknown, invalid reference, no space left on device)
    are not retried. C(no space left on device) also stops the queue; the images not yet started are reported as
    V(skipped).
  - Registry credentials come from the node pull secret (a docker config JSON) and never appear in the output.
author:
  - pinned.images developers (@pinned-images)
extends_documentation_fragment:
  - pinned.images.cri
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Pulls nothing; images the node lacks are reported as V(would_pull).
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  images:
    description:
      - Image references to have on the node, for example V(quay.io/org/app@sha256:<64 hex digits>).
      - Docker Hub short names are normalised (V(busybox) is V(docker.io/library/busybox)).
    type: list
    elements: str
    required: true
  require_digest:
    description:
      - Refuse references that are not pinned by a V(sha256) digest, as PinnedImageSet does.
    type: bool
    default: true
  concurrency:
    description:
      - Number of images pulled at the same time. Use V(1) on control-plane nodes.
    type: int
    default: 5
  throttle:
    description:
      - Seconds a worker waits after each image it pulled, to spare the node and the registry.
    type: float
    default: 0.0
  retries:
    description:
      - How many more times a failed pull is tried when a retry can help.
    type: int
    default: 5
  retry_delay:
    description:
      - Seconds before the first retry; the delay doubles after each failed attempt, up to O(retry_max_delay).
    type: float
    default: 1.0
  retry_max_delay:
    description:
      - Upper bound in seconds of the delay between two attempts.
    type: float
    default: 10.0
  pull_timeout:
    description:
      - Deadline in seconds for one pull of one image. V(0) means no deadline.
    type: float
    default: 1800.0
  auth_file:
    description:
      - Docker config JSON with registry credentials (C(auths)), such as the node pull secret.
      - When omitted, V(/var/lib/kubelet/config.json) is used if it exists; otherwise images are pulled anonymously.
    type: path
  fail_on_error:
    description:
      - Fail the task when an image could not be pulled. With V(false) the task succeeds and each failure is in
        RV(images).
    type: bool
    default: true
  progress_file:
    description:
      - A JSON file the module rewrites after each image with counts, bytes and elapsed seconds, so a long run can
        be watched (the C(pinned.images.node) role polls it).
    type: path
notes:
  - Pinning is separate; see M(pinned.images.crio_pinned_images).
seealso:
  - module: pinned.images.cri_image_info
"""

EXAMPLES = r"""
- name: Prefetch an upgrade payload with the node pull secret
  become: true
  pinned.images.prefetch:
    images:
      - quay.io/openshift-release-dev/ocp-release@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    auth_file: /var/lib/kubelet/config.json

- name: Prefetch one image at a time on a control-plane node, through containerd
  become: true
  pinned.images.prefetch:
    images: "{{ node_images }}"
    cri_socket: /run/containerd/containerd.sock
    concurrency: 1
    throttle: 1
"""

RETURN = r"""
images:
  description: One entry per requested image, in the order given (after de-duplication).
  returned: always
  type: list
  elements: dict
  contains:
    image:
      description: The normalised image reference.
      type: str
      sample: quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    status:
      description: V(present), V(pulled), V(failed), V(skipped) or V(would_pull).
      type: str
      sample: pulled
    image_id:
      description: The runtime's image ID, when known.
      type: str
      sample: sha256:3f57d9401f8d42f986df300f0c69192fc41da28ccc8d797829467780db3dd741
    size:
      description: Image size in bytes as the runtime reports it, when known.
      type: int
      sample: 4261574
    attempts:
      description: Pull attempts made.
      type: int
      sample: 1
    seconds:
      description: Seconds spent on this image.
      type: float
      sample: 2.314
    started:
      description: Epoch seconds when work on this image started (null for images found in the first listing).
      type: float
      sample: 1764448000.125
    finished:
      description: Epoch seconds when work on this image finished.
      type: float
      sample: 1764448002.439
    error:
      description: Why the image failed or was skipped.
      type: str
      sample: null
    error_kind:
      description: V(auth), V(not_found), V(no_space), V(invalid), V(permission), V(deadline), V(unavailable) or V(unknown).
      type: str
      sample: null
totals:
  description: Counts per status, bytes pulled and wall time.
  returned: always
  type: dict
  contains:
    requested:
      description: Images after de-duplication.
      type: int
    present:
      description: Images the node already had.
      type: int
    pulled:
      description: Images pulled by this run.
      type: int
    failed:
      description: Images that could not be pulled.
      type: int
    skipped:
      description: Images not attempted after the disk filled up.
      type: int
    would_pull:
      description: Images check mode would pull.
      type: int
    bytes_pulled:
      description: Sum of the sizes of the pulled images.
      type: int
    seconds:
      description: Wall time of the prefetch.
      type: float
  sample:
    requested: 3
    present: 1
    pulled: 2
    failed: 0
    skipped: 0
    would_pull: 0
    bytes_pulled: 52428800
    seconds: 4.2
runtime:
  description: The container runtime that served the request.
  returned: always
  type: dict
  sample:
    runtime_name: containerd
    runtime_version: 1.7.24
    runtime_api_version: v1
    endpoint: /run/containerd/containerd.sock
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ..module_utils._cri_client import CRI_CLIENT_ARGUMENT_SPEC, GRPC_IMPORT_ERROR, HAS_GRPC, CriClient, CriError
from ..module_utils._image_ref import ImageReferenceError, parse_image_ref
from ..module_utils._prefetch import PrefetchOptions, prefetch
from ..module_utils._registry_auth import RegistryAuthError, load_docker_config


def parse_images(images: list, require_digest: bool) -> list:
    """Normalise and de-duplicate; one error lists every bad entry."""
    refs, seen, problems = [], set(), []
    for index, image in enumerate(images):
        try:
            ref = parse_image_ref(image, require_digest=require_digest)
        except ImageReferenceError as err:
            problems.append(f"images[{index}]: {err}")
            continue
        if str(ref) not in seen:
            seen.add(str(ref))
            refs.append(ref)
    if problems:
        raise ValueError("invalid images: " + "; ".join(problems))
    return refs


def main():
    argument_spec = dict(
        images=dict(type="list", elements="str", required=True),
        require_digest=dict(type="bool", default=True),
        concurrency=dict(type="int", default=5),
        throttle=dict(type="float", default=0.0),
        retries=dict(type="int", default=5),
        retry_delay=dict(type="float", default=1.0),
        retry_max_delay=dict(type="float", default=10.0),
        pull_timeout=dict(type="float", default=1800.0),
        auth_file=dict(type="path"),
        fail_on_error=dict(type="bool", default=True),
        progress_file=dict(type="path"),
    )
    argument_spec.update(CRI_CLIENT_ARGUMENT_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    if not HAS_GRPC:
        module.fail_json(msg=missing_required_lib("grpcio and protobuf"), exception=GRPC_IMPORT_ERROR)

    for name, low in (("concurrency", 1), ("retries", 0), ("throttle", 0), ("retry_delay", 0),
                      ("retry_max_delay", 0), ("pull_timeout", 0)):
        if params[name] < low:
            module.fail_json(msg=f"{name} must be at least {low}, got {params[name]}")
    try:
        refs = parse_images(params["images"], params["require_digest"])
        auth_config = load_docker_config(params["auth_file"])
    except (ValueError, RegistryAuthError) as err:
        module.fail_json(msg=str(err))
    module.no_log_values.update(auth_config.secrets())

    auth_source = auth_config.path or "no auth file"

    def auth_for(ref):
        credentials = auth_config.credentials_for(ref.name)
        if credentials is None:
            return None, f"no credentials for {ref.registry} in {auth_source}; pulled anonymously"
        return credentials.cri_auth_fields(), f"credentials for {credentials.server_address} from {auth_source}"

    options = PrefetchOptions(
        concurrency=params["concurrency"],
        throttle=params["throttle"],
        retries=params["retries"],
        retry_delay=params["retry_delay"],
        retry_max_delay=params["retry_max_delay"],
        pull_timeout=params["pull_timeout"] or None,
        check_mode=module.check_mode,
        progress_file=params["progress_file"],
    )
    try:
        with CriClient.from_params(params) as client:
            runtime = dict(client.version(), endpoint=client.endpoint)
            filesystems = client.image_fs_info()
            options.image_fs = filesystems[0]["mountpoint"] if filesystems else None
            report = prefetch(client, refs, auth_for, options)
    except CriError as err:
        module.fail_json(msg=str(err), error_kind=err.kind)

    totals = report["totals"]
    result = dict(changed=totals["pulled"] > 0, images=report["images"], totals=totals, runtime=runtime)
    if totals["failed"] and params["fail_on_error"]:
        failures = [f"{r['image']}: {r['error']}" for r in report["images"] if r["status"] == "failed"]
        module.fail_json(
            msg=f"{totals['failed']} of {totals['requested']} images failed: " + "; ".join(failures[:5])
            + (f"; and {len(failures) - 5} more" if len(failures) > 5 else ""),
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
