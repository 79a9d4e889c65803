# SPDX-License-Identifier: GPL-3.0-or-later
"""_common/config_file: bounded reads whose errors name the file, and values shown short."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import read_config_text, short_value
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from fixtures.bad_files import TOO_LARGE, error_of


def test_a_file_is_read_as_text(tmp_path):
    path = tmp_path / "conf"
    path.write_text("a = 1\n")
    assert read_config_text(path, "registries.conf", 100, CollectionError) == "a = 1\n"


def test_every_bad_file_is_refused_with_its_name(bad_file):
    message = error_of(
        CollectionError, read_config_text, bad_file.path, "the pull secret", TOO_LARGE - 1, CollectionError
    )
    assert message.startswith(f"the pull secret {bad_file.path}") and bad_file.message in message


@pytest.mark.parametrize(
    "value, shown",
    [
        ("short", "'short'"),
        ("x" * 200, repr("x" * 97 + "...")),
        ([1, [2, [3, [4]]]], "[1, [2, [...]]]"),
    ],
)
def test_values_are_shown_short(value, shown):
    assert short_value(value) == shown
