# SPDX-License-Identifier: GPL-3.0-or-later
"""_runs/outcome: the one ending of every module (result, warnings, secrets, failure; diff mode), through a real
AnsibleModule, and the pin modules on a node without grpcio, whose failure result once named ``changed`` twice."""

from __future__ import annotations

import pytest
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._node_python import deps
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome, end_module, hiding
from ansible_collections.pinned.images.plugins.modules import containerd_pinned_images, crio_pinned_images
from fixtures.image_refs import A
from fixtures.module_runner import patch_module_args, run_module

SECRET = "s3cret-t0ken"


class Ended(Exception):
    pass


def ending(run, args=None, diff=False):
    """(``exit`` or ``fail``, the fields) of ``end_module`` with ``run`` on a real AnsibleModule."""
    args = dict(args or {}, _ansible_diff=diff)
    with patch_module_args(args):
        module = AnsibleModule(argument_spec=dict(token=dict(type="str")), supports_check_mode=True)
    ended = []
    module.warnings_given = []
    module.warn = module.warnings_given.append

    def ender(kind):
        def end(**fields):
            ended.append((kind, fields))
            raise Ended()

        return end

    module.exit_json, module.fail_json = ender("exit"), ender("fail")
    with pytest.raises(Ended):
        end_module(module, run)
    return ended[0] + (module,)


def test_a_result_exits_with_its_warnings_and_without_its_diff_unless_asked():
    def run(invocation):
        return Outcome({"changed": True, "diff": {"after": "x"}}, ["careful"])

    kind, fields, module = ending(run)
    assert (kind, fields) == ("exit", {"changed": True})
    assert module.warnings_given == ["careful"]
    kind, fields, _module = ending(run, diff=True)
    assert fields == {"changed": True, "diff": {"after": "x"}}


def test_a_failure_gives_message_problems_and_details_over_the_result():
    error = CollectionError(["a", "b"], details={"changed": True, "path": "/x"})
    kind, fields, _module = ending(lambda invocation: Outcome({"changed": False, "images": []}, failure=error))
    assert kind == "fail"
    assert fields == dict(msg="2 problems found:\n- a\n- b", problems=["a", "b"], changed=True, path="/x", images=[])


def test_a_raised_error_fails_without_result_fields():
    def run(invocation):
        raise CollectionError("bad input", details={"error_kind": "invalid"})

    assert ending(run)[:2] == ("fail", dict(msg="bad input", problems=["bad input"], error_kind="invalid"))


def test_secrets_join_no_log_values_on_success_and_on_failure():
    def failing():
        raise CollectionError(f"denied with {SECRET}")

    for work in (failing, lambda: Outcome({"changed": False})):
        _kind, _fields, module = ending(lambda invocation, work=work: hiding([SECRET], work))
        assert SECRET in module.no_log_values


def test_the_invocation_gives_params_modes_and_run_command(tmp_path):
    seen = {}

    def run(invocation: Invocation) -> Outcome:
        seen.update(params=dict(invocation.params), check=invocation.check_mode, diff=invocation.diff)
        seen["missing"] = invocation.run_command(["no-such-program-here"])
        seen["true"] = invocation.run_command(["true"])[0]
        return Outcome()

    ending(run, {"token": "t", "_ansible_check_mode": True}, diff=True)
    assert seen["params"] == {"token": "t"} and seen["check"] and seen["diff"]
    assert seen["missing"] == (127, "", "no-such-program-here is not on the PATH")
    assert seen["true"] == 0


@pytest.mark.parametrize("module", [crio_pinned_images, containerd_pinned_images], ids=lambda m: m.__name__)
def test_the_pin_modules_without_grpcio_fail_with_one_changed(module, monkeypatch, tmp_path, capsys):
    # They crashed here once ("exit_json() got multiple values for keyword argument 'changed'").
    monkeypatch.setattr(deps, "HAS_NODE_DEPS", False)
    monkeypatch.setitem(deps.NODE_DEPS, "error", "cannot import grpc")
    monkeypatch.setenv(deps.ENV_DIR, str(tmp_path))
    args = dict(images=[A], cri_socket=str(tmp_path / "none.sock"))
    if module is crio_pinned_images:
        args["path"] = str(tmp_path / "50-pinned-images")
    result = run_module(module, args, capsys)
    assert result["rc"] == 1 and result["failed"], result
    assert result["node_deps_missing"] is True and result["changed"] is False
    assert "cannot import grpc" in result["msg"]
