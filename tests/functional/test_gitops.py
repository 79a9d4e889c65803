# SPDX-License-Identifier: GPL-3.0-or-later
"""The GitOps pipeline step of docs/gitops.md, taken out of the page and run verbatim (real ansible-galaxy and
ansible-playbook) with a fresh Git repository as the working directory; and relative paths of the render playbook,
its check mode and the ad-hoc module. No lab: the render reads and writes files only."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fixtures.ansible_runs import ROOT, VENV_BIN, adhoc, ansible_env, playbook, warnings_in
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import USER_MACHINE_CONFIG, pinned_image_set

DOC = ROOT / "docs" / "gitops.md"
REPORT = "pinned-images-report.json"
OUT = "cluster-config/pinned"
WORKER_MC = f"{OUT}/machineconfigs/99-worker-pinned-images.yaml"
MASTER_MC = f"{OUT}/machineconfigs/99-master-pinned-images.yaml"
WORKER_SET = f"{OUT}/pinnedimagesets/worker-images.yaml"
POLICY = f"{OUT}/machineconfigs/machineconfiguration-cluster-pinned-images.yaml"
A = "quay.io/org/app@sha256:" + "a" * 64
B = "quay.io/org/db@sha256:" + "b" * 64
C = "quay.io/org/cache@sha256:" + "c" * 64


def doc_block(marker: str) -> str:
    """The fenced block that follows `<!-- gitops: <marker> -->` in docs/gitops.md."""
    match = re.search(r"<!-- gitops: " + re.escape(marker) + r" -->\n```\w*\n(.*?)\n```", DOC.read_text(), re.S)
    assert match, f"no block marked {marker} in {DOC}"
    return match.group(1) + "\n"


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """A command line of docs/gitops.md, verbatim, through bash."""
    return subprocess.run(
        command,
        cwd=cwd,
        shell=True,
        executable="/bin/bash",
        env=ansible_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    """The collection built from this tree, as the repository would keep it."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(ROOT)],
        env=ansible_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("*.tar.gz")
    return built


@pytest.fixture
def repo(tmp_path, tarball) -> Path:
    """A fresh repository laid out as docs/gitops.md says, with the render's output committed."""
    repo = tmp_path / "cluster"
    (repo / "sets").mkdir(parents=True)
    (repo / "collections").mkdir()
    documents = [
        pinned_image_set("worker-images", [A, B], {ROLE: "worker"}),
        pinned_image_set("master-images", [A], {ROLE: "master"}),
    ]
    (repo / "sets" / "sets.yaml").write_text(yaml.safe_dump_all(documents))
    requirements = doc_block("requirements")
    (repo / "collections" / "requirements.yml").write_text(requirements)
    (source,) = yaml.safe_load(requirements)["collections"]
    (repo / source["name"]).parent.mkdir(parents=True)
    shutil.copy(tarball, repo / source["name"])
    (repo / ".gitignore").write_text(f".ansible/\n{REPORT}\n")
    git(repo, "init", "-q")
    # As the page says: the same line without --check writes the output, which is committed.
    first = run(pipeline_step().replace(" --check --diff", ""), repo)
    assert first.returncode == 0, first.stdout + first.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sets and their render")
    return repo


def pipeline_step() -> str:
    step = doc_block("pipeline-step")
    assert "--check --diff" in step
    return step


def check(repo: Path):
    """Run the documented step; (exit code, report, output)."""
    proc = run(pipeline_step(), repo)
    report_file = repo / REPORT
    report = json.loads(report_file.read_text()) if report_file.exists() else None
    return proc.returncode, report, proc.stdout + proc.stderr


def exactly(report: dict, created=(), changed=(), removed=()) -> bool:
    lists = {"created": list(created), "changed": list(changed), "removed": list(removed)}
    counts = {kind: len(paths) for kind, paths in lists.items()}
    return all(report[kind] == paths for kind, paths in lists.items()) and report["counts"] == counts


def restore(repo: Path) -> None:
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-qfd", "--", OUT, "sets")


