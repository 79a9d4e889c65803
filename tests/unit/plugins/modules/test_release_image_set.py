# SPDX-License-Identifier: GPL-3.0-or-later
"""release_image_set main(): bad input fails before any registry is asked, naming the input.
Reads from real registries are in tests/functional/test_release_lab.py."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.modules import release_image_set as module
from fixtures.module_runner import run_module


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"release": "quay.io/Org/Release:4.16"}, "release 'quay.io/Org/Release:4.16': image reference"),
        ({"release": "quay.io/ocp/release:4.16", "expansion_factor": 0}, "expansion_factor must be above 0, got 0"),
        ({"release": "quay.io/ocp/release:4.16", "platform": "amd64"}, "platform 'amd64' is not os/architecture"),
    ],
)
def test_bad_input_is_named(args, expected, capsys, tmp_path):
    result = run_module(module, dict(args, registries_conf=str(tmp_path / "absent.conf")), capsys)
    assert result["rc"] == 1 and result["failed"]
    assert expected in result["msg"]


def test_a_missing_registries_conf_is_named(capsys, tmp_path):
    result = run_module(
        module, {"release": "quay.io/ocp/release:4.16", "registries_conf": str(tmp_path / "r.conf")}, capsys
    )
    assert result["failed"] and f"registries file {tmp_path / 'r.conf'} does not exist" in result["msg"]


def test_a_registry_that_is_down_fails_naming_the_release(capsys, tmp_path):
    conf = tmp_path / "registries.conf"
    conf.write_text("")
    result = run_module(
        module, {"release": "127.0.0.1:1/ocp/release:4.16", "registries_conf": str(conf), "registry_timeout": 5}, capsys
    )
    assert result["failed"]
    assert result["msg"].startswith("cannot read release image 127.0.0.1:1/ocp/release:4.16: cannot connect to")
