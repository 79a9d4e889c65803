# SPDX-License-Identifier: GPL-3.0-or-later
"""Renamed variables of the node role: the former names still set the new ones, and the control plane pauses 1 s
between pulls only when it does not pace; the private Python directory is the host's, under the host root in pod
mode, unless given (no lab: the role's defaults only)."""

from __future__ import annotations

import json

import pytest

from fixtures.ansible_runs import ROOT, playbook

PLAY = """\
- hosts: localhost
  gather_facts: false
  connection: local
  vars_files: [{defaults}]
  tasks:
    - ansible.builtin.debug:
        msg: "SHOWN={{{{ {shown} | to_json }}}}"
"""


def shown(tmp_path, expression: str, extra_vars: dict):
    """The value of the Jinja ``expression`` over the node role's defaults and ``extra_vars``."""
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(defaults=ROOT / "roles" / "node" / "defaults" / "main.yml", shown=expression))
    proc = playbook(play, extra_vars=extra_vars, options=["-i", "localhost,"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    value = proc.stdout.split("SHOWN=", 1)[1].split("\n", 1)[0].rstrip('"')
    return json.loads(value.replace('\\"', '"'))


@pytest.mark.parametrize(
    "given,control_plane,expected",
    [
        ({}, True, 0.0),
        ({"node_control_plane_pace": False}, True, 1.0),
        ({}, False, 0.0),
        ({"node_control_plane_throttle": 0.3}, True, 0.3),
        ({"node_worker_throttle": 0.4}, False, 0.4),
        ({"node_throttle": 0.7}, False, 0.7),
        ({"node_control_plane_pull_pause": 0.2, "node_control_plane_throttle": 0.3}, True, 0.2),
        ({"node_pull_pause": 0.1, "node_throttle": 0.7}, True, 0.1),
    ],
)
def test_the_former_throttle_names_set_the_pull_pause(tmp_path, given, control_plane, expected):
    pause = shown(tmp_path, "{'pause': node_pull_pause | float}", dict(given, node_control_plane=control_plane))
    assert pause == {"pause": expected}


@pytest.mark.parametrize(
    "given,expected",
    [
        # SSH: the node's own directory, which the node modules also use without the variable.
        ({}, "/var/lib/pinned-images/python"),
        # Pod mode: the host's, seen under the host root, so the next run's pod finds the copy.
        ({"node_host_root": "/host"}, "/host/var/lib/pinned-images/python"),
        ({"node_host_root": "/host/"}, "/host/var/lib/pinned-images/python"),
        # A directory given is taken as it is, also in pod mode.
        ({"node_host_root": "/host", "node_python_deps_dir": "/opt/py"}, "/opt/py"),
    ],
)
def test_the_private_python_directory_is_the_hosts_unless_given(tmp_path, given, expected):
    python = shown(tmp_path, "{'dir': node_python_deps_dir, 'env': node_python_env}", given)
    assert python == {"dir": expected, "env": {"PINNED_IMAGES_PYTHON_DIR": expected}}
