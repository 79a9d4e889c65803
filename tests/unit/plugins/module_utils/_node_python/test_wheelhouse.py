# SPDX-License-Identifier: GPL-3.0-or-later
"""_wheelhouse and the node_wheelhouse / node_python_deps modules: tags, markers of requirements-node.txt per target,
the pip command, filling with a stand-in pip (the real one runs in tests/functional/test_node_python_deps.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.pinned.images.plugins.module_utils._node_python import wheelhouse as wh

ROOT = Path(__file__).resolve().parents[5]
LINES = (ROOT / "requirements-node.txt").read_text().splitlines()


def test_parse_tag_and_its_error():
    assert wh.parse_tag("cp39-manylinux-aarch64") == dict(
        implementation="cp", python="3.9", libc="manylinux", machine="aarch64"
    )
    with pytest.raises(wh.WheelhouseError, match="cp3<minor>-<manylinux|musllinux>"):
        wh.parse_tag("py3-linux-x86_64")


@pytest.mark.parametrize(
    "tag, grpcio, protobuf, tomli",
    [
        ("cp38-manylinux-x86_64", "1.70.0", "5.29.6", True),
        ("cp39-manylinux-x86_64", "1.80.1", "6.33.6", True),
        ("cp311-manylinux-aarch64", "1.85.3", "7.36.2", False),
        ("cp312-musllinux-x86_64", "1.85.3", "7.36.2", False),
    ],
)
def test_each_node_python_gets_one_pinned_release_above_the_floors(tag, grpcio, protobuf, tomli):
    found = [str(requirement) for requirement in wh.requirements_for(LINES, wh.parse_tag(tag))]
    assert f"grpcio=={grpcio}" in found and "grpcio>=1.62.0" in found
    assert f"protobuf=={protobuf}" in found and "protobuf>=4.25.0" in found
    assert any(requirement.startswith("tomli") for requirement in found) is tomli


def test_the_pip_command_asks_for_exactly_the_target():
    target = wh.parse_tag("cp39-musllinux-aarch64")
    command = wh.download_command(["pip"], "/w", target, wh.requirements_for(["grpcio==1.80.1"], target))
    assert command[:3] == ["pip", "download", "--only-binary=:all:"]
    assert command[command.index("--python-version") + 1] == "3.9"
    assert command[command.index("--implementation") + 1] == "cp"
    assert [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"] == [
        "musllinux_1_1_aarch64",
        "musllinux_1_2_aarch64",
    ]
    assert command[-1] == "grpcio==1.80.1"


def test_fill_downloads_once_then_serves_without_pip(tmp_path, fake_pip):
    pip, log = fake_pip
    result = wh.fill(str(tmp_path / "wh"), "cp311-manylinux-x86_64", LINES, pip=pip)
    assert result["changed"] and result["unmet"] == []
    assert sorted(wheel["name"].split("-")[0] for wheel in result["wheels"]) == [
        "grpcio",
        "protobuf",
        "typing_extensions",
    ]
    assert all(len(wheel["sha256"]) == 64 for wheel in result["wheels"])
    assert len(log.read_text().splitlines()) == 1

    again = wh.fill(str(tmp_path / "wh"), "cp311-manylinux-x86_64", LINES, pip=["false"])
    assert not again["changed"] and again["wheels"] == result["wheels"]


def test_fill_picks_the_pinned_release_among_older_ones(tmp_path):
    directory = tmp_path / "cp311-manylinux-x86_64"
    directory.mkdir()
    for name in (
        "grpcio-1.62.0-cp311-cp311-manylinux_2_17_x86_64.whl",
        "grpcio-1.85.3-cp311-cp311-manylinux_2_17_x86_64.whl",
        "protobuf-7.36.2-cp310-abi3-manylinux2014_x86_64.whl",
        "typing_extensions-4.16.0-py3-none-any.whl",
    ):
        (directory / name).write_bytes(b"")
    names = [
        wheel["name"] for wheel in wh.fill(str(tmp_path), "cp311-manylinux-x86_64", LINES, download=False)["wheels"]
    ]
    assert names[0].startswith("grpcio-1.85.3-") and len(names) == 3


def test_without_downloads_a_missing_tag_names_the_fix(tmp_path):
    with pytest.raises(wh.WheelhouseError) as info:
        wh.fill(str(tmp_path), "cp39-manylinux-x86_64", LINES, download=False)
    assert "cp39-manylinux-x86_64" in str(info.value) and "ansible-playbook pinned.images.wheelhouse" in str(info.value)
    assert "node_wheelhouse" in str(info.value)


def test_a_failing_pip_names_the_tag_and_the_fix(tmp_path):
    with pytest.raises(wh.WheelhouseError, match=r"cp312-manylinux-x86_64 and pip download failed \(rc=1"):
        wh.fill(str(tmp_path), "cp312-manylinux-x86_64", LINES, pip=["false"])


def test_default_path_follows_the_environment():
    assert wh.default_path({wh.ENV_WHEELHOUSE: "/srv/wh"}) == "/srv/wh"
    assert wh.default_path({"XDG_CACHE_HOME": "/c"}) == "/c/pinned-images/wheelhouse"
