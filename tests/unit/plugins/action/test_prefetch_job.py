# SPDX-License-Identifier: GPL-3.0-or-later
"""prefetch_job: follows a job through its result file and the progress file, with the node's commands scripted."""

from __future__ import annotations

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


def progress(done: int, run_id: str = "run-1") -> str:
    return json.dumps(dict(run_id=run_id, total=4, done=done, bytes=3 * 1073741824 // 2, elapsed=7.9))


class Node:
    """Answers ``cat`` of the job's result file with the scripted statuses (dicts as JSON, text as it is, None as a
    missing file) and of the progress file with the scripted texts, in order; ``rm -f`` succeeds."""

    def __init__(self, statuses, reads):
        self.statuses = list(statuses)
        self.reads = list(reads)
        self.commands = []

    def __call__(self, cmd, sudoable=True, **kwargs):
        self.commands.append(cmd)
        verb, path = cmd.split(" ", 1) if not cmd.startswith("rm -f ") else ("rm", cmd[len("rm -f ") :])
        if verb == "rm":
            return dict(rc=0, stdout="", stderr="")
        text = self.reads.pop(0) if path == "/p.json" else self.statuses.pop(0)
        if text is None:
            return dict(rc=1, stdout="", stderr="cat: no such file")
        return dict(rc=0, stdout=text if isinstance(text, str) else json.dumps(text), stderr="")


def follow(prefetch_job, node: Node, **args):
    task = importlib.import_module("ansible.playbook.task").Task()
    task.args = dict(dict(jid="j1", progress_file="/p.json", run_id="run-1", interval=0.01, poll=0.01), **args)
    action = prefetch_job.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None
    )
    action._low_level_execute_command = node  # pylint: disable=protected-access
    action._remote_expand_user = lambda path: path.replace("~", "/root")  # pylint: disable=protected-access
    action.get_shell_option = lambda name, default=None: default
    shown = []
    with mock.patch.object(prefetch_job.display, "display", shown.append):
        result = action.run(task_vars={"inventory_hostname": "w-1"})
    return result, shown


def test_progress_line(prefetch_job):
    assert (
        prefetch_job.progress_line(dict(done=2, total=4, bytes=1073741824 // 4, elapsed=3.6))
        == "2/4 images, 0.250 GiB, 3 s elapsed"
    )
    held = dict(waiting=[dict(image="i", since=1.0, latency_ms=35.25)], last_ms=30.0, samples=12)
    assert (
        prefetch_job.progress_line(dict(done=2, total=4, bytes=0, elapsed=9, pace=held))
        == "2/4 images, 0.000 GiB, 9 s elapsed, waiting for the disk (35.2 ms)"
    )
    assert (
        prefetch_job.progress_line(dict(done=2, total=4, bytes=0, elapsed=9, pace=dict(waiting=[])))
        == "2/4 images, 0.000 GiB, 9 s elapsed"
    )
    pulling = dict(done=0, total=1, bytes=0, elapsed=35.2, current=["a"], image_fs_growth=3 * 1073741824 // 2)
    assert prefetch_job.progress_line(pulling) == (
        "0/1 images, 0.000 GiB, 35 s elapsed, 1 pulling, image filesystem +1.500 GiB"
    )
    # No image filesystem read: the count alone.
    assert prefetch_job.progress_line(dict(done=0, total=2, bytes=0, elapsed=1, current=["a", "b"])) == (
        "0/2 images, 0.000 GiB, 1 s elapsed, 2 pulling"
    )


def test_follows_until_the_job_ends_prints_changes_once_and_cleans_up(prefetch_job, monkeypatch):
    monkeypatch.setattr(prefetch_job.time, "sleep", lambda seconds: None)
    ticks = iter(range(100))
    monkeypatch.setattr(prefetch_job.time, "monotonic", lambda: next(ticks))
    running = dict(started=1, finished=0, ansible_job_id="j1", results_file="/root/.ansible_async/j1")
    # The async wrapper replaces its first record by the module's own result when the job ends.
    done = dict(changed=True, totals={"pulled": 4}, images=[], invocation={"module_args": {}})
    node = Node([running, "", running, done], [progress(1), progress(1), progress(3, run_id="other")])
    result, shown = follow(prefetch_job, node)
    assert shown == ["w-1: 1/4 images, 1.500 GiB, 7 s elapsed"]
    assert result["totals"] == {"pulled": 4} and result["changed"] is True
    assert not {"finished", "started", "ansible_job_id", "results_file", "invocation"} & set(result)
    assert (result["status_checks"], result["progress_reads"]) == (4, 3)
    assert node.commands[0] == "cat /root/.ansible_async/j1"
    assert node.commands[-1] == "rm -f /root/.ansible_async/j1"


def test_the_results_file_the_start_returned_is_read_and_removed(prefetch_job):
    node = Node([dict(changed=False, totals={"pulled": 0}, images=[])], [])
    result, _shown = follow(prefetch_job, node, results_file="/home/other/.ansible_async/j1")
    assert result["totals"] == {"pulled": 0}
    assert node.commands == ["cat /home/other/.ansible_async/j1", "rm -f /home/other/.ansible_async/j1"]


def test_a_failed_job_is_the_result(prefetch_job):
    failed = dict(failed=True, msg="could not connect")
    result, _shown = follow(prefetch_job, Node([failed], []))
    assert result["failed"] and result["msg"] == "could not connect"


@pytest.mark.parametrize(
    "status, message", [(None, "could not find job j1"), ("{not json", "could not parse the result of job j1")]
)
def test_an_unknown_or_unreadable_job_is_reported_without_cleanup(prefetch_job, status, message):
    node = Node([status], [])
    result, _shown = follow(prefetch_job, node)
    assert result["failed"] and result["msg"].startswith(message)
    assert not [cmd for cmd in node.commands if cmd.startswith("rm")]


def test_a_job_that_outlasts_the_timeout_fails_and_is_not_cleaned_up(prefetch_job, monkeypatch):
    monkeypatch.setattr(prefetch_job.time, "sleep", lambda seconds: None)
    node = Node([dict(started=1, finished=0)] * 50, [progress(0)] * 50)
    ticks = iter(range(0, 1000, 10))
    monkeypatch.setattr(prefetch_job.time, "monotonic", lambda: next(ticks))
    with pytest.raises(Exception, match="did not end within 25 s") as info:
        follow(prefetch_job, node, timeout=25)
    assert type(info.value).__name__ == "AnsibleActionFail"
    assert not [cmd for cmd in node.commands if cmd.startswith("rm")]


def shown_text(message) -> str:
    """The text the user is shown for a result's warning or deprecation: ansible-core 2.19 decodes them into
    summaries whose event carries the message, earlier releases keep the strings."""
    event = getattr(message, "event", None)
    return event.msg if event is not None else message


def module_output(result: dict) -> str:
    """A module's result as an ansible-core 2.19 module writes it (its summaries tagged with their types)."""
    encoder = importlib.import_module("ansible.module_utils.common.json")
    return json.dumps(result, cls=encoder.get_module_encoder("legacy", encoder.Direction.MODULE_TO_CONTROLLER))


# How a module of the running ansible-core writes its warnings and deprecations: 2.19 tags summaries with their
# types, earlier releases write plain strings and dicts.
SUMMARIES = ansible_internal is not None


@pytest.mark.parametrize(
    "summary",
    [True, False] if SUMMARIES else [False],
    ids=["2.19-summary", "plain-string"] if SUMMARIES else ["plain-string"],
)
def test_the_job_result_warnings_reach_the_user_as_their_text(prefetch_job, summary):
    text = "label pins need containerd 1.7"
    if summary:
        messages = importlib.import_module("ansible.module_utils._internal._messages")
        output = module_output(dict(changed=False, warnings=[messages.WarningSummary(event=messages.Event(msg=text))]))
        assert '"__ansible_type": "WarningSummary"' in output
    else:
        output = json.dumps(dict(changed=False, warnings=[text]))
    result, _shown = follow(prefetch_job, Node([output], []))
    assert [shown_text(item) for item in result["warnings"]] == [text]
    assert "_ansible_parsed" not in result and "failed" not in result


def test_the_job_result_deprecations_reach_the_user_as_their_text(prefetch_job):
    if SUMMARIES:
        messages = importlib.import_module("ansible.module_utils._internal._messages")
        deprecation = messages.DeprecationSummary(event=messages.Event(msg="old option"), version="2.0.0")
        output = module_output(dict(changed=False, deprecations=[deprecation]))
    else:
        output = json.dumps(dict(changed=False, deprecations=[dict(msg="old option", version="2.0.0")]))
    result, _shown = follow(prefetch_job, Node([output], []))
    assert [shown_text(item) if SUMMARIES else item["msg"] for item in result["deprecations"]] == ["old option"]
