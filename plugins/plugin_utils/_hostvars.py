# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Ansible's ``hostvars`` as the controller-side logic reads them.

``hostvars`` is Ansible's ``hostvars`` (or, in tests, a dict of dicts): only ``hostvars[host].get(name)`` is used.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = [
    "HostVars",
    "host_var",
    "node_name",
]

# Ansible's hostvars (a Mapping of host name to its variables) or, in tests, a dict of dicts.
HostVars = Mapping[str, Any]


def host_var(hostvars: HostVars, host: str, name: str, default: Any = None) -> Any:
    """A host variable, ``default`` when the host or the variable is undefined."""
    # Looked up first: ansible-core 2.19's hostvars answers a missing host with an undefined value that raises
    # its own error (cluster_add_hosts plans hosts the inventory does not have yet).
    if host not in hostvars:
        return default
    try:
        return hostvars[host].get(name, default)
    except KeyError:
        return default


def node_name(hostvars: HostVars, host: str) -> str:
    name: str = host_var(hostvars, host, "cluster_node_name", host)
    return name
