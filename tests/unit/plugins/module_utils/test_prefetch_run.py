# SPDX-License-Identifier: GPL-3.0-or-later
"""_prefetch_run: the checks before the runtime, and one whole run against a scripted runtime.

Pulls through real containerd, the estimate against a real registry and a full tmpfs are in tests/functional.
"""

from __future__ import annotations

import pytest

from fixtures.scripted_runtime import ScriptedRuntime

from ansible_collections.pinned.images.plugins.module_utils._errors import LOCKED, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._node_lock import NodeLock, NodeLockError
from ansible_collections.pinned.images.plugins.module_utils._prefetch_run import (
    DiskGuardRefused,
    PrefetchRequest,
    run_prefetch,
)

DIGEST = "sha256:" + "d" * 64
PRESENT = f"registry.example:5000/present@{DIGEST}"
MISSING = f"registry.example:5000/missing@{DIGEST}"


def params(tmp_path, **overrides):
    """The module's parameters, with an empty auth file and registries.conf of the test's own."""
    (tmp_path / "auth.json").write_text('{"auths": {}}')
    (tmp_path / "registries.conf").write_text("")
    base = dict(
        images=[PRESENT, MISSING], require_digest=True, concurrency=2, throttle=0.0, retries=0, retry_delay=0.0,
        retry_max_delay=0.0, pull_timeout=0.0, fail_on_error=True, disk_guard="free_only", min_free="0",
        expansion_factor=2.0, image_store_path=None, platform=None, progress_file=None, lock_file=None, run_id="r1",
        auth_file=str(tmp_path / "auth.json"), registries_conf=str(tmp_path / "registries.conf"), registry_mirrors=[],
        registry_certs_dirs=[], registry_timeout=5.0, cri_socket=None, cri_connect_timeout=1.0, cri_timeout=1.0,
    )
    base.update(overrides)
    return base


class Runtime(ScriptedRuntime):
    """The CRI calls run_prefetch makes; the image filesystem is ``image_fs``."""

    endpoint = "unix:///scripted.sock"

    def __init__(self, image_fs):
        self.image_fs = image_fs
        self.pulled = []

    def image_fs_info(self):
        return [dict(mountpoint=self.image_fs)]

    def list_images(self):
        return [dict(id="sha256:1", repo_tags=[], repo_digests=[PRESENT], size=1, pinned=False)]

    def image_status(self, image):
        return dict(id=image, repo_tags=[], repo_digests=[], size=7, pinned=False) if image != MISSING else None

    def pull_image(self, image, auth=None, timeout=None):
        self.pulled.append(image)
        return "sha256:pulled"


def test_every_option_is_checked_before_the_runtime(tmp_path):
    with pytest.raises(CollectionError, match="concurrency must be at least 1, got 0"):
        PrefetchRequest.from_params(params(tmp_path, concurrency=0), False)
    with pytest.raises(CollectionError) as info:
        PrefetchRequest.from_params(params(tmp_path, images=["x y", "a:latest"]), False)
    assert [p.split(":")[0] for p in info.value.problems] == ["images[0]", "images[1]"]


def test_a_run_reads_the_image_filesystem_once_and_pulls_the_missing_image(tmp_path):
    runtime = Runtime(str(tmp_path))
    request = PrefetchRequest.from_params(params(tmp_path), False)
    outcome = run_prefetch(request, params(tmp_path), diff=True, client_factory=lambda _params: runtime)
    assert runtime.pulled == [MISSING]
    assert [i["status"] for i in outcome.result["images"]] == ["present", "pulled"]
    assert outcome.result["changed"] and outcome.failure is None
    assert outcome.result["disk_guard"]["filesystem"] == str(tmp_path)
    assert outcome.result["diff"]["after"] == "".join(sorted(f"{i}\n" for i in (PRESENT, MISSING)))


def test_the_disk_guard_refuses_before_any_pull(tmp_path):
    runtime = Runtime(str(tmp_path))
    request = PrefetchRequest.from_params(params(tmp_path, min_free="100%"), False)
    with pytest.raises(DiskGuardRefused) as info:
        run_prefetch(request, params(tmp_path, min_free="100%"), client_factory=lambda _params: runtime)
    assert runtime.pulled == [] and info.value.details["disk_guard"]["ok"] is False


def test_a_held_lock_fails_with_the_locked_kind(tmp_path):
    lock_file = str(tmp_path / "prefetch.lock")
    held = NodeLock(lock_file, "other").acquire()
    try:
        request = PrefetchRequest.from_params(params(tmp_path, lock_file=lock_file), False)
        with pytest.raises(NodeLockError) as info:
            run_prefetch(request, params(tmp_path, lock_file=lock_file), client_factory=lambda _p: Runtime("/"))
        assert info.value.details == {"error_kind": LOCKED}
    finally:
        held.release()