def test_the_documented_step_passes_without_drift_and_lists_exactly_what_differs(repo):
    rc, report, output = check(repo)
    assert rc == 0, output
    assert report["status"] == "clean" and exactly(report) and report["error"] is None
    assert warnings_in(output) == [] and report["not_ours"] == []
    unchanged = {"master": ([], []), "worker": ([], [])}
    assert {p["pool"]: (p["added"], p["removed"]) for p in report["pools"]} == unchanged

    # One edited file: only that one is changed (the master file is byte-identical and is not listed).
    with open(repo / WORKER_MC, "a", encoding="utf-8") as handle:
        handle.write("# edited by hand\n")
    rc, report, output = check(repo)
    assert rc == 2, output
    assert report["status"] == "drift" and exactly(report, changed=[WORKER_MC])
    assert "1 changed, 0 created, 0 removed; changed: " + WORKER_MC in output
    assert MASTER_MC not in output.split("PLAY RECAP")[0].split("Fail on drift")[1]
    assert "# edited by hand" in output  # --diff shows it
    restore(repo)

    # The node disruption policy is part of the check: a hand edit of it (a reboot after all) is drift.
    policy = (repo / POLICY).read_text()
    assert "serviceName: crio.service" in policy and "type: Reload" in policy
    (repo / POLICY).write_text(policy.replace("Reload", "Reboot"))
    rc, report, output = check(repo)
    assert rc == 2 and report["status"] == "drift" and exactly(report, changed=[POLICY]), output
    restore(repo)

    (repo / MASTER_MC).unlink()
    rc, report, output = check(repo)
    assert rc == 2 and report["status"] == "drift" and exactly(report, created=[MASTER_MC]), output
    restore(repo)

    # A file the render wrote and no longer writes (it carries the mark) is drift; a user's file is left.
    stale = f"{OUT}/pinnedimagesets/old-images.yaml"
    (repo / stale).write_text((repo / WORKER_SET).read_text().replace("worker-images", "old-images"))
    stray = f"{OUT}/pinnedimagesets/stray.yml"
    (repo / stray).write_text("kind: PinnedImageSet\n")
    rc, report, output = check(repo)
    assert rc == 2 and report["status"] == "drift" and exactly(report, removed=[stale]), output
    assert report["not_ours"] == [stray] and f"not ours, left: {stray}" in output
    assert (repo / stale).exists()  # check mode removes nothing
    restore(repo)

    # A changed set: its file and its pool's MachineConfig change, with the images added and removed.
    documents = [
        pinned_image_set("worker-images", [A, C], {ROLE: "worker"}),
        pinned_image_set("master-images", [A], {ROLE: "master"}),
    ]
    (repo / "sets" / "sets.yaml").write_text(yaml.safe_dump_all(documents))
    rc, report, output = check(repo)
    assert rc == 2 and exactly(report, changed=[WORKER_MC, WORKER_SET]), output
    pools = {p["pool"]: p for p in report["pools"]}
    assert (pools["worker"]["added"], pools["worker"]["removed"]) == ([C], [B])
    assert (pools["master"]["added"], pools["master"]["removed"]) == ([], [])


