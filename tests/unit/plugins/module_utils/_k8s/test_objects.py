# SPDX-License-Identifier: GPL-3.0-or-later
"""_k8s/objects: label selectors as the API takes them, objects without the server's fields."""

from __future__ import annotations



from ansible_collections.pinned.images.plugins.module_utils._k8s.objects import selector_string


def test_selector_string():
    assert selector_string({"b": "2", "a": "1", "c": None}) == "a=1,b=2,c"
    assert selector_string("x=y") == "x=y"
    assert selector_string({}) is None
