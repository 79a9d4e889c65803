# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""pinned.images.node_access_pod with relative paths resolved against the controller's working directory."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths_action import ControllerPathsAction


class ActionModule(ControllerPathsAction):
    PATH_OPTIONS = ("kubeconfig", "ca_cert", "ssl_ca_cert", "client_cert", "cert_file", "client_key", "key_file")
    INPUT_OPTIONS = ()
