# SPDX-License-Identifier: GPL-3.0-or-later
"""The one redaction of _secrets."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._common.secrets import REDACTED, redact


def test_redact_longest_first_and_empty_secrets():
    assert redact("a tok-1 b tok-12", ["tok-1", "tok-12", ""]) == f"a {REDACTED} b {REDACTED}"
    assert redact("nothing to hide", []) == "nothing to hide"


def test_redact_leaves_short_secrets_below_min_length():
    assert redact("ab tok-1", {"ab", "tok-1"}, min_length=4) == f"ab {REDACTED}"
