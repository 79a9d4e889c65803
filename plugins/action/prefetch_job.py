# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""pinned.images.prefetch_job: follow a background prefetch, print its progress, return its result."""

from __future__ import annotations

import base64
import json
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

ARGUMENT_SPEC = dict(
    jid=dict(type="str", required=True),
    progress_file=dict(type="str", default=""),
    run_id=dict(type="str", default=""),
    interval=dict(type="float", default=10.0),
    poll=dict(type="float", default=0.5),
    timeout=dict(type="float", default=14400.0),
)
# Keys async_status adds to the job's own result.
_STATUS_KEYS = ("ansible_job_id", "started", "finished", "results_file", "stdout", "stderr", "stdout_lines",
                "stderr_lines", "invocation")


def progress_line(progress: dict) -> str:
    """``12/40 images, 0.035 GiB, 3 s elapsed`` for a progress file's content."""
    return "%d/%d images, %.3f GiB, %d s elapsed" % (
        progress["done"], progress["total"], progress.get("bytes", 0) / 1073741824, progress.get("elapsed", 0))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        for name in ("interval", "poll", "timeout"):
            if args[name] <= 0:
                raise AnsibleActionFail(f"{name} must be above 0, got {args[name]}")
        async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        status_args = dict(jid=args["jid"], _async_dir=async_dir)
        host = task_vars.get("inventory_hostname", "") if task_vars else ""
        started = time.monotonic()
        next_read = started + args["interval"]
        checks = reads = 0
        shown = ""
        try:
            while True:
                checks += 1
                status = self._execute_module("ansible.legacy.async_status", module_args=status_args,
                                              task_vars=task_vars)
                if "finished" not in status:
                    # async_status itself failed (no such job): its answer is the result.
                    break
                if status["finished"]:
                    self._execute_module("ansible.legacy.async_status",
                                         module_args=dict(status_args, mode="cleanup"), task_vars=task_vars)
                    break
                now = time.monotonic()
                if now - started > args["timeout"]:
                    raise AnsibleActionFail(f"the prefetch job {args['jid']} did not end within {args['timeout']:g} s")
                if args["progress_file"] and now >= next_read:
                    reads += 1
                    next_read = now + args["interval"]
                    line = self._read_progress(args, task_vars)
                    if line and line != shown:
                        display.display(f"{host}: {line}")
                        shown = line
                time.sleep(args["poll"])
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        for key in _STATUS_KEYS:
            status.pop(key, None)
        result.update(status)
        result.update(progress_reads=reads, status_checks=checks)
        return result

    def _read_progress(self, args: dict, task_vars) -> str:
        """The progress line of this run's file, empty while it has none (not written yet, or another run's)."""
        read = self._execute_module("ansible.legacy.slurp", module_args=dict(src=args["progress_file"]),
                                    task_vars=task_vars)
        try:
            progress = json.loads(base64.b64decode(read["content"]))
            if args["run_id"] and progress.get("run_id") != args["run_id"]:
                return ""
            return progress_line(progress)
        except (KeyError, TypeError, ValueError):
            return ""
