# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # module_utils._runs.options.NODE_STATE_ARGUMENT_SPEC; the directory is module_utils._common.node_state.
    DOCUMENTATION = r"""
options:
  state_dir:
    description:
      - The node directory of the lock (C(prefetch.lock)) and the record (C(pinned-images-record.json)) of
        M(pinned.images.prefetch) and M(pinned.images.prune), made on first use (mode 0700) and under O(host_root).
        One fixed directory by default, so that two ad hoc runs, or an ad hoc run and the C(pinned.images.node)
        role, never pull at the same time, and an ad hoc prune finds what an ad hoc prefetch recorded.
      - Default C($PINNED_IMAGES_STATE_DIR) when the module's environment sets it, else
        V(/var/lib/pinned-images/state).
      - It must belong to the user the module runs as; a looser mode is tightened to 0700.
    type: path
    default: /var/lib/pinned-images/state
  former_record_file:
    description:
      - A record kept elsewhere before (the C(pinned.images.node) role names the one it kept next to its lock
        file). When the record file does not exist yet and this one does, it is read, checked, written as the
        record and removed, once (in check mode only read).
    type: path
"""
