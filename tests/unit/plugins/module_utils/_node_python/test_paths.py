# SPDX-License-Identifier: GPL-3.0-or-later
"""_node_python/paths: the private Python directory is declared once; the module, the role and deps agree."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.pinned.images.plugins.module_utils._node_python import deps, paths

ROOT = Path(__file__).resolve().parents[5]


def test_deps_and_the_role_default_use_the_one_directory():
    assert (deps.DEFAULT_DIR, deps.ENV_DIR) == (paths.DEFAULT_DIR, paths.ENV_DIR)
    defaults = yaml.safe_load((ROOT / "roles" / "node" / "defaults" / "main.yml").read_text())
    assert defaults["node_python_deps_dir"] == paths.DEFAULT_DIR
    specs = yaml.safe_load((ROOT / "roles" / "node" / "meta" / "argument_specs.yml").read_text())
    options_ = [entry["options"] for entry in specs["argument_specs"].values()]
    assert {spec["node_python_deps_dir"]["default"] for spec in options_ if "node_python_deps_dir" in spec} == {
        paths.DEFAULT_DIR
    }
