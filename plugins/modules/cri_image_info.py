#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cri_image_info
short_description: Report a node's container runtime, its images and its image filesystem
version_added: 0.1.0
description:
  - Asks the node's container runtime (CRI-O or containerd) through the CRI C(runtime.v1) API for its name and version,
    its images (all, or the ones named in O(images)) and the filesystem that holds them.
  - Reports the node's layout as the other node modules find it (RV(layout)), the socket, the runtime's config file
    and, on containerd, its registry hosts directories and pull mode, each with where it came from.
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
      - Report only these images; the ones the runtime does not have are listed in RV(missing).
      - Tags and digests are both accepted here.
      - With O(checks), the wanted images the doctor weighs against the kubelet's settings and the image filesystem.
    type: list
    elements: str
  checks:
    description:
      - Run the doctor's checks (RV(checks)), which find what on this node voids a pin or a prefetch, each with its
        severity, what it means and the fix. Read-only; off by default, which keeps the module to its few CRI calls.
      - C(gc_threshold) weighs the image filesystem's use as the kubelet does (its size less its available bytes,
        which hold the wanted images the node has); C(image_filesystem_size) weighs the wanted images the node has
        (their CRI sizes, once per image) against the kubelet's high threshold share of it; a threshold of 100
        turns the kubelet's image GC off, and both checks with it. Neither counts the
        wanted images the node lacks, since the doctor reads no registry (C(pinned.images.prefetch) in check mode
        estimates them). C(transfer_mode_config_path) reads RV(layout.hosts), as the prefetch's disk guard does.
      - The C(pinned.images.doctor) playbook runs it on every node (docs/doctor.md).
    type: bool
    default: false
  kubelet_config:
    description:
      - The kubelet's configuration files or drop-in directories, read in this order (a later file's keys win), those
        that exist; under O(host_root). The default names those of kubeadm and kind, EKS, Bottlerocket, AKS, GKE,
        Talos, OpenShift, k3s and RKE2.
    type: list
    elements: path
    default:
      - /var/lib/kubelet/config.yaml
      - /etc/kubernetes/kubelet/config.json
      - /etc/kubernetes/kubelet/config.json.d
      - /etc/kubernetes/kubelet/config
      - /etc/default/kubeletconfig.json
      - /home/kubernetes/kubelet-config.yaml
      - /etc/kubernetes/kubelet.yaml
      - /etc/kubernetes/kubelet.conf
      - /var/lib/rancher/k3s/agent/etc/kubelet.conf.d
      - /var/lib/rancher/rke2/agent/etc/kubelet.conf.d
  kubelet_binary:
    description:
      - The kubelet binaries whose C(--version) the doctor reads, the first that exists; under O(host_root).
    type: list
    elements: path
    default: [/usr/bin/kubelet, /usr/local/bin/kubelet]
  containerd_config:
    description:
      - containerd's configuration file, for the layout and the doctor; under O(host_root).
      - Default the file the running containerd was started with (its C(--config) flag), else containerd's default
        file or the layout's (k3s, RKE2, MicroK8s), as RV(layout) reports; see C(docs/nodes.md).
    type: path
  dropin_path:
    description:
      - CRI-O's drop-in of this collection, for the doctor; under O(host_root).
    type: path
    default: /etc/crio/crio.conf.d/50-pinned-images
seealso:
  - module: pinned.images.prefetch
"""

EXAMPLES = r"""
- name: Read what the runtime holds
  become: true
  pinned.images.cri_image_info:
  register: node_images

- name: Check that the payload is on the node
  become: true
  pinned.images.cri_image_info:
    images:
      - quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
  register: payload

- name: Fail when something is missing
  ansible.builtin.assert:
    that: payload.missing | length == 0

- name: Ask the doctor what voids a pin or a prefetch of these images here
  become: true
  pinned.images.cri_image_info:
    images:
      - quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    checks: true
  register: doctor
"""

RETURN = r"""
runtime:
  description: The runtime's name, version and CRI API version, and the endpoint used.
  returned: always
  type: dict
  sample:
    runtime_name: cri-o
    runtime_version: 1.31.3
    runtime_api_version: v1
    endpoint: /var/run/crio/crio.sock
images:
  description: The runtime's images (only the requested ones when O(images) is set).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Image ID.
      type: str
    repo_tags:
      description: Tags the image is known by.
      type: list
      elements: str
    repo_digests:
      description: Digest references the image is known by.
      type: list
      elements: str
    size:
      description: Size in bytes as the runtime reports it.
      type: int
    pinned:
      description: Whether the runtime reports the image as pinned (exempt from kubelet image garbage collection).
      type: bool
    requested:
      description: The requested references this image answers to (only with O(images)).
      type: list
      elements: str
