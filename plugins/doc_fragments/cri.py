# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  action_group:
    description: Use C(group/pinned.images.cri) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - pinned.images.cri
options:
  cri_socket:
    description:
      - The CRI endpoint of the container runtime on the node.
      - A unix socket path (V(/var/run/crio/crio.sock)), a V(unix://) URL, or V(host:port).
      - Default C($CONTAINER_RUNTIME_ENDPOINT) when the module's environment sets it (crictl's variable).
      - When omitted, the first of these that exists is used (under O(host_root) when it is set), in this order;
        CRI-O's V(/var/run/crio/crio.sock), containerd's V(/run/containerd/containerd.sock) (also EKS, AKS, GKE,
        Bottlerocket, Talos, Flatcar, kind), k3s's and RKE2's V(/run/k3s/containerd/containerd.sock), MicroK8s's
        V(/var/snap/microk8s/common/run/containerd.sock). See C(docs/nodes.md).
    type: str
  cri_connect_timeout:
    description:
      - Seconds to wait for the runtime to accept the connection.
    type: float
    default: 5.0
  cri_timeout:
    description:
      - Deadline in seconds for each CRI call other than image pulls.
    type: float
    default: 60.0
requirements:
  - grpcio >= 1.62.0 (on the node)
  - protobuf >= 4.25.0 (on the node)
notes:
  - The module talks to the runtime through the CRI C(runtime.v1) gRPC API, as the kubelet does, so it works the same on
    CRI-O and containerd nodes. It needs permission to open the socket, usually root (C(become=true)).
"""
