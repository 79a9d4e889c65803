# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Reading the node's small configuration files (pull secret, registries.conf) with errors that name them."""

from __future__ import annotations


def read_config_text(path: str, what: str, max_size: int, error_class, encoding: str = "utf-8") -> str:
    """The text of ``path``; ``error_class("<what> <path> ...")`` when it is missing, unreadable, too big or not text.

    The size cap keeps a wrong path (a device, a huge file) from being read whole.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_size + 1)
    except FileNotFoundError:
        raise error_class(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise error_class(f"{what} {path} is a directory") from None
    except OSError as exc:
        raise error_class(f"{what} {path} is not readable: {exc.strerror or exc}") from None
    if len(data) > max_size:
        raise error_class(f"{what} {path} is larger than {max_size} bytes")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise error_class(f"{what} {path}: not UTF-8 text") from None
