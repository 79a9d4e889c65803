# SPDX-License-Identifier: GPL-3.0-or-later
"""The render entry point's filters as a layer: registered and documented, and paths taken against the directory
ansible-playbook was started in (the logic is tested in tests/unit/plugins/plugin_utils/test_render.py and
test_controller_paths.py)."""

from __future__ import annotations

from fixtures.filter_docs import filters_of, registration_problems

F = filters_of("render")


def test_every_filter_is_registered_and_documented():
    assert registration_problems("render") == []


def test_paths_are_those_of_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert F["controller_path"]("out/r.json") == str(tmp_path / "out" / "r.json")
    assert F["controller_path"]("") == ""
    report = F["render_report"]([{"created": [str(tmp_path / "out" / "a.yaml")]}], dest=str(tmp_path / "out"))
    assert (report["dest"], report["created"]) == ("out", ["out/a.yaml"])


def test_the_stale_files_are_those_the_render_tasks_did_not_write():
    found = {"files": [{"path": "/o/a.yaml"}, {"path": "/o/b.yaml"}, {"path": "/o/mc.yaml"}]}
    written = {"results": [{"path": "/o/a.yaml"}]}
    assert F["render_stale"](found, written, {"files": ["/o/mc.yaml"]}) == ["/o/b.yaml"]
    assert F["render_stale"](found) == ["/o/a.yaml", "/o/b.yaml", "/o/mc.yaml"]
    assert F["render_problem"]({"sets": []}, {"cluster_sets": []}, "/o", "yes") == ""


def test_the_users_files_are_left_and_named(tmp_path):
    mine = tmp_path / "machineconfigs" / "99-master-ssh.yaml"
    mine.parent.mkdir()
    mine.write_text("kind: MachineConfig\nmetadata: {name: 99-master-ssh}\n")
    found = {"files": [{"path": str(mine)}]}
    assert F["render_stale"](found) == [] and F["render_not_ours"](found) == [str(mine)]
