# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The root of every error the collection raises on purpose, and the one way a module reports it.

A leaf: it imports nothing of the collection. An error has a message, the ``problems`` behind it (every problem
found, so a user fixes them all at once) and ``details``: structured fields a module adds to its failure
(``error_kind``, ``status``, ``missing``, ...). Subclasses set all three in their constructor.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Union

__all__ = [
    "AUTH",
    "DEADLINE",
    "INVALID",
    "LOCKED",
    "NOT_FOUND",
    "NO_SPACE",
    "PERMANENT_ERROR_KINDS",
    "PERMISSION",
    "UNAVAILABLE",
    "UNKNOWN",
    "CollectionError",
    "join_problems",
]

# Error kinds (a failure's ``error_kind``); a retry cannot fix the ones in PERMANENT_ERROR_KINDS.
UNAVAILABLE = "unavailable"
PERMISSION = "permission"
DEADLINE = "deadline"
NOT_FOUND = "not_found"
AUTH = "auth"
NO_SPACE = "no_space"
INVALID = "invalid"
LOCKED = "locked"
UNKNOWN = "unknown"
PERMANENT_ERROR_KINDS = frozenset((PERMISSION, NOT_FOUND, AUTH, NO_SPACE, INVALID))


def join_problems(problems: Iterable[str]) -> str:
    """One problem as it is; several as a counted list, one per line."""
    problems = list(problems)
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} problems found:\n" + "\n".join("- " + p for p in problems)


class CollectionError(Exception):
    """An error of this collection: ``message``, ``problems`` (list of str) and ``details`` (dict of fields)."""

    def __init__(
        self,
        problems: Union[str, Iterable[str]],
        message: Optional[str] = None,
        details: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.message = join_problems(self.problems) if message is None else message
        self.details = dict(details or {})
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message
