# SPDX-License-Identifier: GPL-3.0-or-later
"""Nodes whose Python has no grpcio/protobuf: the prefetch playbook provides them from the controller's wheelhouse.

Each test gets its own lab node whose `ansible_python_interpreter` is a system interpreter without grpc: Debian's
`/usr/bin/python3`, and a CPython 3.9 (RHCOS 9's version) found by support/pythons.py (`$PINNED_IMAGES_TEST_PY39`,
PATH, `pyenv root`). The private directory and the wheelhouse are under pytest's temp dir (role variables).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.ansible_runs import adhoc, playbook
from support.pythons import find_python

pytestmark = pytest.mark.lab

SYSTEM_PYTHON = "/usr/bin/python3"
# No package index: pip fails at once instead of reaching one.
NO_INDEX = dict(
    PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_NO_INDEX="1", PIP_FIND_LINKS=""
)


def imports_grpc(python: str) -> bool:
    return subprocess.run([python, "-c", "import grpc"], capture_output=True, check=False).returncode == 0


def site_listing(python: str) -> list:
    """Every path (and size) under the interpreter's system site directories."""
    script = "import site, sys; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()]))"
    dirs = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    listing = []
    for directory in dirs:
        for root, _subdirs, files in os.walk(directory):
            listing += [(os.path.join(root, name), os.lstat(os.path.join(root, name)).st_size) for name in files]
    return sorted(listing)


class Node:
    """One lab node for one interpreter, its inventory, private directory and images."""

    def __init__(self, lab, tmp: Path, name: str, python: str, wheelhouse: Path, images: int = 2):
        self.lab, self.tmp, self.name, self.python = lab, tmp, name, python
        if name not in lab.state["nodes"]:
            lab.add_node(name)
        self.private = tmp / "python"
        self.wheelhouse = wheelhouse
        self.images = [record.reference for record in lab.push_bulk(images, prefix=f"deps-{name}")]
        inventory = lab.inventory(python)
        workers = inventory["all"]["children"]["workers"]["hosts"]
        inventory["all"]["children"] = {
            "control_plane": {"hosts": {}},
            "workers": {
                "hosts": {
                    name: dict(
                        workers[name],
                        node_images=self.images,
                        node_progress_interval=1,
                        node_python_deps_dir=str(self.private),
                        node_wheelhouse=str(wheelhouse),
                    )
                }
            },
        }
        self.inventory = tmp / "inventory.yml"
        self.inventory.write_text(yaml.safe_dump(inventory))

    def playbook(self, name: str = "prefetch", extra: dict | None = None, env: dict | None = None):
        report = self.tmp / "report.json"
        report.unlink(missing_ok=True)
        proc = playbook(
            f"pinned.images.{name}", self.inventory, dict(cluster_report_file=str(report), **(extra or {})), env=env
        )
        output = proc.stdout + proc.stderr
        return proc.returncode, output, json.loads(report.read_text()) if report.exists() else None

    def site(self) -> Path:
        return next(self.private.glob("cp3*-*-*")) / "site"

    def node_images(self) -> set:
        with CriClient(self.lab.state["nodes"][self.name]["endpoint"]) as client:
            return {digest for image in client.list_images() for digest in image["repo_digests"]}


def recap(output: str, host: str) -> dict:
    for line in output.split("PLAY RECAP", 1)[1].splitlines():
        if line.startswith(host + " "):
            return {key: int(value) for key, value in (item.split("=") for item in line.split(":", 1)[1].split())}
    raise AssertionError(f"{host} not in the recap:\n{output}")


def run_and_rerun(node: Node) -> None:
    """First run provisions and pulls every image; the second copies nothing and changes nothing."""
    assert not imports_grpc(node.python), f"{node.python} already imports grpc: the test proves nothing"
    before = site_listing(node.python)

    rc, output, report = node.playbook()
    assert rc == 0, output
    (result,) = report["nodes"]
    assert result["status"] == "ok" and result["pulled"] == len(node.images), result
    assert set(node.images) <= node.node_images()
    assert "Copy the wheels" in output and "Unpack and check the wheels" in output
    manifest = json.loads((node.site().parent / "manifest.json").read_text())
    assert any(name.startswith("grpc/") for name in manifest["files"])
    assert oct(node.private.stat().st_mode & 0o777) == "0o700"

    rc, output, report = node.playbook()
    assert rc == 0, output
    (result,) = report["nodes"]
    assert result["status"] == "ok" and result["present"] == len(node.images) and result["pulled"] == 0, result
    # The node module's first call found the private copy intact: nothing was provided, copied or changed.
    assert "Copy the wheels" not in output and "Unpack and check the wheels" not in output
    assert recap(output, node.name)["changed"] == 0, output
    assert site_listing(node.python) == before


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """Filled by the first test on first need (the controller reaches the index)."""
    return tmp_path_factory.mktemp("wheelhouse")


