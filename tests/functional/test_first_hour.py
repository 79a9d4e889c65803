# SPDX-License-Identifier: GPL-3.0-or-later
"""A new user's first hour, as issue 34 tried it: a fresh clone of this tree with no shared/ beside it (so no CRI-O
build: the control plane falls back to containerd 1.7), the README's first command (`bash hack/demo.sh`, which also
runs hack/setup.sh in the clone), the command the demo prints next run as printed, and a render into a GitOps
directory that holds the user's own files. The report's rows are checked against what each node's CRI reports.
The clone's lab is its own (`<clone>/.lab`) and is stopped at the end."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.ansible_runs import COLLECTIONS, ROOT, warnings_in

# The report table's row of a node: node, status, pulled, present, failed, bytes (number and unit), seconds, pinned.
ROW = re.compile(r"^\s*\"?((?:cp|worker)-\d)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+ \S+\s+[\d.]+\s+(.*?)\"?,?$", re.M)


def user_env() -> dict:
    """A login shell's environment: none of this session's project variables, nor its venv on PATH."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PINNED_IMAGES_", "ANSIBLE_", "VIRTUAL_ENV", "PYTEST_"))
    }
    env["PATH"] = ":".join(part for part in env.get("PATH", "").split(":") if "/.venv/" not in part + "/")
    return env


def cri_images(endpoint: str) -> dict:
    """Repo digest -> pinned, as the node's CRI ListImages reports it."""
    with CriClient(endpoint) as client:
        return {digest: image["pinned"] for image in client.list_images() for digest in image["repo_digests"]}


def next_command(demo_output: str) -> str:
    """The command the demo prints after "next:"."""
    lines = demo_output.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("next:")]
    assert starts, demo_output[-3000:]
    return lines[starts[-1] + 1].strip()


def lend_installs(clone: Path) -> None:
    """What hack/setup.sh would download and install again, lent from this tree as links: the virtual environments
    (same requirements, so setup.sh finds them current), the other Debian suites' unpacked packages and
    kubernetes.core. The clone's own files, paths and collections path stay its own. A setup from nothing adds
    minutes of downloads (apt, pip) and proves nothing more about the first hour."""
    build = clone / ".build"
    (build / "collections" / "ansible_collections").mkdir(parents=True)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    for name in ("venv-oldest-core", "trixie", "sid"):
        (build / name).symlink_to(ROOT / ".build" / name)
    (build / "collections" / "ansible_collections" / "kubernetes").symlink_to(
        COLLECTIONS / "ansible_collections" / "kubernetes"
    )


@pytest.fixture
def clone():
    """A fresh clone of this tree's HEAD, alone in a short directory (the lab's unix sockets are under the clone),
    removed with its lab afterwards."""
    top = Path(tempfile.mkdtemp(prefix="first-hour-"))
    path = top / "pinned.images"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(path)], check=True)
    assert not (path.parent / "shared").exists() and not (path / ".venv").exists()
    lend_installs(path)
    yield path
    subprocess.run(["bash", "hack/demo.sh", "down"], cwd=path, capture_output=True, check=False, timeout=300)
    shutil.rmtree(top)