def test_the_render_changes_only_its_own_files_and_leaves_the_users_in_both_folders(repo):
    mine = {
        f"{OUT}/machineconfigs/99-master-ssh.yaml": USER_MACHINE_CONFIG,
        f"{OUT}/machineconfigs/keep.yml": "keep: true\n",
        f"{OUT}/pinnedimagesets/99-master-ssh.yaml": USER_MACHINE_CONFIG,
        f"{OUT}/pinnedimagesets/keep.yml": "keep: true\n",
    }
    for path, text in mine.items():
        (repo / path).write_text(text)
    left = "not ours, left: " + ", ".join(sorted(mine))

    rc, report, output = check(repo)
    assert rc == 0, output
    assert report["status"] == "clean" and exactly(report) and report["not_ours"] == sorted(mine)
    assert f"{OUT} matches what the render writes: no drift; {left}" in output
    assert warnings_in(output) == []

    # Twice, for real and with --diff: the user's files stay byte for byte, and no diff shows them.
    step = pipeline_step().replace(" --check --diff", " --diff")
    for attempt in range(2):
        proc = run(step, repo)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, (attempt, output)
        assert {path: (repo / path).read_text() for path in mine} == mine
        assert left in output and not any(f"before: {repo / path}" in output for path in mine), output
        assert warnings_in(output) == []

    # A changed set removes a file the render wrote, never the user's.
    documents = [pinned_image_set("worker-images", [A, B], {ROLE: "worker"})]
    (repo / "sets" / "sets.yaml").write_text(yaml.safe_dump_all(documents))
    proc = run(pipeline_step().replace(" --check --diff", ""), repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((repo / REPORT).read_text())
    assert report["removed"] == [MASTER_MC, f"{OUT}/pinnedimagesets/master-images.yaml"]
    assert {path: (repo / path).read_text() for path in mine} == mine


def test_the_output_of_a_version_before_the_mark_is_taken_over_once_and_marked(repo):
    from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import HEADER
    from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import dump_yaml

    def unmarked(path: Path) -> str:
        obj = yaml.safe_load(path.read_text())
        del obj["metadata"]["annotations"]["pinned.images/rendered-by"]
        if not obj["metadata"]["annotations"]:
            del obj["metadata"]["annotations"]
        return dump_yaml(obj)

    # What the version before the mark left: the same objects, unmarked, and a pool's MachineConfig no set selects.
    rendered = sorted(p for p in (repo / OUT).rglob("*.yaml"))
    infra = repo / OUT / "machineconfigs" / "99-infra-pinned-images.yaml"
    infra.write_text((repo / WORKER_MC).read_text().replace("worker", "infra"))
    for path in [*rendered, infra]:
        path.write_text(unmarked(path))
    rc, report, output = check(repo)
    assert rc == 2, output
    relative = [str(p.relative_to(repo)) for p in rendered]
    assert exactly(report, changed=sorted(relative), removed=[str(infra.relative_to(repo))]), output
    assert report["not_ours"] == []

    proc = run(pipeline_step().replace(" --check --diff", ""), repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(p.read_text().startswith(HEADER) for p in rendered) and not infra.exists()
    rc, report, output = check(repo)
    assert rc == 0 and report["status"] == "clean", output


def test_an_invalid_set_fails_as_an_error_naming_its_file_not_as_drift(repo):
    bad = pinned_image_set("Bad_Name", ["quay.io/org/app:latest"], {ROLE: "worker"})
    (repo / "sets" / "bad.yaml").write_text(yaml.safe_dump(bad))
    rc, report, output = check(repo)
    assert rc == 2, output
    assert report["status"] == "error" and exactly(report) and report["pools"] == []
    problems = report["error"]["problems"]
    assert len(problems) == 2 and all(p.startswith(str(repo / "sets" / "bad.yaml")) for p in problems)
    assert any("RFC 1123" in p for p in problems) and any("tag reference" in p for p in problems)
    assert "differs from what the render writes" not in output


def test_relative_paths_give_the_same_files_from_the_playbook_its_check_and_the_ad_hoc_module(tmp_path, monkeypatch):
    (tmp_path / "sets").mkdir()
    documents = [
        pinned_image_set("worker-images", [A, B], {ROLE: "worker"}),
        pinned_image_set("master-images", [C], {ROLE: "master"}),
    ]
    (tmp_path / "sets" / "sets.yaml").write_text(yaml.safe_dump_all(documents))
    extra = {"cluster_sets": ["sets/"], "cluster_render_dest": "out", "cluster_render_report": "r.json"}

    rendered = playbook("pinned.images.render", extra_vars=extra, cwd=tmp_path, timeout=300)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    assert json.loads((tmp_path / "r.json").read_text())["created"] == [
        "out/machineconfigs/99-master-pinned-images.yaml",
        "out/machineconfigs/99-worker-pinned-images.yaml",
        "out/machineconfigs/machineconfiguration-cluster-pinned-images.yaml",
        "out/pinnedimagesets/master-images.yaml",
        "out/pinnedimagesets/worker-images.yaml",
    ]
    checked = playbook("pinned.images.render", extra_vars=extra, check=True, cwd=tmp_path, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "clean"

    monkeypatch.chdir(tmp_path)
    rc, result, output = adhoc(
        "pinned.images.machine_config", {"sets": ["sets/"], "pools": ["master", "worker"], "dest": "adhoc"}
    )
    assert rc == 0, output
    names = (
        "99-master-pinned-images.yaml",
        "99-worker-pinned-images.yaml",
        "machineconfiguration-cluster-pinned-images.yaml",
    )
    assert sorted(result["file_changes"]["created"]) == [str(tmp_path / "adhoc" / name) for name in names]
    for name in names:
        assert (tmp_path / "adhoc" / name).read_bytes() == (tmp_path / "out" / "machineconfigs" / name).read_bytes()

    missing = playbook(
        "pinned.images.render",
        extra_vars={"cluster_sets": ["nope/"], "cluster_render_dest": "out"},
        cwd=tmp_path,
        timeout=300,
    )
    assert missing.returncode == 2
    assert f"nope/: no such file or directory (resolved against {tmp_path}" in missing.stdout + missing.stderr
