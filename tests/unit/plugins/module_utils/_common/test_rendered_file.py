# SPDX-License-Identifier: GPL-3.0-or-later
"""The ownership mark of rendered files: written with the header and the annotation, told apart from a user's file
and from a file an earlier version rendered without the mark."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import (
    FOREIGN,
    HEADER,
    OURS,
    PREVIOUS,
    NotOursError,
    marked,
    owner,
    refuse_foreign,
    rendered_text,
)
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import dump_yaml, load_yaml
from fixtures.openshift_objects import USER_MACHINE_CONFIG

SET = {
    "apiVersion": "machineconfiguration.openshift.io/v1",
    "kind": "PinnedImageSet",
    "metadata": {"name": "worker-images", "annotations": {"team": "a"}},
    "spec": {"pinnedImages": [{"name": "quay.io/org/app@sha256:" + "a" * 64}]},
}


def test_a_rendered_file_starts_with_the_header_and_its_object_carries_the_annotation():
    text = rendered_text(SET)
    assert text.startswith(HEADER) and text.count("\n# ") == 0
    loaded = load_yaml(text)
    assert loaded["metadata"]["annotations"] == {"pinned.images/rendered-by": "pinned.images", "team": "a"}
    assert loaded == marked(SET) and "pinned.images/rendered-by" not in SET["metadata"]["annotations"]
    assert rendered_text(SET) == text
    assert owner(text, "worker-images") == OURS
    # The annotation alone is the mark too (a tool that drops comments), whatever the file is called.
    assert owner(dump_yaml(marked(SET)), "another-name") == OURS


def test_an_unmarked_file_is_ours_only_with_the_exact_bytes_an_earlier_render_wrote_for_that_name():
    earlier = dump_yaml(SET)
    assert owner(earlier, "worker-images") == PREVIOUS
    assert owner(earlier.encode(), "worker-images") == PREVIOUS
    assert owner(earlier, "master-images") == FOREIGN
    assert owner(earlier.replace("spec:", "# mine\nspec:"), "worker-images") == FOREIGN
    assert owner(USER_MACHINE_CONFIG, "99-master-ssh") == FOREIGN
    # Even with the bytes a render would write, the caller's shape tells a user's object apart.
    canonical_user_file = dump_yaml(load_yaml(USER_MACHINE_CONFIG))
    assert owner(canonical_user_file, "99-master-ssh") == PREVIOUS
    assert (
        owner(canonical_user_file, "99-master-ssh", shape=lambda obj: "passwd" not in obj["spec"]["config"]) == FOREIGN
    )
    for text in ("keep: true\n", "", "[not yaml", "- a\n", "metadata: 1\n", "kind: MachineConfig\n"):
        assert owner(text, "keep") == FOREIGN, text
    assert owner(None, "worker-images") is None


def test_refuse_foreign_names_every_users_file_before_anything_is_written(tmp_path):
    ours = tmp_path / "worker-images.yaml"
    ours.write_text(rendered_text(SET))
    mine = tmp_path / "99-master-ssh.yaml"
    mine.write_text(USER_MACHINE_CONFIG)
    keep = tmp_path / "keep.yaml"
    keep.write_text("keep: true\n")
    refuse_foreign([(str(ours), "worker-images", None), (str(tmp_path / "absent.yaml"), "absent", None)])
    with pytest.raises(NotOursError) as info:
        refuse_foreign(
            [(str(ours), "worker-images", None), (str(mine), "99-master-ssh", None), (str(keep), "keep", None)]
        )
    assert info.value.problems == [
        f"{mine} is not ours (it has no pinned.images/rendered-by mark and is not a file an earlier render wrote)",
        f"{keep} is not ours (it has no pinned.images/rendered-by mark and is not a file an earlier render wrote)",
    ]
    assert info.value.message.endswith(
        "; nothing was written: move it away, or give it the mark to let the render replace it"
    )
    assert mine.read_text() == USER_MACHINE_CONFIG
