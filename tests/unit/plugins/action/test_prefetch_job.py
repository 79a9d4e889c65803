# SPDX-License-Identifier: GPL-3.0-or-later
"""prefetch_job: follows a job through async_status and the progress file, with the node calls scripted."""

from __future__ import annotations

import base64
import importlib
import json
from unittest import mock

import pytest

try:
    from ansible.module_utils import _internal as ansible_internal
except ImportError:  # ansible-core < 2.19 has no controller mark
    ansible_internal = None


@pytest.fixture(name="prefetch_job")
def fixture_prefetch_job(monkeypatch):
    """The action plugin's module, imported here: importing controller code marks the process as the controller, and
    the module tests of the same run would then see their warnings displayed instead of returned. The mark is undone
    after each test."""
    if ansible_internal is not None:
        monkeypatch.setattr(ansible_internal, "is_controller", ansible_internal.is_controller)
    return importlib.import_module("ansible_collections.pinned.images.plugins.action.prefetch_job")


def progress(done: int, run_id: str = "run-1") -> dict:
    content = json.dumps(dict(run_id=run_id, total=4, done=done, bytes=3 * 1073741824 // 2, elapsed=7.9))
    return dict(content=base64.b64encode(content.encode()).decode())


class Node:
    """Answers async_status with the scripted statuses, slurp with the scripted progress files, in order."""

    def __init__(self, statuses, reads):
        self.statuses = list(statuses)
        self.reads = list(reads)
        self.calls = []

    def __call__(self, module_name, module_args=None, task_vars=None):
        self.calls.append((module_name, dict(module_args)))
        if module_name == "ansible.legacy.slurp":
            return self.reads.pop(0)
        if module_args.get("mode") == "cleanup":
            return dict(erased="x")
        return self.statuses.pop(0)


def follow(prefetch_job, node: Node, **args):
    task = importlib.import_module("ansible.playbook.task").Task()
    task.args = dict(dict(jid="j1", progress_file="/p.json", run_id="run-1", interval=0.01, poll=0.01), **args)
    action = prefetch_job.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                       shared_loader_obj=None)
    action._execute_module = node  # pylint: disable=protected-access
    action._remote_expand_user = lambda path: path  # pylint: disable=protected-access
    action.get_shell_option = lambda name, default=None: default
    action._remove_tmp_path = lambda path: None  # pylint: disable=protected-access
    shown = []
    with mock.patch.object(prefetch_job.display, "display", shown.append):
        result = action.run(task_vars={"inventory_hostname": "w-1"})
    return result, shown


def test_progress_line(prefetch_job):
    assert prefetch_job.progress_line(dict(done=2, total=4, bytes=1073741824 // 4, elapsed=3.6)) == \
        "2/4 images, 0.250 GiB, 3 s elapsed"


def test_follows_until_the_job_ends_prints_changes_once_and_cleans_up(prefetch_job, monkeypatch):
    monkeypatch.setattr(prefetch_job.time, "sleep", lambda seconds: None)
    ticks = iter(range(100))
    monkeypatch.setattr(prefetch_job.time, "monotonic", lambda: next(ticks))
    running = dict(started=1, finished=0, ansible_job_id="j1")
    done = dict(started=1, finished=1, ansible_job_id="j1", changed=True, totals={"pulled": 4}, images=[])
    node = Node([running, running, running, done], [progress(1), progress(1), progress(3, run_id="other")])
    result, shown = follow(prefetch_job, node)
    assert shown == ["w-1: 1/4 images, 1.500 GiB, 7 s elapsed"]
    assert result["totals"] == {"pulled": 4} and result["changed"] is True
    assert "finished" not in result and "ansible_job_id" not in result
    assert (result["status_checks"], result["progress_reads"]) == (4, 3)
    cleanup = dict(jid="j1", _async_dir="~/.ansible_async", mode="cleanup")
    assert node.calls[-1] == ("ansible.legacy.async_status", cleanup)


def test_a_failed_job_is_the_result(prefetch_job):
    failed = dict(started=1, finished=1, failed=True, msg="could not connect")
    result, _shown = follow(prefetch_job, Node([failed], []))
    assert result["failed"] and result["msg"] == "could not connect"


def test_an_unknown_job_is_reported_without_cleanup(prefetch_job):
    node = Node([dict(failed=True, msg="could not find job")], [])
    result, _shown = follow(prefetch_job, node)
    assert result["msg"] == "could not find job"
    assert [call for call in node.calls if call[1].get("mode") == "cleanup"] == []


def test_a_job_that_outlasts_the_timeout_fails_and_is_not_cleaned_up(prefetch_job, monkeypatch):
    monkeypatch.setattr(prefetch_job.time, "sleep", lambda seconds: None)
    node = Node([dict(started=1, finished=0)] * 50, [progress(0)] * 50)
    ticks = iter(range(0, 1000, 10))
    monkeypatch.setattr(prefetch_job.time, "monotonic", lambda: next(ticks))
    with pytest.raises(Exception, match="did not end within 25 s") as info:
        follow(prefetch_job, node, timeout=25)
    assert type(info.value).__name__ == "AnsibleActionFail"
    assert all(call[1].get("mode") != "cleanup" for call in node.calls)
