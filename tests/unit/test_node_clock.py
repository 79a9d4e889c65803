# SPDX-License-Identifier: GPL-3.0-or-later
"""The node role's start time is on the same clock as its finish (``time.time()``), whatever the controller's
time zone: ansible-core 2.17 and 2.19 give ``now(utc=true)`` naive, and ``.timestamp()`` reads it as local time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROLE_TASKS = Path(__file__).resolve().parents[2] / "roles" / "node" / "tasks" / "main.yml"
# The time zone's offset (an hour in winter, two in summer) is far beyond the seconds the command takes.
OFFSET_BOUND = 600


def _started_expression() -> str:
    tasks = yaml.safe_load(ROLE_TASKS.read_text(encoding="utf-8"))
    start = next(task for task in tasks if task.get("name") == "Start the run on this node")
    return str(start["ansible.builtin.set_fact"]["node_started"])


def test_node_started_is_the_epoch_on_a_controller_east_of_utc(tmp_path):
    ansible = Path(sys.executable).with_name("ansible")
    env = dict(
        os.environ,
        TZ="Europe/Berlin",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_LOCAL_TEMP=str(tmp_path),
        ANSIBLE_HOME=str(tmp_path),
    )
    before = time.time()
    out = subprocess.run(
        [str(ansible), "localhost", "-m", "ansible.builtin.debug", "-a", f"msg=started={_started_expression()}"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    after = time.time()
    started = float(out.split("started=", 1)[1].split('"', 1)[0])
    assert before - OFFSET_BOUND < started < after + OFFSET_BOUND, (before, started, after)
