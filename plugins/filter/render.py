# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the render entry point: controller paths, the files written and the drift report (documented in the
.yml files; the logic is in ``plugin_utils/_render.py`` and ``plugin_utils/_controller_paths.py``)."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from ansible_collections.pinned.images.plugins.plugin_utils import _render
from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths import resolve_path


def controller_path(value: str) -> str:
    """``value`` resolved against the directory ansible-playbook was started in."""
    return resolve_path(value, os.getcwd()) if value else value


def render_report_filter(
    changes: Optional[Iterable[Optional[Mapping[str, Any]]]],
    pools: Optional[List[Mapping[str, Any]]] = None,
    dest: str = "",
    check_mode: bool = False,
    error: Any = None,
    not_ours: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """The render report; paths are shown relative to the directory ansible-playbook was started in."""
    return _render.render_report(
        changes, pools=pools, dest=dest, check_mode=check_mode, error=error, base=os.getcwd(), not_ours=not_ours
    )


def render_stale(
    found: Optional[Mapping[str, Any]],
    set_files: Optional[Mapping[str, Any]] = None,
    machine_configs: Optional[Mapping[str, Any]] = None,
) -> List[str]:
    """The files found in the output directories that the render did not write and owns."""
    return _render.render_leftovers(found, _render.render_written(set_files, machine_configs))["stale"]


def render_not_ours(
    found: Optional[Mapping[str, Any]],
    set_files: Optional[Mapping[str, Any]] = None,
    machine_configs: Optional[Mapping[str, Any]] = None,
) -> List[str]:
    """The files found in the output directories that the render did not write and does not own."""
    return _render.render_leftovers(found, _render.render_written(set_files, machine_configs))["not_ours"]


def render_changes(
    set_files: Optional[Mapping[str, Any]],
    machine_configs: Optional[Mapping[str, Any]] = None,
    removed: Optional[Mapping[str, Any]] = None,
) -> List[Optional[Dict[str, Any]]]:
    """The file changes of the render's tasks, for render_report."""
    return _render.render_changes(set_files, machine_configs, removed)


def render_problem(info: Mapping[str, Any], sources: Mapping[str, Any], dest: str, allow_empty: Any = False) -> str:
    """Why the render of no set must not write, or ""."""
    return _render.render_problem(info, sources, dest, bool(allow_empty))


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {
            "controller_path": controller_path,
            "render_report": render_report_filter,
            "render_stale": render_stale,
            "render_not_ours": render_not_ours,
            "render_changes": render_changes,
            "render_problem": render_problem,
        }