def test_a_fresh_clone_runs_the_demo_then_the_printed_next_command_and_the_report_matches_cri(clone, tmp_path):
    home = tmp_path / "elsewhere"
    home.mkdir()
    env = user_env()
    demo = subprocess.run(
        ["bash", "hack/demo.sh"], cwd=clone, env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    output = demo.stdout + demo.stderr
    assert demo.returncode == 0, output[-6000:]
    assert warnings_in(output) == [], output[-6000:]
    lab = clone / ".lab"
    # Without a CRI-O build the demo says so, and its last lines name no drop-in (containerd pins with a label).
    assert "no CRI-O build in" in output and "control-plane nodes run containerd 1.7" in output
    tail = output[output.index("== per node") :]
    assert "CRI-O drop-ins" not in tail and not list(lab.glob("nodes/*/crio.conf.d/50-pinned-images"))
    page = re.search(r"report page .*: (\S+)$", tail, re.M).group(1)
    assert Path(page).is_file()
    # One sum of the nodes' times: the demo's line and the report's summary (the table's and the page's).
    report = json.loads((lab / "demo-report.json").read_text())
    assert f"add up to {report['summary']['node_seconds']:.1f} s" in tail

    command = next_command(output)
    assert command.split()[:2] == [
        "ANSIBLE_COLLECTIONS_PATH=" + shlex.quote(str(clone / ".build" / "collections")),
        shlex.quote(str(clone / ".venv" / "bin" / "ansible-playbook")),
    ]
    # As a user pastes it into a shell, from another directory.
    again = subprocess.run(
        ["bash", "-c", command], cwd=home, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert again.returncode == 0, again.stdout[-6000:] + again.stderr[-2000:]
    assert warnings_in(again.stdout + again.stderr) == [], again.stdout[-6000:] + again.stderr[-2000:]

    # The report of the second run, row by row, against each node's CRI: everything present, nothing pulled, every
    # wanted image pinned; the JSON report is this run's own file, the report file's name a link to it.
    report_link = lab / "demo-report.json"
    assert report_link.is_symlink() and len(list(lab.glob("demo-report-*.json"))) == 2
    report = json.loads(report_link.read_text())
    rows = {m[0]: m[1:] for m in ROW.findall(again.stdout)}
    state = json.loads((lab / "state.json").read_text())
    assert sorted(rows) == sorted(state["nodes"]) == sorted(node["host"] for node in report["nodes"]), again.stdout
    for node in report["nodes"]:
        wanted = [entry["image"] for entry in node["images"]]
        cri = cri_images(state["nodes"][node["host"]]["endpoint"])
        held = [image for image in wanted if image in cri]
        pinned = [image for image in wanted if cri.get(image)]
        status, pulled, present, failed, pin = rows[node["host"]]
        assert (status, int(pulled), int(present), int(failed)) == ("ok", 0, len(held), 0), node["host"]
        assert (node["present"], node["pulled"], node["failed"], node["pinned"]) == (len(held), 0, 0, len(pinned))
        assert pin == f"label {len(pinned)}" and len(pinned) == len(wanted) and not node["changed"], node["host"]
    assert re.search(r"^\s*\"?total \(6 nodes\)\s+6 ok\s+0\s+", again.stdout, re.M), again.stdout

    # The render into a GitOps directory that holds the user's own files: they are kept.
    gitops = home / "gitops"
    (gitops / "machineconfigs").mkdir(parents=True)
    (gitops / "pinnedimagesets").mkdir()
    own = {
        gitops / "machineconfigs" / "99-master-ssh.yaml": yaml.safe_dump(
            {
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfig",
                "metadata": {"name": "99-master-ssh", "labels": {"machineconfiguration.openshift.io/role": "master"}},
                "spec": {"config": {"ignition": {"version": "3.2.0"}}},
            }
        ),
        gitops / "pinnedimagesets" / "keep.yml": "# the user's notes\nkeep: true\n",
    }
    for path, text in own.items():
        path.write_text(text)
    # The printed command (collections path, ansible-playbook, the lab's inventory) with the render playbook. The
    # inventory matters: without one Ansible itself warns that it parsed none and that only localhost is there.
    sets = json.dumps({"cluster_sets": [str(lab / "demo-sets.yaml")], "cluster_render_dest": "gitops"})
    render = command.split(" pinned.images.prefetch ")[0] + " pinned.images.render -e " + shlex.quote(sets)
    rendered = subprocess.run(
        ["bash", "-c", render], cwd=home, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert rendered.returncode == 0, rendered.stdout[-4000:] + rendered.stderr[-2000:]
    assert warnings_in(rendered.stdout + rendered.stderr) == [], rendered.stdout[-4000:]
    # The user's files are kept as they were, and named as left.
    assert {path: path.read_text() for path in own} == own
    assert "not ours, left: " in rendered.stdout and "99-master-ssh.yaml" in rendered.stdout, rendered.stdout[-4000:]
    assert (gitops / "machineconfigs" / "99-master-pinned-images.yaml").is_file()
    assert (gitops / "machineconfigs" / "99-worker-pinned-images.yaml").is_file()
