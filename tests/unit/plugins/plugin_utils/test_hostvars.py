# SPDX-License-Identifier: GPL-3.0-or-later
"""Host variables as the controller-side logic reads them: a missing host or variable is the default."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.plugin_utils._hostvars import host_var, node_name


class _StrictHostvars(dict):
    """ansible-core 2.19's hostvars: a missing host is not a KeyError."""

    def __getitem__(self, host):
        if host not in self:
            raise RuntimeError(f"hostvars[{host!r}] is undefined")
        return dict.__getitem__(self, host)


def test_a_plan_with_hosts_to_add_reads_no_variable_of_a_missing_host():
    hostvars = _StrictHostvars(cp={"node_images": ["x"]})
    assert host_var(hostvars, "cp", "node_images") == ["x"]
    assert host_var(hostvars, "w-9", "node_images", []) == []


def test_a_variable_the_host_lacks_is_the_default_and_the_node_name_is_the_host_name_unless_set():
    hostvars = {"cp": {"cluster_node_name": "master-0", "node_images": []}, "w": {}}
    assert host_var(hostvars, "w", "node_images", ["x"]) == ["x"] and host_var(hostvars, "w", "node_images") is None
    assert host_var(hostvars, "cp", "node_images", ["x"]) == []
    assert (node_name(hostvars, "cp"), node_name(hostvars, "w"), node_name(hostvars, "gone")) == (
        "master-0",
        "w",
        "gone",
    )
