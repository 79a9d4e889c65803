# SPDX-License-Identifier: GPL-3.0-or-later
"""prune main(): the checks before the runtime, a corrupt record, and check and diff mode through the module (the
decisions are in _prune/plan and _runs/prune's tests; real runtimes in tests/functional/test_prune_lab.py)."""

from __future__ import annotations

import json

from ansible_collections.pinned.images.plugins.module_utils._prune.record import noted, write_record
from ansible_collections.pinned.images.plugins.module_utils._runs import prune as prune_run
from ansible_collections.pinned.images.plugins.modules import prune as module
from fixtures.module_runner import run_module
from fixtures.scripted_runtime import ScriptedRuntime

WANTED = "quay.io/org/wanted@sha256:" + "a" * 64
DROPPED = "quay.io/org/dropped@sha256:" + "b" * 64


class Runtime(ScriptedRuntime):
    """containerd 1.7 holding WANTED and DROPPED (unpinned), no containers."""

    endpoint = "unix:///scripted.sock"
    runtime_name, runtime_version = "containerd", "1.7.24"
    removed: list = []

    def image_status(self, name):
        ids = {WANTED: "sha256:w", DROPPED: "sha256:d", "sha256:w": "sha256:w", "sha256:d": "sha256:d"}
        if name not in ids or ids[name] in self.removed:
            return None
        digest = WANTED if ids[name] == "sha256:w" else DROPPED
        return dict(id=ids[name], repo_tags=[], repo_digests=[digest], size=4096, pinned=False)

    def list_records(self):
        return []

    def status_info(self):
        return {"config": json.dumps(dict(sandboxImage="registry.k8s.io/pause:3.8"))}

    def list_containers(self):
        return []

    def remove_image(self, image_id):
        self.removed.append(image_id)


def args(tmp_path, **extra):
    return dict(dict(images=[WANTED], record_file=str(tmp_path / "record.json"), crio_reload="none"), **extra)


def test_an_empty_wanted_list_fails_naming_images(tmp_path, capsys):
    result = run_module(module, args(tmp_path, images=[]), capsys)
    assert result["rc"] == 1 and result["msg"].startswith("images is empty: the prune would remove every image")


def test_a_corrupt_record_fails_naming_the_file_before_the_runtime(tmp_path, capsys):
    record = tmp_path / "record.json"
    record.write_text("{")
    record.chmod(0o600)
    result = run_module(module, args(tmp_path), capsys)
    assert result["rc"] == 1 and result["msg"].startswith(f"the prune record {record} is not JSON")
    assert result["record_file"] == str(record)


def test_check_mode_reports_what_it_would_free_and_the_diff_and_removes_nothing(tmp_path, capsys, monkeypatch):
    write_record(str(tmp_path / "record.json"), noted({}, {}, [WANTED, DROPPED], [], "r0", 0.0))
    runtime = Runtime()
    runtime.removed = []
    monkeypatch.setattr(prune_run, "containerd_client", lambda _params: runtime)
    check = run_module(module, args(tmp_path), capsys, check_mode=True, diff=True)
    assert (check["rc"], check["changed"], check["removed"], check["freed_bytes"]) == (0, True, [DROPPED], 4096)
    assert check["diff"]["before"] == f"{DROPPED}\n" and check["diff"]["after"] == ""
    assert runtime.removed == [] and "record_changed" not in check
    done = run_module(module, args(tmp_path), capsys)
    assert (done["removed"], runtime.removed, done["record_changed"]) == ([DROPPED], ["sha256:d"], True)
    assert "diff" not in done
    assert list(json.loads((tmp_path / "record.json").read_text())["images"]) == [WANTED]
