# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Where the node modules find their private Python directory: the one declaration, read by the node modules
(``deps``) and by the controller's filters, which must not import ``deps`` (it probes grpc when imported)."""

from __future__ import annotations

__all__ = ["DEFAULT_DIR", "ENV_DIR"]

ENV_DIR = "PINNED_IMAGES_PYTHON_DIR"
# Used without the variable too, so that ad hoc runs on a node the role provisioned need nothing more.
DEFAULT_DIR = "/var/lib/pinned-images/python"
