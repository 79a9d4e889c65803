# SPDX-License-Identifier: GPL-3.0-or-later
"""The action base of the controller-side modules: relative paths resolved over the local connection only, a missing
input refused before the module runs; and every cluster module's action resolves the connection's path options."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from unittest import mock

import pytest
import yaml

from ansible_collections.pinned.images.plugins.plugin_utils._controller_paths import K8S_AUTH_PATH_OPTIONS

try:
    from ansible.module_utils import _internal as ansible_internal
except ImportError:  # ansible-core < 2.19 has no controller mark
    ansible_internal = None

PLUGINS = Path(__file__).resolve().parents[4] / "plugins"
PACKAGE = "ansible_collections.pinned.images.plugins"


@pytest.fixture(name="import_controller")
def fixture_import_controller(monkeypatch):
    """``importlib.import_module`` for controller code: importing it marks the process as the controller, and the
    module tests of the same run would then see their warnings displayed instead of returned; the mark is undone
    after each test."""
    if ansible_internal is not None:
        monkeypatch.setattr(ansible_internal, "is_controller", ansible_internal.is_controller)
    return importlib.import_module


def run(import_controller, transport, args):
    """The result of ``ControllerPathsAction`` (paths ``sets`` and ``dest``, input ``sets``) over ``transport``, and
    the arguments the module got (None: it did not run)."""
    base = import_controller(f"{PACKAGE}.plugin_utils._controller_paths_action").ControllerPathsAction
    action_class = type("ActionModule", (base,), {"PATH_OPTIONS": ("sets", "dest"), "INPUT_OPTIONS": ("sets",)})
    # The module's name, which ansible-core 2.19 would resolve through the plugin loader (2.17 keeps what is set).
    task_class = type(
        "Task", (import_controller("ansible.playbook.task").Task,), {"resolved_action": "pinned.images.x"}
    )
    task = task_class()
    task.args = args
    connection = mock.MagicMock(transport=transport)
    action = action_class(task, connection, mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    given = []

    def execute_module(module_name, module_args, task_vars):
        given.append(module_args)
        return {"changed": False}

    action._execute_module = execute_module  # pylint: disable=protected-access
    result = action.run(task_vars={})
    return result, given[0] if given else None


def test_relative_paths_resolve_against_the_working_directory_over_the_local_connection(
    import_controller, tmp_path, monkeypatch
):
    (tmp_path / "sets").mkdir()
    monkeypatch.chdir(tmp_path)
    args = {"sets": ["sets", "/abs"], "dest": "out", "name": "x"}
    result, given = run(import_controller, "ansible.builtin.local", args)
    assert not result.get("failed") and given == {
        "sets": [str(tmp_path / "sets"), "/abs"],
        "dest": str(tmp_path / "out"),
        "name": "x",
    }
    # Any other connection: the paths name files of the target, which the module resolves there.
    assert run(import_controller, "ssh", args)[1] == args


def test_a_missing_relative_input_fails_before_the_module_runs(import_controller, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result, given = run(import_controller, "local", {"sets": ["nope/"]})
    assert given is None and result["failed"] and not result["changed"]
    assert (
        result["msg"]
        == result["problems"][0]
        == (
            f"sets: nope/: no such file or directory (resolved against {tmp_path}, the directory ansible was started in)"
        )
    )


def _k8s_modules():
    """The modules whose documentation takes the Kubernetes connection options (the k8s_auth fragment)."""
    for path in sorted((PLUGINS / "modules").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
                fragments = yaml.safe_load(node.value.value).get("extends_documentation_fragment") or []
                if "pinned.images.k8s_auth" in fragments:
                    yield path.stem


def test_every_cluster_module_resolves_the_connections_path_options(import_controller):
    modules = list(_k8s_modules())
    assert {"machine_config", "pinned_image_set", "pinned_image_set_info", "pinned_image_status"} <= set(modules)
    for module in modules:
        action = import_controller(f"{PACKAGE}.action.{module}").ActionModule
        assert set(K8S_AUTH_PATH_OPTIONS) <= set(action.PATH_OPTIONS), module
