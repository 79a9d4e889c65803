# SPDX-License-Identifier: GPL-3.0-or-later
"""Relative paths of controller-side tasks resolve against the controller's working directory."""

from __future__ import annotations

import yaml

from ansible_collections.pinned.images.plugins.doc_fragments.k8s_auth import ModuleDocFragment
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC
from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths import (
    K8S_AUTH_PATH_OPTIONS,
    resolve_options,
    resolve_path,
)


def test_relative_paths_join_the_base_and_others_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("PINNED_TEST_DIR", "/srv")
    base = str(tmp_path)
    assert resolve_path("sets/", base) == f"{base}/sets"
    assert resolve_path("./out/../out", base) == f"{base}/out"
    assert resolve_path("/abs/sets", base) == "/abs/sets"
    # The module expands these itself, on the same host.
    assert resolve_path("~/sets", base) == "~/sets"
    assert resolve_path("$PINNED_TEST_DIR/sets", base) == "$PINNED_TEST_DIR/sets"


def test_resolve_options_lists_strings_and_leaves_objects(tmp_path):
    (tmp_path / "sets").mkdir()
    base = str(tmp_path)
    obj = {"kind": "PinnedImageSet"}
    args = {"sets": ["sets", obj, "/abs"], "dest": "out", "name": "x", "kubeconfig": {"apiVersion": "v1"}}
    resolved, problems = resolve_options(args, ("sets", "dest", "kubeconfig", "ca_cert"), base, ("sets",))
    assert problems == []
    assert resolved == {
        "sets": [f"{base}/sets", obj, "/abs"],
        "dest": f"{base}/out",
        "name": "x",
        "kubeconfig": {"apiVersion": "v1"},
    }
    assert "ca_cert" not in resolved and args["dest"] == "out"


def test_a_missing_relative_input_names_the_given_path_and_the_directory(tmp_path):
    base = str(tmp_path)
    resolved, problems = resolve_options({"paths": ["nope/", "/abs/missing"]}, ("paths",), base, ("paths",))
    # The absolute one is left for the module, whose message names it already.
    assert problems == [
        f"paths: nope/: no such file or directory (resolved against {base}, the directory ansible was started in)"
    ]
    assert resolved["paths"] == [f"{base}/nope", "/abs/missing"]


def test_the_k8s_auth_path_options_are_those_of_the_argument_spec_and_the_doc_fragment():
    # The modules take these as paths (the kubeconfig: a path or a dict), each under its name and its aliases.
    from_spec = [
        name
        for option, spec in K8S_AUTH_ARG_SPEC.items()
        if spec["type"] in ("path", "raw")
        for name in (option, *spec.get("aliases", ()))
    ]
    # The fragment says of each that a relative path is resolved on the controller.
    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    from_doc = [
        name
        for option, doc in options.items()
        if any(line.startswith("A relative path given to the task is resolved") for line in doc["description"])
        for name in (option, *doc.get("aliases", ()))
    ]
    assert list(K8S_AUTH_PATH_OPTIONS) == from_spec == from_doc
