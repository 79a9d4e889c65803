# SPDX-License-Identifier: GPL-3.0-or-later
"""module_defaults with the collection's action groups reach every module of the group (meta/runtime.yml)."""

from __future__ import annotations

import json

import pytest
import yaml

from fixtures.ansible_runs import node_socket
from fixtures.ansible_runs import playbook as ansible_playbook
from fixtures.openshift_objects import pinned_image_set

IMAGE = "quay.io/example/app@sha256:" + "a" * 64


def run_play(tmp_path, module_defaults: dict, module: str, args: dict) -> dict:
    """Runs `module` in a play on localhost with `module_defaults`; returns its registered result."""
    out = tmp_path / "result.json"
    play = {
        "name": "action group",
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": module_defaults,
        "tasks": [
            {"name": "Run the module", module: args, "register": "result"},
            {
                "name": "Keep the result",
                "ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": str(out)},
            },
        ],
    }
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([play]))
    proc = ansible_playbook(playbook, "localhost,", options=["-c", "local"], timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return json.loads(out.read_text())


def test_k8s_group_sets_the_connection_of_every_cluster_module(fake_apiserver, tmp_path):
    fake_apiserver.add(pinned_image_set("group-set", [IMAGE]))
    result = run_play(
        tmp_path,
        {"group/pinned.images.k8s": {"host": fake_apiserver.url, "api_key": fake_apiserver.token}},
        "pinned.images.pinned_image_set_info",
        {"cluster": True},
    )
    assert [(s["name"], s["images"]) for s in result["sets"]] == [("group-set", [IMAGE])]


@pytest.mark.lab
def test_cri_group_sets_the_socket_of_every_node_module(lab, tmp_path):
    socket = node_socket(lab, "worker-0")
    result = run_play(tmp_path, {"group/pinned.images.cri": {"cri_socket": socket}}, "pinned.images.cri_image_info", {})
    assert result["runtime"]["runtime_name"] == "containerd"
    assert result["runtime"]["endpoint"] == socket.removeprefix("unix://")
