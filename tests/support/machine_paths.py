# SPDX-License-Identifier: GPL-3.0-or-later
"""A private view of /var/lib for a command: what a test finds at /var/lib/pinned-images (the node modules' default
private Python directory) is the test's own, and the machine's /var/lib is never written.

The command runs in a mount namespace of its own (``unshare -m``, mounts not propagated back) where /var/lib is an
overlay whose writes go to the test's scratch directory, and /var/lib/pinned-images is the test's directory bound
over it, or an empty tmpfs. Needs root (the lab runs as root already).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

VAR_LIB = "/var/lib"
PINNED_IMAGES = "/var/lib/pinned-images"

_SCRIPT = """
set -eu
scratch=$1 own=$2
shift 2
mkdir -p "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$scratch/upper,workdir=$scratch/work" /var/lib
mkdir -p /var/lib/pinned-images
if [ -n "$own" ]; then
  mount --bind "$own" /var/lib/pinned-images
else
  mount -t tmpfs -o size=1m,mode=0755 tmpfs /var/lib/pinned-images
fi
exec "$@"
"""


def with_own_var_lib(command: Sequence[str], scratch: Path, pinned_images: Optional[Path] = None) -> list[str]:
    """``command`` run where /var/lib/pinned-images is ``pinned_images`` (None: an empty directory); ``scratch``
    (created) takes the overlay's writes."""
    scratch.mkdir(parents=True, exist_ok=True)
    own = str(pinned_images) if pinned_images is not None else ""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", _SCRIPT, "sh", str(scratch), own, *command]
