# SPDX-License-Identifier: GPL-3.0-or-later
"""The node role's filters as a layer: registered and documented, and the host root as Jinja gives it (the logic is
tested in tests/unit/plugins/plugin_utils/test_node.py)."""

from __future__ import annotations

from fixtures.filter_docs import filters_of, registration_problems

F = filters_of("node")


def test_every_filter_is_registered_and_documented():
    assert registration_problems("node") == []


def test_an_empty_or_unset_host_root_leaves_the_path_as_it_is():
    assert F["node_host_path"]("/var/tmp/p.json", "/host") == "/host/var/tmp/p.json"
    assert F["node_host_path"]("/var/tmp/p.json", "") == "/var/tmp/p.json"
    assert F["node_host_path"]("/var/tmp/p.json", None) == "/var/tmp/p.json"


def test_the_default_private_python_directory_follows_the_host_root_as_jinja_gives_it():
    assert F["node_python_default_dir"]("") == "/var/lib/pinned-images/python"
    assert F["node_python_default_dir"](None) == "/var/lib/pinned-images/python"
    assert F["node_python_default_dir"]("/host/") == "/host/var/lib/pinned-images/python"
