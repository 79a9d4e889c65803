# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's one secret redaction: registry errors, Kubernetes API errors and credential ``repr`` use it.

A leaf: it imports nothing of the collection.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["REDACTED", "redact"]

# Ansible masks no_log values with the same string, so a reader sees one marker everywhere.
REDACTED = "********"


def redact(text: str, secrets: Iterable[str], min_length: int = 1) -> str:
    """``text`` with every occurrence of any secret replaced by REDACTED; longest first so overlapping secrets vanish whole.

    Secrets shorter than ``min_length`` (and empty ones) are left alone: a short value would blank out unrelated words.
    """
    for secret in sorted({s for s in secrets if s and len(s) >= min_length}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
