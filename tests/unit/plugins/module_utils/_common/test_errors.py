# SPDX-License-Identifier: GPL-3.0-or-later
"""_common/errors: one root for every domain error."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import (
    CollectionError,
    join_problems,
)
from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLockError
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import MissingImagesError, ReloadError

MODULE_UTILS = Path(__file__).resolve().parents[5] / "plugins" / "module_utils"


def test_one_problem_is_the_message_several_are_counted():
    assert str(CollectionError("bad")) == "bad"
    error = CollectionError(["a", "b"])
    assert error.problems == ["a", "b"]
    assert str(error) == join_problems(["a", "b"]) == "2 problems found:\n- a\n- b"


def test_details_are_set_at_construction():
    missing = MissingImagesError(["quay.io/a@sha256:" + "a" * 64])
    assert missing.details == {"missing": missing.missing} and str(missing).startswith("refusing to pin 1 image(s)")
    assert NodeLockError("held").details == {"error_kind": "locked"}
    assert ReloadError("no systemctl", result={"changed": True}).result == {"changed": True}


def _exception_classes():
    for path in sorted(MODULE_UTILS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ClassDef)
                and node.name.endswith(("Error", "Refused", "Rejected"))
                and node.name != "CollectionError"
            ):
                yield str(path.relative_to(MODULE_UTILS)), node


@pytest.mark.parametrize("where, node", list(_exception_classes()), ids=lambda v: getattr(v, "name", v))
def test_every_domain_error_derives_from_the_root(where, node):
    """No error class on a builtin base: each derives from CollectionError or another collection error."""
    bases = [ast.unparse(b) for b in node.bases]
    assert not set(bases) & {"Exception", "ValueError", "RuntimeError", "OSError"}, f"{where}: {node.name}{bases}"
