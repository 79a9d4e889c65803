# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""``WWW-Authenticate`` challenges, as a registry announces its authentication."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

__all__ = ["Challenge", "parse_challenges"]

# An authentication challenge: (scheme in lower case, {param: value}).
Challenge = Tuple[str, Dict[str, str]]
_SCHEME_RE = re.compile(r"\s*,?\s*([A-Za-z][A-Za-z0-9_-]*)")
_PARAM_RE = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*,?')


def parse_challenges(header: str) -> List[Challenge]:
    """``WWW-Authenticate`` -> [(scheme, {param: value})], scheme in lower case."""
    challenges: List[Challenge] = []
    pos = 0
    while pos < len(header):
        match = _SCHEME_RE.match(header, pos)
        if not match:
            break
        scheme, pos = match.group(1).lower(), match.end()
        fields: Dict[str, str] = {}
        while True:
            param = _PARAM_RE.match(header, pos)
            if not param:
                break
            value = param.group(2)
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            fields[param.group(1).lower()] = value
            pos = param.end()
        challenges.append((scheme, fields))
    return challenges
