# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Unknown ``cluster_*`` and ``node_*`` variables given to the playbooks (controller side), exposed as the filter
``unknown_variables`` by ``plugins/filter/variables.py``.

The known names are the options of every entry point of the two roles (their ``meta/argument_specs.yml``), the
few host and playbook variables the docs name (``PLAYBOOK_VARIABLES``), and the facts the roles and playbooks set
themselves (``register``, ``set_fact``, ``add_host``: an earlier play of the same run leaves them in hostvars). An unknown name close to a known one is a
misspelt variable: an error, since what the user meant is then silently not done (``cluster_set`` leaves the sets
out). An unknown name close to none is a warning only: inventories carry other roles' variables with these
prefixes (``node_exporter_version``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Set

import yaml

__all__ = [
    "known_variables",
    "unknown_variables",
]

PREFIXES = ("cluster_", "node_")
# Read by the roles and playbooks outside the argument specs: host variables of the cluster role's node mapping,
# and the hosts of the node_deps playbook.
PLAYBOOK_VARIABLES = frozenset({"cluster_node_name", "cluster_node_labels", "node_deps_hosts"})
# difflib's ratio above which an unknown name is taken for a misspelling of a known one.
CLOSE = 0.8
ROOT = Path(__file__).resolve().parents[2]
_SETTERS = ("ansible.builtin.set_fact", "set_fact", "ansible.builtin.add_host", "add_host")
_NOT_VARIABLES = {"name", "groups", "cacheable"}


def _set_names(node: Any) -> Set[str]:
    """The variables a parsed task file sets: ``register`` values, ``set_fact`` and ``add_host`` keys."""
    names: Set[str] = set()
    if isinstance(node, list):
        for item in node:
            names |= _set_names(item)
    elif isinstance(node, dict):
        if isinstance(node.get("register"), str):
            names.add(node["register"])
        for setter in _SETTERS:
            if isinstance(node.get(setter), dict):
                names.update(set(node[setter]) - _NOT_VARIABLES)
        for value in node.values():
            names |= _set_names(value)
    return names


def known_variables(root: Path = ROOT) -> Set[str]:
    """The options of every entry point of every role under ``root``, PLAYBOOK_VARIABLES, and what the task files
    of the roles and playbooks set."""
    names = set(PLAYBOOK_VARIABLES)
    for spec_file in sorted(root.glob("roles/*/meta/argument_specs.yml")):
        specs = yaml.safe_load(spec_file.read_text()) or {}
        for entry_point in (specs.get("argument_specs") or {}).values():
            names.update((entry_point or {}).get("options") or {})
    for tasks in sorted(
        [*root.glob("roles/*/tasks/*.yml"), *root.glob("playbooks/*.yml"), *root.glob("playbooks/tasks/*.yml")]
    ):
        names |= _set_names(yaml.safe_load(tasks.read_text()))
    return names


def unknown_variables(hostvars: Mapping[str, Any], hosts: Iterable[str], known: Set[str]) -> Dict[str, List[str]]:
    """The ``cluster_*``/``node_*`` names set on ``hosts`` (their ``hostvars``) that no role or playbook reads:
    ``errors`` for those close to a known name (naming it), ``warnings`` for the others; each line names the hosts
    that have the variable, or says it is on every host."""
    found: Dict[str, List[str]] = {}
    present = [host for host in hosts if host in hostvars]
    for host in present:
        for name in hostvars[host]:
            if name.startswith(PREFIXES) and name not in known:
                found.setdefault(name, []).append(host)
    errors: List[str] = []
    warnings: List[str] = []
    candidates = sorted(known)
    for name, where in sorted(found.items()):
        # Extra variables and those of the group all are on every host.
        on = (
            "every host: an extra variable or one of the group all"
            if len(where) == len(present) > 1
            else ", ".join(where)
        )
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=CLOSE)
        if close:
            errors.append(f"{name} (on {on}) is not a variable of pinned.images: did you mean {close[0]}?")
        else:
            warnings.append(f"{name} (on {on}) is not a variable of pinned.images; ignored")
    return {"errors": errors, "warnings": warnings}