missing:
  description: Requested images the runtime does not have.
  returned: always
  type: list
  elements: str
checks:
  description:
    - With O(checks), the doctor's findings, errors first; empty when nothing voids a pin or a prefetch.
  returned: with O(checks)
  type: list
  elements: dict
  contains:
    check:
      description: The check's name (C(kubelet_credential_policy), C(transfer_mode_config_path), C(lazy_pulling),
        C(old_containerd), C(k3s_pin_label), C(crio_dropin_override), C(old_kubelet), C(gc_maximum_age),
        C(gc_threshold), C(image_filesystem_size)).
      type: str
    severity:
      description: C(error) (a pin or a prefetch does not hold), C(warning) (it holds only under a condition), C(info).
      type: str
    detail:
      description: What was found, and where.
      type: str
    meaning:
      description: What it means for the pins or the prefetch.
      type: str
    fix:
      description: How to fix it.
      type: str
notes:
  description: With O(checks), the files the doctor could not read (a check then uses the defaults).
  returned: with O(checks)
  type: list
  elements: str
image_filesystems:
  description:
    - The filesystems holding images. C(total_bytes) and C(free_bytes) are read from the mountpoint when it exists on
      this host, and are null otherwise.
  returned: always
  type: list
  elements: dict
  sample:
    - mountpoint: /var/lib/containers/storage/overlay-images
      used_bytes: 5368709120
      inodes_used: 41234
      total_bytes: 128849018880
      free_bytes: 64424509440
layout:
  description:
    - Where the runtime's socket and files are on the node (host paths), and where each came from (V(source)), as an
      option, a flag of the process that serves the socket (read from C(/proc), under O(host_root)), the runtime's
      default, or a default path of the socket's layout (see C(docs/nodes.md)).
  returned: always
  type: dict
  contains:
    layout:
      description: The known layout of the socket (V(cri-o), V(containerd), V(k3s-rke2), V(microk8s)), or V(unknown).
      type: str
    runtime:
      description: V(containerd) or V(cri-o).
      type: str
    socket:
      description: The socket's C(path) and C(source).
      type: dict
    pid:
      description: The pid of the process serving the socket, or null when none could be read.
      type: int
    config:
      description: The runtime's config file (C(path), C(source)); null when containerd runs on its built-in defaults.
      type: dict
    config_dir:
      description: CRI-O only. Its drop-in directory (C(path), C(source)).
      type: dict
    registries_conf:
      description: CRI-O only. The registries.conf it reads (C(path), C(source)).
      type: dict
    registries_conf_dir:
      description: CRI-O only. The registries.conf drop-in directory it reads (C(path), C(source)).
      type: dict
    hosts:
      description:
        - containerd only. C(config_path) (the hosts directories), C(source) (what named them), C(config_files)
          (the config and its imports), C(pull_mode) and C(pull_mode_reason) (see the prefetch module's
          C(disk_guard.pull_mode)), and C(warnings); only C(error) when the config cannot be read.
      type: dict
  sample:
    layout: k3s-rke2
    runtime: containerd
    socket:
      path: /run/k3s/containerd/containerd.sock
      source: the first of the known sockets that exists (docs/nodes.md)
    pid: 1234
    config:
      path: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
      source: the --config flag of containerd (pid 1234)
    hosts:
      config_path:
        - /var/lib/rancher/k3s/agent/etc/containerd/certs.d
      source: /var/lib/rancher/k3s/agent/etc/containerd/config.toml, the --config flag of containerd (pid 1234)
      config_files:
        - /var/lib/rancher/k3s/agent/etc/containerd/config.toml
      pull_mode: transfer
      pull_mode_reason: containerd 2.2.5 pulls through the transfer service (no local-pull setting)
      warnings: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._doctor.facts import KUBELET_BINARIES, KUBELET_CONFIGS
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DEFAULT_PATH
from ansible_collections.pinned.images.plugins.module_utils._runs.cri_image_info import run
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    CRI_CLIENT_ARGUMENT_SPEC,
    HOST_ROOT_ARGUMENT_SPEC,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module


def main() -> None:
    argument_spec = dict(
        images=dict(type="list", elements="str"),
        checks=dict(type="bool", default=False),
        kubelet_config=dict(type="list", elements="path", default=list(KUBELET_CONFIGS)),
        kubelet_binary=dict(type="list", elements="path", default=list(KUBELET_BINARIES)),
        containerd_config=dict(type="path"),
        dropin_path=dict(type="path", default=DEFAULT_PATH),
    )
    argument_spec.update(CRI_CLIENT_ARGUMENT_SPEC)
    argument_spec.update(HOST_ROOT_ARGUMENT_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
