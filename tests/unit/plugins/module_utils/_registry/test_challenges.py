# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry/challenges: WWW-Authenticate challenges, including hostile lengths."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._registry import challenges as _challenges
from ansible_collections.pinned.images.plugins.module_utils._registry.challenges import parse_challenges

CHALLENGES = [
    (
        'Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull"',
        [
            (
                "bearer",
                {
                    "realm": "https://auth.example.com/token",
                    "service": "registry.example.com",
                    "scope": "repository:a/b:pull",
                },
            )
        ],
    ),
    ('Basic realm="Registry Realm"', [("basic", {"realm": "Registry Realm"})]),
    ("basic realm=plain", [("basic", {"realm": "plain"})]),
    (
        'Bearer realm="x", service="a,b", Basic realm="y"',
        [("bearer", {"realm": "x", "service": "a,b"}), ("basic", {"realm": "y"})],
    ),
    ('Bearer realm="say \\"hi\\""', [("bearer", {"realm": 'say "hi"'})]),
    ("Bearer", [("bearer", {})]),
    ("", []),
    ("!!!", []),
    ('Bearer realm="unterminated', [("bearer", {"realm": '"unterminated'})]),
]


@pytest.mark.parametrize("header, expected", CHALLENGES)
def test_parse_challenges(header, expected):
    assert parse_challenges(header) == expected


class _CountingPattern:
    """Wraps a compiled pattern and counts ``match`` calls and the characters each call consumed."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.calls = 0
        self.consumed = 0

    def match(self, text, pos=0):
        self.calls += 1
        found = self.pattern.match(text, pos)
        if found:
            self.consumed += found.end() - pos
        return found


@pytest.mark.parametrize("count", [1000, 20000])
def test_parse_challenges_hostile_length(monkeypatch, count):
    scheme = _CountingPattern(_challenges._SCHEME_RE)
    param = _CountingPattern(_challenges._PARAM_RE)
    monkeypatch.setattr(_challenges, "_SCHEME_RE", scheme)
    monkeypatch.setattr(_challenges, "_PARAM_RE", param)
    header = "Bearer " + 'a="b",' * count
    # A repeated parameter keeps its last value: the result stays one challenge with one parameter.
    assert parse_challenges(header) == [("bearer", {"a": "b"})]
    # One scan: one match per parameter (plus the failing one at the end), each starting where the last ended.
    assert (scheme.calls, param.calls) == (1, count + 1)
    assert scheme.consumed + param.consumed == len(header)

    distinct = "Bearer " + ",".join(f'k{i}="v{i}"' for i in range(count))
    parsed = parse_challenges(distinct)
    assert len(parsed) == 1 and len(parsed[0][1]) == count and parsed[0][1][f"k{count - 1}"] == f"v{count - 1}"
