# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node_python_deps module's run (node side, Python 3.8+): report this interpreter and provision
(``present``) or remove (``absent``) the private directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import (
    HAS_NODE_DEPS,
    NODE_DEPS,
    SITE,
    WHEELS,
    NodeDepsError,
    interpreter,
    provision,
    remove,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["NodeDepsRequest", "python_deps", "run"]


@dataclass(frozen=True)
class NodeDepsRequest:
    """The module's options, checked: the private directory, the state and the wheels (name, sha256)."""

    path: str
    state: Optional[str]
    wheels: Tuple[Tuple[str, str], ...]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "NodeDepsRequest":
        """Every problem of the options at once (NodeDepsError)."""
        problems: List[str] = []
        if not os.path.isabs(params["path"]):
            problems.append("path must be absolute, got %r" % (params["path"],))
        if params["state"] == "present" and not params["wheels"]:
            problems.append("state=present needs at least one wheel")
        if problems:
            raise NodeDepsError(problems, details={"changed": False})
        return cls(
            path=params["path"],
            state=params["state"],
            wheels=tuple((wheel["name"], wheel["sha256"]) for wheel in params["wheels"]),
        )


def python_deps(request: NodeDepsRequest, check_mode: bool = False) -> Dict[str, Any]:
    """The module's result. NodeDepsError, with the result so far in its details, on a failed write."""
    info = interpreter()
    tag_dir = os.path.join(request.path, info["tag"])
    result: Dict[str, Any] = dict(
        changed=False,
        interpreter=info,
        pythonpath=os.path.join(tag_dir, SITE),
        importable=HAS_NODE_DEPS and NODE_DEPS["site"] is None,
        problem=NODE_DEPS["error"],
    )
    try:
        if request.state == "present":
            wheels = [
                dict(path=os.path.join(tag_dir, WHEELS, os.path.basename(name)), sha256=sha256)
                for name, sha256 in request.wheels
            ]
            outcome = provision(request.path, info["tag"], wheels, check_mode)
            result.update(changed=outcome["changed"], reason=outcome["reason"], files=outcome["files"])
        elif request.state == "absent":
            result["changed"] = remove(request.path, check_mode)["changed"]
    except NodeDepsError as err:
        raise NodeDepsError(err.message, details=result) from err
    return result


def run(invocation: Invocation) -> Outcome:
    """The module's run."""
    return Outcome(python_deps(NodeDepsRequest.from_params(invocation.params), invocation.check_mode))
