# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Reading the node's small configuration files (pull secret, registries.conf, set files) with errors that name
them, and values shown short in those errors."""

from __future__ import annotations

import importlib
import os
import reprlib
from typing import Any, Callable, Union

__all__ = ["StrPath", "read_config_text", "short_value", "toml_module"]


def toml_module() -> Any:
    """The TOML reader of the node's Python (registries.conf, hosts.toml, CRI-O drop-ins): tomllib from 3.11, else
    tomli, else None. Looked up at each use, not at import: the node's private directory (``_node_python.deps``),
    which may hold tomli, can join ``sys.path`` after this module is imported."""
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


# A path as os.fspath and open() take it.
StrPath = Union[str, "os.PathLike[str]"]

# A few items and levels at most: a value from a file can be megabytes long, or an aliased YAML structure.
_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxstring = _REPR.maxother = 100


def short_value(value: object, limit: int = 100) -> str:
    """``value`` for an error message: a quoted string or a repr, cut to about ``limit`` characters."""
    text = value if isinstance(value, str) else _REPR.repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text) if isinstance(value, str) else text


def read_config_text(
    path: StrPath, what: str, max_size: int, error_class: Callable[[str], Exception], encoding: str = "utf-8"
) -> str:
    """The text of ``path``; ``error_class("<what> <path> ...")`` when it is missing, unreadable, too big or not text.

    The size cap keeps a wrong path (a device, a huge file) from being read whole.
    """
    path = os.fspath(path)
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
