# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # The options of REGISTRY_ARGUMENT_SPEC (module_utils/_runs/options.py).
    DOCUMENTATION = r"""
options:
  auth_file:
    description:
      - Docker config JSON with registry credentials (C(auths)), such as the node pull secret.
      - When omitted, V(/var/lib/kubelet/config.json) is used if it exists; otherwise registries are accessed anonymously.
    type: path
  registries_conf:
    description:
      - A containers-registries.conf v2 file with mirrors, insecure and blocked registries.
      - When omitted, V(/etc/containers/registries.conf) (and V(/etc/containers/registries.conf.d/)) is read if it exists.
      - Registries are read where the runtime would pull from; the runtime applies its own configuration to pulls.
      - CRI-O reads this file. containerd never does (it reads C(hosts.toml), see the C(containerd_config_path) option
        of M(pinned.images.prefetch)); on a containerd node only a file named here is applied, as an override of the
        registries it names.
    type: path
  registry_mirrors:
    description:
      - Registry entries applied on top of O(registries_conf), in the same shape as its C([[registry]]) tables.
      - An explicit override on every runtime; on containerd the registries it names are read from these entries
        instead of C(hosts.toml).
    type: list
    elements: dict
    suboptions:
      prefix:
        description: The images the entry applies to (V(host), V(host/path) or V(*.example.com)).
        type: str
        required: true
      location:
        description:
          - Where the images under O(registry_mirrors[].prefix) are pulled from, V(host[:port][/path]).
          - Required unless O(registry_mirrors[].prefix) is a V(*.example.com) wildcard, as in registries.conf.
        type: str
      insecure:
        description: Allow plain HTTP or unverified TLS for O(registry_mirrors[].location).
        type: bool
        default: false
      blocked:
        description: Refuse images under O(registry_mirrors[].prefix).
        type: bool
        default: false
      mirror_by_digest_only:
        description: Use the mirrors only for digest references (C(mirror-by-digest-only) in registries.conf).
        type: bool
        default: false
      mirrors:
        description: Mirrors tried, in order, before O(registry_mirrors[].location).
        type: list
        elements: dict
        suboptions:
          location:
            description: Mirror location, V(host[:port][/path]).
            type: str
            required: true
          insecure:
            description: Allow plain HTTP or unverified TLS for this mirror.
            type: bool
            default: false
          pull_from_mirror:
            description:
              - Which references this mirror serves (C(pull-from-mirror) in registries.conf); all when omitted.
              - Cannot be combined with O(registry_mirrors[].mirror_by_digest_only).
            type: str
            choices: [all, digest-only, tag-only]
  registry_certs_dirs:
    description:
      - Directories with per-registry CA certificates (C(<dir>/<host[:port]>/*.crt)) and client certificates.
      - For registries read through C(registries.conf) (CRI-O); containerd's hosts use the C(ca) and C(client) of
        their C(hosts.toml), or the certificate files of their host directory, as containerd does.
    type: list
    elements: path
    default: [/etc/containers/certs.d, /etc/docker/certs.d]
  registry_timeout:
    description:
      - Seconds to wait for a registry answer.
    type: float
    default: 30.0
"""
