# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for functional tests: a real lab (docker-registry + containerd nodes) and real `ansible` runs.

The lab is started once per session by the fixture itself (hack/lab.py), under pytest's temp dir.
Modules run through `ansible` / `ansible-playbook` (AnsiballZ, local connection), as users run them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lab import Lab

from ansible_collections.pinned.images.plugins.module_utils._cri_client import CriClient

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
COLLECTIONS = ROOT / ".build" / "collections"


def pytest_collection_modifyitems(items):
    """Every test that uses the ``lab`` fixture, directly or through another fixture, carries the ``lab`` marker;
    modules that start labs of their own mark themselves."""
    for item in items:
        if "lab" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    lab = Lab(tmp_path_factory.mktemp("lab"))
    lab.up(nodes=4, control_plane=1)
    yield lab
    lab.down()


def ansible_env(**extra) -> dict:
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_HOST_KEY_CHECKING="False",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_RETRY_FILES_ENABLED="False",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        PATH=f"{VENV_BIN}:{env.get('PATH', '')}",
    )
    env.update(extra)
    return env


def adhoc(module: str, args: dict, check: bool = False, diff: bool = False, timeout: float = 600):
    """Run `ansible localhost -m <module>`; return (rc, result, stdout+stderr).

    The default callback prints `localhost | STATUS => {json}` for one host; the JSON is the module result.
    """
    command = [str(VENV_BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,",
               "-m", module, "-a", json.dumps(args)]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    proc = subprocess.run(command, env=ansible_env(), capture_output=True, text=True, timeout=timeout, check=False)
    _host, marker, payload = proc.stdout.partition(" => ")
    result = json.loads(payload) if marker else {}
    return proc.returncode, result, proc.stdout + proc.stderr


def node_socket(lab: Lab, name: str) -> str:
    return lab.status()["nodes"][name]["endpoint"]


def remove_all_images(socket: str) -> None:
    with CriClient(socket) as client:
        for image in client.list_images():
            client.remove_image(image["id"])
        assert client.list_images() == []


@pytest.fixture
def empty_node(lab):
    """A node with no images: worker-0, emptied through CRI RemoveImage."""
    socket = node_socket(lab, "worker-0")
    remove_all_images(socket)
    return socket
