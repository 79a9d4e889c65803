# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""``ControllerPathsAction``: the action plugin base of the controller-side modules; subclasses set
``PATH_OPTIONS`` (resolved, see ``_controller_paths``) and ``INPUT_OPTIONS`` (those that must exist)."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

from ansible.plugins.action import ActionBase
from ansible.utils.collection_loader import resource_from_fqcr

from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths import resolve_options

__all__ = [
    "ControllerPathsAction",
]


class ControllerPathsAction(ActionBase):
    """Runs the module of the same name with relative paths resolved on the controller (local connection only:
    on any other connection a path names a file of the target, and the module resolves it there)."""

    PATH_OPTIONS: Tuple[str, ...] = ()
    INPUT_OPTIONS: Tuple[str, ...] = ()

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result: Dict[str, Any] = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if resource_from_fqcr(self._connection.transport) == "local":
            args, problems = resolve_options(args, self.PATH_OPTIONS, os.getcwd(), self.INPUT_OPTIONS)
            if problems:
                result.update(
                    failed=True,
                    changed=False,
                    problems=problems,
                    msg=problems[0] if len(problems) == 1 else "; ".join(problems),
                )
                return result
        result.update(
            self._execute_module(module_name=self._task.resolved_action, module_args=args, task_vars=task_vars)
        )
        return result
