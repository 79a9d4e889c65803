# SPDX-License-Identifier: GPL-3.0-or-later
"""_node_python/paths: the private Python directory is declared once; the module, the role and deps agree."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.pinned.images.plugins.module_utils._node_python import deps, paths

ROOT = Path(__file__).resolve().parents[5]


def test_deps_and_the_role_default_use_the_one_directory():
    assert (deps.DEFAULT_DIR, deps.ENV_DIR) == (paths.DEFAULT_DIR, paths.ENV_DIR)
    # The role's default is the filter's (DEFAULT_DIR, under node_host_root in pod mode: tests of plugin_utils/_node).
    defaults = yaml.safe_load((ROOT / "roles" / "node" / "defaults" / "main.yml").read_text())
    assert defaults["node_python_deps_dir"] == "{{ node_host_root | pinned.images.node_python_default_dir }}"
    specs = yaml.safe_load((ROOT / "roles" / "node" / "meta" / "argument_specs.yml").read_text())
    options_ = [entry["options"] for entry in specs["argument_specs"].values()]
    documented = [spec["node_python_deps_dir"] for spec in options_ if "node_python_deps_dir" in spec]
    assert len(documented) == 3
    # A template's default is said in the description, as for the role's other computed defaults.
    assert all("default" not in spec and paths.DEFAULT_DIR in " ".join(spec["description"]) for spec in documented)
    # Every entry point that reads the directory takes the host root its default depends on.
    assert all("node_host_root" in options for options in options_ if "node_python_deps_dir" in options)
