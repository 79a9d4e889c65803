# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""pinned.images.prefetch_job: follow a background prefetch, print its progress, return its result.

The job's result file and the progress file are read with one ``cat`` each (a command over the connection, not a
module run, so a check costs a round trip instead of starting Python on the node), and read as
``ansible.builtin.async_status`` reads the result file; the module's result in it is decoded as Ansible decodes a
module's output, so its warnings and deprecations reach the user as messages.
"""

from __future__ import annotations

import inspect
import json
import shlex
import time
import typing as t

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

ARGUMENT_SPEC = dict(
    jid=dict(type="str", required=True),
    results_file=dict(type="str", default=""),
    progress_file=dict(type="str", default=""),
    run_id=dict(type="str", default=""),
    interval=dict(type="float", default=10.0),
    poll=dict(type="float", default=0.25),
    timeout=dict(type="float", default=14400.0),
)
# Keys the async wrapper and async_status add to the job's own result.
_STATUS_KEYS = (
    "ansible_job_id",
    "started",
    "finished",
    "results_file",
    "stdout",
    "stderr",
    "stdout_lines",
    "stderr_lines",
    "invocation",
    "_ansible_suppress_tmpdir_delete",
)


def progress_line(progress: t.Mapping[str, t.Any]) -> str:
    """``12/40 images, 0.035 GiB, 3 s elapsed`` for a progress file's content; while pulls run, how much the image
    filesystem grew (``, 2 pulling, image filesystem +1.250 GiB``: a pull says nothing until its image is complete),
    and ``, waiting for the disk (35.2 ms)`` while the pace holds a pull back."""
    line = "%d/%d images, %.3f GiB, %d s elapsed" % (
        progress["done"],
        progress["total"],
        progress.get("bytes", 0) / 1073741824,
        progress.get("elapsed", 0),
    )
    pulling = len(progress.get("current") or [])
    if pulling:
        line += ", %d pulling" % pulling
        growth = progress.get("image_fs_growth")
        if isinstance(growth, int):
            line += ", image filesystem +%.3f GiB" % (growth / 1073741824)
    waiting = (progress.get("pace") or {}).get("waiting") or []
    if waiting:
        level = waiting[0].get("latency_ms")
        line += ", waiting for the disk" + (" (%.1f ms)" % level if isinstance(level, (int, float)) else "")
    return line


def job_status(text: t.Optional[str], jid: str, decode: t.Callable[[str], dict[str, t.Any]]) -> dict[str, t.Any]:
    """The job's status from its result file's text (None: no such file), decoded by ``decode`` (a module output
    parser that marks its result ``_ansible_parsed``), as async_status gives it: ``finished`` 0 while it runs, 1 with
    the module's result once it ended; a failure without ``finished`` when there is no such job or its file cannot be
    read."""
    if text is None:
        return dict(failed=True, msg=f"could not find job {jid}")
    if not text.strip():  # not written yet
        return dict(started=1, finished=0)
    data = decode(text)
    if not data.pop("_ansible_parsed", False):
        return dict(failed=True, msg=f"could not parse the result of job {jid}: {text[:200]!r}")
    if "started" not in data:  # the module's own result: the job ended
        data["finished"] = 1
    data.setdefault("finished", 0)
    return data


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp: t.Optional[str] = None, task_vars: t.Optional[dict[str, t.Any]] = None) -> dict[str, t.Any]:
        result: dict[str, t.Any] = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        for name in ("interval", "poll", "timeout"):
            if args[name] <= 0:
                raise AnsibleActionFail(f"{name} must be above 0, got {args[name]}")
        results_file = args["results_file"]
        if not results_file:
            # The async wrapper expands ~ with the node's HOME, this with the remote user's home directory: the
            # start's own results_file is the exact path where they differ.
            async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
            results_file = f"{async_dir.rstrip('/')}/{args['jid']}"
        host = task_vars.get("inventory_hostname", "") if task_vars else ""
        started = time.monotonic()
        next_read = started + args["interval"]
        checks = reads = 0
        shown = ""
        while True:
            checks += 1
            status = job_status(self._read(results_file), args["jid"], self._decode)
            if "finished" not in status:
                # No such job, or an unreadable result: that is the result.
                break
            if status["finished"]:
                self._low_level_execute_command("rm -f " + shlex.quote(results_file), sudoable=True)
                break
            now = time.monotonic()
            if now - started > args["timeout"]:
                raise AnsibleActionFail(f"the prefetch job {args['jid']} did not end within {args['timeout']:g} s")
            if args["progress_file"] and now >= next_read:
                reads += 1
                next_read = now + args["interval"]
                line = self._progress(args)
                if line and line != shown:
                    display.display(f"{host}: {line}")
                    shown = line
            time.sleep(args["poll"])
        for key in _STATUS_KEYS:
            status.pop(key, None)
        result.update(status)
        result.update(progress_reads=reads, status_checks=checks)
        return result

    def _decode(self, text: str) -> dict[str, t.Any]:
        """A module's output decoded as ``_execute_module`` decodes it: on ansible-core 2.19 and later with the
        ``legacy`` profile (async_status's, whose output is the result file's text), which turns the warnings and
        deprecations back into messages; before 2.19 the parser takes no profile."""
        res = dict(stdout=text, stderr="", rc=0)
        data: dict[str, t.Any]
        if "profile" in inspect.signature(self._parse_returned_data).parameters:
            data = self._parse_returned_data(res, "legacy")
        else:
            data = self._parse_returned_data(res)  # pylint: disable=no-value-for-parameter
        return data

    def _read(self, path: str) -> t.Optional[str]:
        """The text of a file on the node, None when it cannot be read."""
        out = self._low_level_execute_command("cat " + shlex.quote(path), sudoable=True)
        text: t.Optional[str] = out.get("stdout", "") if out.get("rc") == 0 else None
        return text

    def _progress(self, args: t.Mapping[str, t.Any]) -> str:
        """The progress line of this run's file, empty while it has none (not written yet, or another run's)."""
        try:
            progress = json.loads(self._read(args["progress_file"]) or "")
            if args["run_id"] and progress.get("run_id") != args["run_id"]:
                return ""
            return progress_line(progress)
        except (AttributeError, KeyError, TypeError, ValueError):
            return ""