def test_debian_python_gets_grpc_from_the_wheelhouse_and_the_rerun_changes_nothing(lab, tmp_path, wheelhouse):
    run_and_rerun(Node(lab, tmp_path, "deps-py311", SYSTEM_PYTHON, wheelhouse))
    assert [path.name for path in wheelhouse.iterdir() if path.is_dir()] == ["cp311-manylinux-x86_64"]


def test_python_3_9_node(lab, tmp_path, wheelhouse):
    python = find_python("3.9")
    if not python:
        pytest.skip("no CPython 3.9 here (set PINNED_IMAGES_TEST_PY39 or install one with pyenv)")
    run_and_rerun(Node(lab, tmp_path, "deps-py39", python, wheelhouse))


def test_air_gapped_node_step_uses_the_wheelhouse_filled_beforehand(lab, tmp_path):
    prefilled = tmp_path / "prefilled"
    node = Node(lab, tmp_path, "deps-air", SYSTEM_PYTHON, prefilled)
    fill = dict(wheelhouse_path=str(prefilled), wheelhouse_targets=["cp311-manylinux-x86_64"])
    rc, output, _report = node.playbook("wheelhouse", fill)
    assert rc == 0, output

    rc, output, report = node.playbook(env=NO_INDEX)
    assert rc == 0, output
    assert report["nodes"][0]["pulled"] == len(node.images)


def test_a_wheelhouse_without_the_nodes_tag_fails_before_any_pull(lab, tmp_path):
    empty = tmp_path / "empty"
    node = Node(lab, tmp_path, "deps-notag", SYSTEM_PYTHON, empty)
    (empty / "cp39-manylinux-x86_64").mkdir(parents=True)

    rc, output, report = node.playbook(env=NO_INDEX)
    assert rc != 0
    message = report["nodes"][0]["error"]
    for part in (
        "deps-notag",
        SYSTEM_PYTHON,
        "Python 3.11",
        "cp311-manylinux-x86_64",
        "node_wheelhouse",
        "pinned.images.wheelhouse",
    ):
        assert part in message, (part, message)
    assert not set(node.images) & node.node_images()
    assert not node.private.exists() or not any(node.private.glob("*/site"))


def test_a_changed_file_in_the_private_directory_is_detected_and_replaced(lab, tmp_path, wheelhouse):
    node = Node(lab, tmp_path, "deps-tamper", SYSTEM_PYTHON, wheelhouse)
    rc, output, _report = node.playbook()
    assert rc == 0, output
    target = node.site() / "grpc" / "__init__.py"
    original = target.read_bytes()
    target.write_bytes(original + b"\nraise SystemExit('tampered')\n")

    rc, output, report = node.playbook()
    assert rc == 0, output
    assert report["nodes"][0]["status"] == "ok"
    assert target.read_bytes() == original
    # The wheels were still there: they were not copied again, only unpacked anew.
    assert re.search(r"Unpack and check the wheels\] \**\nchanged: \[deps-tamper\]", output), output
    assert not re.search(r"Copy the wheels\] \**\nchanged", output), output


def test_check_mode_on_a_bare_node_provides_the_libraries_and_pulls_nothing(lab, tmp_path, wheelhouse):
    node = Node(lab, tmp_path, "deps-check", SYSTEM_PYTHON, wheelhouse)
    proc = playbook("pinned.images.prefetch", node.inventory, check=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    # The modules need them even to say what they would pull; the images and the runtime stay as they were.
    assert re.search(r'"deps-check\s+check\s+%d\s+0\s+0\s' % len(node.images), output), output
    assert (node.site().parent / "manifest.json").exists()
    assert not set(node.images) & node.node_images()


def test_the_node_deps_playbook_prepares_a_node_for_ad_hoc_runs_and_removes_the_directory(lab, tmp_path, wheelhouse):
    node = Node(lab, tmp_path, "deps-adhoc", SYSTEM_PYTHON, wheelhouse)
    rc, output, _report = node.playbook("node_deps")
    assert rc == 0, output
    assert f"{SYSTEM_PYTHON} uses {node.site()}" in output
    # Ad hoc, as docs/nodes.md shows it (with the local connection the module inherits this environment).
    rc, result, output = adhoc(
        "pinned.images.cri_image_info",
        dict(cri_socket=lab.state["nodes"][node.name]["endpoint"], images=node.images),
        timeout=300,
        hosts=node.name,
        inventory=node.inventory,
        env=dict(PINNED_IMAGES_PYTHON_DIR=str(node.private)),
    )
    assert rc == 0 and result["runtime"]["runtime_name"] == "containerd", output

    rc, output, _report = node.playbook("node_deps", dict(node_python_deps_state="absent"))
    assert rc == 0, output
    assert recap(output, node.name)["changed"] == 1
    assert not node.private.exists()
