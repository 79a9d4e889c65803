# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Relative paths of controller-side tasks, resolved against the directory ``ansible``/``ansible-playbook`` was
started in (the controller's working directory).

Ansible runs a module over the local connection in the playbook's directory (the loader's base directory), which
for a collection playbook such as ``pinned.images.render`` is inside the installed collection; an ad-hoc run uses
the working directory. Resolving on the controller, before the module runs, makes both mean the directory the
user started the command in (a pipeline's checkout).

The action plugin base that uses them is ``_controller_paths_action.ControllerPathsAction`` (kept apart: importing
ansible's action machinery changes how modules run in the same process report warnings, which unit tests do).
"""

from __future__ import annotations

import os
from typing import Any, Container, Dict, Iterable, List, Mapping, Tuple

__all__ = [
    "K8S_AUTH_PATH_OPTIONS",
    "resolve_options",
    "resolve_path",
]

# The path options of the Kubernetes connection (the k8s_auth doc fragment, K8S_AUTH_ARG_SPEC of _runs/k8s_options),
# under their names and aliases: the kubeconfig (a path or a dict) and the certificate and key files.
K8S_AUTH_PATH_OPTIONS = ("kubeconfig", "ca_cert", "ssl_ca_cert", "client_cert", "cert_file", "client_key", "key_file")


def resolve_path(value: str, base: str) -> str:
    """``value`` made absolute against ``base`` unless it is absolute, or starts with ``~`` or a variable."""
    expanded = os.path.expanduser(os.path.expandvars(value))
    if os.path.isabs(expanded):
        return value
    return os.path.normpath(os.path.join(base, expanded))


def resolve_options(
    args: Mapping[str, Any], options: Iterable[str], base: str, must_exist: Container[str] = ()
) -> Tuple[Dict[str, Any], List[str]]:
    """A copy of the task ``args`` with each string (or each string of a list) of ``options`` resolved, and the
    problems: each relative path of ``must_exist`` that does not exist, with the directory it was resolved against."""
    resolved: Dict[str, Any] = dict(args)
    problems: List[str] = []
    for option in options:
        value = args.get(option)
        values = value if isinstance(value, list) else [value]
        out: List[Any] = []
        for item in values:
            if isinstance(item, str) and item:
                path = resolve_path(item, base)
                if option in must_exist and path != item and not os.path.exists(path):
                    problems.append(
                        f"{option}: {item}: no such file or directory (resolved against {base}, "
                        "the directory ansible was started in)"
                    )
                item = path
            out.append(item)
        if value is not None:
            resolved[option] = out if isinstance(value, list) else out[0]
    return resolved, problems
