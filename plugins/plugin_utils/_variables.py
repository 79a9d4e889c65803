# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ``cluster_*`` and ``node_*`` variables given to the playbooks, checked once on the controller before any
node is touched: unknown names (the filter ``unknown_variables``) and bad values (the filter ``variable_problems``),
both exposed by ``plugins/filter/variables.py``.

The known names are the options of every entry point of the two roles (their ``meta/argument_specs.yml``), the
few host and playbook variables the docs name (``PLAYBOOK_VARIABLES``), and the facts the roles and playbooks set
themselves (``register``, ``set_fact``, ``add_host``: an earlier play of the same run leaves them in hostvars). An unknown name close to a known one is a
misspelt variable: an error, since what the user meant is then silently not done (``cluster_set`` leaves the sets
out). An unknown name close to none is a warning only: inventories carry other roles' variables with these
prefixes (``node_exporter_version``).

A value is checked against the type, choices and elements its argument spec gives (Ansible's own validator, as the
role does on each node), then by the prefetch module's own rules (``_runs/prefetch.value_problems``, ``parse_size``,
``parse_duration``): the ``node_*`` variables that become one of its options, and every key of
``node_prefetch_options`` against the module's argument spec. The node role keeps its checks for direct use.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import unitless_size_warning
from ansible_collections.pinned.images.plugins.module_utils._prune.plan import parse_duration, validate_keep
from ansible_collections.pinned.images.plugins.module_utils._runs.options import Problems
from ansible_collections.pinned.images.plugins.module_utils._runs.prefetch import value_problems
from ansible_collections.pinned.images.plugins.modules.prefetch import argument_spec as prefetch_argument_spec

__all__ = [
    "known_variables",
    "role_options",
    "unknown_variables",
    "variable_problems",
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


def _where(hosts: List[str], present: List[str]) -> str:
    # Extra variables and those of the group all are on every host.
    if len(hosts) == len(present) > 1:
        return "every host: an extra variable or one of the group all"
    return ", ".join(hosts)


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
        on = _where(where, present)
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=CLOSE)
        if close:
            errors.append(f"{name} (on {on}) is not a variable of pinned.images: did you mean {close[0]}?")
        else:
            warnings.append(f"{name} (on {on}) is not a variable of pinned.images; ignored")
    return {"errors": errors, "warnings": warnings}


# The node_* variables the node role passes as an option of pinned.images.prefetch (roles/node/vars/main.yml,
# tasks/pull.yml): the module's rules for that option apply to them.
PREFETCH_OPTION_OF = {
    "node_concurrency": "concurrency",
    "node_control_plane_concurrency": "concurrency",
    "node_worker_concurrency": "concurrency",
    "node_pull_pause": "pull_pause",
    "node_control_plane_pull_pause": "pull_pause",
    "node_worker_pull_pause": "pull_pause",
    "node_throttle": "pull_pause",
    "node_control_plane_throttle": "pull_pause",
    "node_worker_throttle": "pull_pause",
    "node_retries": "retries",
    "node_retry_delay": "retry_delay",
    "node_retry_max_delay": "retry_max_delay",
    "node_pull_timeout": "pull_timeout",
    "node_cri_connect_timeout": "cri_connect_timeout",
    "node_cri_timeout": "cri_timeout",
    "node_pace_bound_ms": "pace_bound_ms",
    "node_pace_max_wait": "pace_max_wait",
}
# Paths on the node: a relative one would mean the directory of Ansible's connection there.
NODE_PATHS = (
    "node_auth_file",
    "node_crio_pid_file",
    "node_dropin_path",
    "node_host_root",
    "node_lock_file",
    "node_pace_path",
    "node_progress_file",
    "node_pull_secret_path",
    "node_python_deps_dir",
    "node_record_file",
)
PREFETCH_OPTIONS = "node_prefetch_options"
_SPEC_KEYS_OF_A_GIVEN_VALUE = ("type", "elements", "choices", "options", "aliases", "no_log")


def role_options(root: Path = ROOT) -> Dict[str, Dict[str, Any]]:
    """Each option of every entry point of every role under ``root``: its argument spec (type, elements, choices,
    sub-options), without default and required, which only matter for a value that is not given."""
    options: Dict[str, Dict[str, Any]] = {}
    for spec_file in sorted(root.glob("roles/*/meta/argument_specs.yml")):
        specs = yaml.safe_load(spec_file.read_text()) or {}
        for entry_point in (specs.get("argument_specs") or {}).values():
            for name, spec in ((entry_point or {}).get("options") or {}).items():
                options.setdefault(name, {key: spec[key] for key in _SPEC_KEYS_OF_A_GIVEN_VALUE if key in spec})
    return options


