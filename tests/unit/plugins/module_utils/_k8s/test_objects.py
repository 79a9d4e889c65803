# SPDX-License-Identifier: GPL-3.0-or-later
"""_k8s/objects: label selectors as the API takes them, objects without the server's fields."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._k8s.objects import clean_object, selector_string


def test_selector_string():
    assert selector_string({"b": "2", "a": "1", "c": None}) == "a=1,b=2,c"
    assert selector_string("x=y") == "x=y"
    assert selector_string({}) is None


def test_clean_object_drops_what_the_server_maintains():
    live = {
        "metadata": {
            "name": "a",
            "uid": "1",
            "resourceVersion": "7",
            "managedFields": [{}],
            "generation": 2,
            "creationTimestamp": "t",
            "labels": {"x": "y"},
        },
        "spec": {"k": 1},
        "status": {"ok": True},
    }
    assert clean_object(live) == {
        "metadata": {"name": "a", "labels": {"x": "y"}},
        "spec": {"k": 1},
        "status": {"ok": True},
    }
    assert clean_object(live, drop_status=True) == {"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"k": 1}}
    assert live["metadata"]["uid"] == "1" and clean_object(None) is None
