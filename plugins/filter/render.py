# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the render entry point: controller paths, the files written and the drift report (documented in the
.yml files)."""

from __future__ import annotations

import os

from ansible_collections.pinned.images.plugins.module_utils._render_report import render_report
from ansible_collections.pinned.images.plugins.plugin_utils import _cluster
from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths import resolve_path


def controller_path(value: str) -> str:
    """``value`` resolved against the directory ansible-playbook was started in."""
    return resolve_path(value, os.getcwd()) if value else value


def render_report_filter(changes, pools=None, dest="", check_mode=False, error=None) -> dict:
    """The render report; paths are shown relative to the directory ansible-playbook was started in."""
    return render_report(changes, pools=pools, dest=dest, check_mode=check_mode, error=error, base=os.getcwd())


def render_stale(found, set_files=None, machine_configs=None) -> list:
    """The files found in the output directories that the render did not write."""
    return _cluster.render_stale(found, _cluster.render_written(set_files, machine_configs))


def render_changes(set_files, machine_configs=None, removed=None) -> list:
    """The file changes of the render's tasks, for render_report."""
    return _cluster.render_changes(set_files, machine_configs, removed)


class FilterModule:
    def filters(self):
        return {"controller_path": controller_path, "render_report": render_report_filter,
                "render_stale": render_stale, "render_changes": render_changes}
