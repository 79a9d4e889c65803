# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The check of the playbooks' variables (documented in unknown_variables.yml and variable_problems.yml; the logic
is in ``plugin_utils/_variables.py``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Sequence

from ansible_collections.pinned.images.plugins.plugin_utils import _variables


def unknown_variables(hosts: Sequence[str], hostvars: Mapping[str, Any]) -> Dict[str, List[str]]:
    """errors (misspelt names) and warnings (unknown names) of the cluster_*/node_* variables of ``hosts``."""
    return _variables.unknown_variables(hostvars, hosts, _variables.known_variables())


def variable_problems(hosts: Sequence[str], hostvars: Mapping[str, Any]) -> Dict[str, List[str]]:
    """errors (bad values) and warnings (doubtful values) of the cluster_*/node_* variables of ``hosts``."""
    return _variables.variable_problems(hostvars, hosts)


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"unknown_variables": unknown_variables, "variable_problems": variable_problems}
