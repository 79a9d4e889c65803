# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # module_utils._runs.options.HOST_ROOT_ARGUMENT_SPEC; the mapping is module_utils._common.host_root.
    DOCUMENTATION = r"""
options:
  host_root:
    description:
      - Where the host's V(/) is mounted when the module runs in a privileged pod on the node instead of on the node
        itself (V(/host), as C(oc debug node/NAME) and the pod mode of the C(pinned.images.prefetch) playbook mount it).
      - Every node path of the module is then taken under it, given or default (the CRI socket, the drop-in, the CRI-O
        pid file, the auth file, registries.conf, the certificate directories, containerd's config file, the lock,
        progress, prune record and machine-config-operator files), and so are the paths the node reports itself (the registry
        directories CRI Status or containerd's config name, the image filesystem).
      - A C(systemd) reload of CRI-O runs C(chroot HOST_ROOT systemctl reload crio), so that the host's own systemd
        reloads it; a C(signal) reload reads the host's pid file under it and needs the host's PID namespace (C(hostPID)).
      - Omitted, empty or V(/), the paths are used as given.
    type: path
"""
