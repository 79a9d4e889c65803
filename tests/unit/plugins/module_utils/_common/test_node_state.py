# SPDX-License-Identifier: GPL-3.0-or-later
"""_common/node_state: the state directory is made mode 0700, tightened when looser, refused when not ours."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.node_state import (
    STATE_DIR,
    NodeStateError,
    ensure_state_dir,
)

ROOT = Path(__file__).resolve().parents[5]


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_made_with_its_parents_mode_0700(tmp_path):
    path = str(tmp_path / "var/lib/pinned-images/state")
    assert ensure_state_dir(path) == path
    assert _mode(path) == 0o700
    # Again: nothing to do.
    assert ensure_state_dir(path) == path


def test_a_looser_directory_of_ours_is_tightened(tmp_path):
    path = tmp_path / "state"
    path.mkdir(mode=0o777)
    os.chmod(path, 0o777)
    ensure_state_dir(str(path))
    assert _mode(path) == 0o700


def test_a_file_or_a_link_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(NodeStateError, match="is not a directory; nothing was changed"):
        ensure_state_dir(str(tmp_path / "file"))
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(NodeStateError, match="is not a directory"):
        ensure_state_dir(str(tmp_path / "link"))


def test_a_directory_of_another_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the directory away")
    path = tmp_path / "state"
    path.mkdir()
    os.chown(path, 12345, 12345)
    with pytest.raises(NodeStateError, match="belongs to uid 12345"):
        ensure_state_dir(str(path))


def test_the_role_and_the_modules_name_the_one_directory():
    defaults = yaml.safe_load((ROOT / "roles" / "node" / "defaults" / "main.yml").read_text())
    assert defaults["node_state_dir"] == STATE_DIR
    specs = yaml.safe_load((ROOT / "roles" / "node" / "meta" / "argument_specs.yml").read_text())
    options_ = [entry["options"] for entry in specs["argument_specs"].values()]
    assert {spec["node_state_dir"]["default"] for spec in options_ if "node_state_dir" in spec} == {STATE_DIR}
