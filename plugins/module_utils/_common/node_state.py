# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node directory where the prefetch and the prune keep their lock and record (node side, Python 3.8+): the
one declaration of its path, read by the modules' defaults, the role's defaults and the tests.

One fixed directory, so that two ad hoc runs, or an ad hoc run and the role, lock the same file, and an ad hoc
prune finds the record an ad hoc prefetch wrote. It is made on first use, mode 0700, and must belong to the user
the module runs as (the record decides what a prune removes).
"""

from __future__ import annotations

import os
import stat

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = ["ENV_STATE_DIR", "LOCK_NAME", "STATE_DIR", "STATE_DIR_MODE", "NodeStateError", "ensure_state_dir"]

STATE_DIR = "/var/lib/pinned-images/state"
# The modules' default when set (env_fallback of ``state_dir``): tests and a test host point it elsewhere.
ENV_STATE_DIR = "PINNED_IMAGES_STATE_DIR"
LOCK_NAME = "prefetch.lock"
STATE_DIR_MODE = 0o700


class NodeStateError(CollectionError):
    """The state directory cannot be made or trusted; nothing was changed."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            f"state_dir {path} {why}; nothing was changed. Give another state_dir, or fix the directory",
            details={"state_dir": path},
        )


def ensure_state_dir(path: str) -> str:
    """Make ``path`` (and its parents) when missing, mode 0700; ``path``. NodeStateError when it is not a directory
    of this user; a looser mode of ours is tightened."""
    try:
        if not os.path.lexists(path):
            os.makedirs(path, mode=STATE_DIR_MODE, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise NodeStateError(path, f"cannot be made ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise NodeStateError(path, "is not a directory")
    if info.st_uid != os.geteuid():
        raise NodeStateError(path, f"belongs to uid {info.st_uid}, not to this user ({os.geteuid()})")
    if stat.S_IMODE(info.st_mode) != STATE_DIR_MODE:
        try:
            os.chmod(path, STATE_DIR_MODE)
        except OSError as exc:
            raise NodeStateError(path, f"cannot be made mode 0700 ({exc.strerror or exc})") from None
    return path
