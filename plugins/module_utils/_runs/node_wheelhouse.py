# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node_wheelhouse module's run (controller side): fill the wheelhouse for every target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._node_python.wheelhouse import (
    HAS_PACKAGING,
    WheelhouseError,
    default_path,
    fill,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["WheelhouseRequest", "fill_targets", "run"]


@dataclass(frozen=True)
class WheelhouseRequest:
    """The module's options: the wheelhouse, the targets, the requirements and how pip runs."""

    path: str
    targets: Tuple[str, ...]
    requirements: Tuple[str, ...]
    download: bool
    pip: Optional[List[str]]
    timeout: float

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "WheelhouseRequest":
        """The options as the argument spec checked them; the wheelhouse defaults to ``default_path()``."""
        return cls(
            path=params["path"] or default_path(),
            targets=tuple(params["targets"]),
            requirements=tuple(params["requirements"]),
            download=params["download"],
            pip=params["pip"],
            timeout=params["timeout"],
        )


def fill_targets(request: WheelhouseRequest, check_mode: bool = False) -> Dict[str, Any]:
    """Fill the wheelhouse for every target; the module's result.

    WheelhouseError, with ``path`` and the targets filled so far in its details, when one cannot be filled.
    """
    targets: Dict[str, Any] = {}
    changed = False
    try:
        for tag in request.targets:
            outcome = fill(
                request.path,
                tag,
                list(request.requirements),
                request.download,
                request.pip,
                request.timeout,
                check_mode,
            )
            changed = changed or outcome["changed"]
            checksums = [dict(name=wheel["name"], sha256=wheel["sha256"]) for wheel in outcome["wheels"]]
            targets[tag] = dict(
                path=outcome["path"], wheels=outcome["wheels"], checksums=checksums, unmet=outcome["unmet"]
            )
    except (ValueError, WheelhouseError, OSError) as err:
        # ValueError: a requirement marker naming an unknown variable (packaging's UndefinedEnvironmentName).
        raise WheelhouseError(str(err), details={"path": request.path, "targets": targets}) from err
    total = sum(wheel["size"] for target in targets.values() for wheel in target["wheels"])
    return {"changed": changed, "path": request.path, "targets": targets, "bytes": total}


def run(invocation: Invocation) -> Outcome:
    """The module's run; packaging is needed to read the requirements' markers."""
    if not HAS_PACKAGING:
        raise CollectionError(missing_required_lib("packaging"))
    return Outcome(fill_targets(WheelhouseRequest.from_params(invocation.params), invocation.check_mode))
