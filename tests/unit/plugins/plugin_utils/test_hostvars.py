# SPDX-License-Identifier: GPL-3.0-or-later
"""Host variables as the controller-side logic reads them: a missing host or variable is the default."""

from __future__ import annotations


class _StrictHostvars(dict):
    """ansible-core 2.19's hostvars: a missing host is not a KeyError."""

    def __getitem__(self, host):
        if host not in self:
            raise RuntimeError(f"hostvars[{host!r}] is undefined")
        return dict.__getitem__(self, host)


def test_a_plan_with_hosts_to_add_reads_no_variable_of_a_missing_host():
    from ansible_collections.pinned.images.plugins.plugin_utils._hostvars import host_var

    hostvars = _StrictHostvars(cp={"node_images": ["x"]})
    assert host_var(hostvars, "cp", "node_images") == ["x"]
    assert host_var(hostvars, "w-9", "node_images", []) == []