def _validated(spec: Mapping[str, Dict[str, Any]], values: Mapping[str, Any]) -> Tuple[Dict[str, Any], List[str]]:
    """(the values converted to their types, the validator's messages) for the names of ``values``."""
    result = ArgumentSpecValidator({name: dict(spec[name]) for name in values}).validate(dict(values))
    return result.validated_parameters, [str(message) for message in result.error_messages]


def _messages(record: Callable[[Problems], Any]) -> List[str]:
    problems = Problems()
    record(problems)
    return [error.message for error in problems.errors]


def _prefetch_options_problems(value: Any) -> Tuple[List[str], List[str]]:
    """(problems, warnings) of ``node_prefetch_options``: each key an option of pinned.images.prefetch, its value as
    the module checks it."""
    if not isinstance(value, Mapping):
        return [], []
    spec = prefetch_argument_spec()
    names = set(spec) | {alias for option in spec.values() for alias in option.get("aliases", [])}
    problems: List[str] = []
    given = {}
    for key, item in value.items():
        if key in spec:
            given[key] = item
        elif key not in names:
            close = difflib.get_close_matches(str(key), sorted(names), n=1, cutoff=CLOSE)
            hint = f": did you mean {close[0]}?" if close else ""
            problems.append(f"{PREFETCH_OPTIONS}.{key} is not an option of pinned.images.prefetch{hint}")
    valid = {}
    for key, item in given.items():
        converted, messages = _validated(spec, {key: item})
        problems += [f"{PREFETCH_OPTIONS}: {message}" for message in messages]
        if not messages:
            valid[key] = converted[key]
    problems += [f"{PREFETCH_OPTIONS}.{message}" for message in _messages(lambda p: value_problems(valid, p))]
    unitless = unitless_size_warning(given.get("min_free"), f"{PREFETCH_OPTIONS}.min_free")
    return problems, [unitless] if unitless else []


def _value_problems(name: str, value: Any) -> List[str]:
    """The module rules of one node_* variable whose type is right."""
    if name in PREFETCH_OPTION_OF:
        option = PREFETCH_OPTION_OF[name]
        return [m.replace(option, name, 1) for m in _messages(lambda p: value_problems({option: value}, p))]
    if name in NODE_PATHS and value and not os.path.isabs(str(value)):
        return [f"{name} must be an absolute path on the node, got {value!r}"]
    if name == "node_cri_socket" and value and not os.path.isabs(str(value).replace("unix://", "", 1)):
        return [f"{name} must be an absolute path or unix:// URL of the node's CRI socket, got {value!r}"]
    checks: Dict[str, Callable[[], Any]] = {
        "node_prune_min_age": lambda: parse_duration(value, name),
        "node_prune_keep": lambda: validate_keep(value),
    }
    if name in checks:
        try:
            checks[name]()
        except CollectionError as error:
            return [f"{name}: {error.message}" if not error.message.startswith(name) else error.message]
    return []


def _host_value(variables: Mapping[str, Any], name: str) -> Tuple[bool, Any]:
    """(True, the value) of a host's variable; (False, None) when it cannot be resolved on the controller (a template
    of the node's facts): the node role checks it there."""
    try:
        return True, variables[name]
    except Exception:  # noqa: BLE001 - any templating error of a value made for the node
        return False, None


def variable_problems(
    hostvars: Mapping[str, Any], hosts: Iterable[str], options: Optional[Dict[str, Dict[str, Any]]] = None
) -> Dict[str, List[str]]:
    """``errors`` (bad values) and ``warnings`` (a reserve without its unit) of the role variables set on ``hosts``,
    each line once, naming the hosts that have it, or saying that it is on every host."""
    options = role_options() if options is None else options
    present = [host for host in hosts if host in hostvars]
    found: Dict[Tuple[str, str], List[str]] = {}
    for host in present:
        variables = hostvars[host]
        for name in sorted(set(variables) & set(options)):
            resolved, value = _host_value(variables, name)
            if not resolved:
                continue
            converted, messages = _validated(options, {name: value})
            lines = [("errors", message) for message in messages]
            if not messages:
                lines += [("errors", message) for message in _value_problems(name, converted[name])]
            if name == PREFETCH_OPTIONS and not messages:
                problems, warnings = _prefetch_options_problems(value)
                lines += [("errors", m) for m in problems] + [("warnings", m) for m in warnings]
            for line in lines:
                found.setdefault(line, []).append(host)
    checked: Dict[str, List[str]] = {"errors": [], "warnings": []}
    for (kind, message), where in found.items():
        checked[kind].append(f"{message} (on {_where(where, present)})")
    return checked
