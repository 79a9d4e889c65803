# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""pinned.images.machine_config with relative paths resolved against the controller's working directory."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths import K8S_AUTH_PATH_OPTIONS
from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths_action import ControllerPathsAction


class ActionModule(ControllerPathsAction):
    PATH_OPTIONS = ("sets", "dest", *K8S_AUTH_PATH_OPTIONS)
    INPUT_OPTIONS = ("sets",)
