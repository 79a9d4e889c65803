# SPDX-License-Identifier: GPL-3.0-or-later
"""_yaml: libyaml's dumper writes the same bytes as the pure-Python one; the loaders are safe."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common import yaml_io as _yaml
from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import render_machine_config
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import render_pinned_images

DIGEST = "sha256:" + "ab" * 32


def _large_document() -> dict:
    """Every shape the collection writes: MachineConfigs, sets, odd scalars, unicode, a shared sub-object."""
    images = [f"registry.example.com:5000/team-{i % 7}/app-{i}@{DIGEST}" for i in range(2000)]
    shared = {"labels": {"pinned-images/role": "worker"}}
    odd = [
        "yes",
        "no",
        "on",
        "null",
        "~",
        "1.0",
        "0x1F",
        "012",
        "-",
        "a: b",
        "# not a comment",
        " lead",
        "trail ",
        "multi\nline\n",
        "tab\there",
        "quote'\"",
        "ünïcödé ✓",
        "",
        "*alias",
        "&anchor",
        "[x]",
        "{y}",
        "%z",
        "@w",
        "`v`",
        "2026-11-30",
        "1e3",
        ".inf",
        "=",
        "<<",
        "?q",
        "!t",
        "|",
        ">",
        "x" * 5000,
    ]
    return {
        "machineConfigs": [render_machine_config(f"pool-{i}", images[i * 100 : (i + 1) * 100]) for i in range(20)],
        "dropIn": render_pinned_images(images[:500]),
        "sets": [
            {"metadata": dict(shared, name=f"set-{i}"), "spec": {"pinnedImages": [{"name": n} for n in images]}}
            for i in range(3)
        ],
        "odd": odd,
        "numbers": [0, -1, 3.5, 1e100, True, False, None],
        "binaryish": base64.b64encode(bytes(range(256)) * 40).decode(),
        "nested": {"a": {"b": {"c": [[], {}, [{}], {"d": []}]}}},
    }


def test_libyaml_dumper_writes_the_pure_python_bytes():
    # The pinned PyYAML wheels carry libyaml; without it this test has nothing to compare.
    assert _yaml.yaml.__with_libyaml__, "PyYAML was built without libyaml"
    document = _large_document()
    fast = _yaml.dump_yaml(document)
    assert _yaml._FastDumper.__mro__[1] is _yaml.yaml.CSafeDumper
    assert len(fast) > 1_000_000
    assert fast == _yaml._dump_with(document, _yaml._PureDumper)


def test_dump_writes_no_anchors_and_round_trips():
    shared = {"k": "v"}
    text = _yaml.dump_yaml({"a": shared, "b": shared})
    assert "&" not in text and "*" not in text
    assert _yaml.load_yaml(text) == {"a": {"k": "v"}, "b": {"k": "v"}}


def test_loaders_are_safe():
    with pytest.raises(_yaml.YAMLError):
        _yaml.load_yaml("!!python/object/apply:os.system ['true']")
    assert _yaml.load_yaml_all("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
