# SPDX-License-Identifier: GPL-3.0-or-later
"""prefetch main(): bad input fails with a message naming the input, before the runtime is contacted.

The CRI socket given does not exist, so any test that reached the runtime would fail with a different message.
Pulls, the disk guard and check mode run against real containerd in tests/functional.
"""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._runs import prefetch as _prefetch_run
from ansible_collections.pinned.images.plugins.modules import prefetch as module
from fixtures.module_runner import run_module
from fixtures.scripted_runtime import ScriptedRuntime

DIGEST = "sha256:" + "c" * 64
GOOD = f"quay.io/org/app@{DIGEST}"


@pytest.mark.parametrize(
    "args, message",
    [
        (dict(concurrency=0), "concurrency must be at least 1, got 0"),
        (dict(retries=-1), "retries must be at least 0, got -1"),
        (dict(pull_pause=-1), "pull_pause must be at least 0, got -1.0"),
        (dict(pull_timeout=-5), "pull_timeout must be at least 0, got -5.0"),
        (dict(registry_timeout=0), "registry_timeout must be above 0, got 0.0"),
        (dict(cri_timeout=0), "cri_timeout must be above 0, got 0.0"),
        (dict(expansion_factor=-1), "expansion_factor must be above 0, got -1.0"),
        (dict(min_free="lots"), "size 'lots' is not understood"),
        (dict(platform="windows"), "windows"),
        (dict(images=["quay.io/org/app:latest", GOOD, "x y"]), "images[0]"),
        (dict(auth_file="/nonexistent/config.json"), "auth file /nonexistent/config.json does not exist"),
        (dict(registry_mirrors=[dict(prefix="quay.io")]), "location is unset"),
        (dict(pin="sometimes"), "value of pin must be one of: none, auto, dropin, label"),
        (dict(pin="auto", crio_reload="signal"), "crio_reload=signal needs crio_pid_file"),
        (dict(pin="label", settle_timeout=0), "settle_timeout must be above 0, got 0.0"),
    ],
)
def test_bad_input_fails_before_contacting_the_runtime(args, message, capsys, tmp_path):
    params = dict(dict(images=[GOOD], cri_socket=str(tmp_path / "no.sock")), **args)
    result = run_module(module, params, capsys)
    assert result["rc"] == 1
    assert message in result["msg"]
    assert "is crio or containerd running" not in result["msg"]


@pytest.mark.parametrize(
    "former, value, message",
    [
        ("throttle", -1, "pull_pause must be at least 0, got -1.0"),
        ("old_runtime", "sometimes", "value of old_containerd must be one of: fail, warn, got: sometimes"),
    ],
)
def test_the_former_names_throttle_and_old_runtime_still_work(former, value, message, capsys, tmp_path):
    result = run_module(module, {"images": [GOOD], "cri_socket": str(tmp_path / "no.sock"), former: value}, capsys)
    assert result["rc"] == 1 and message in result["msg"], result


def test_progress_file_directory_must_exist(capsys, tmp_path):
    params = dict(images=[GOOD], cri_socket=str(tmp_path / "no.sock"), progress_file=str(tmp_path / "x" / "p.json"))
    result = run_module(module, params, capsys)
    assert result["msg"] == f"progress_file: directory {tmp_path / 'x'} does not exist"


def test_invalid_images_are_all_listed(capsys, tmp_path):
    params = dict(images=["quay.io/org/app:latest", GOOD, "x y", ""], cri_socket=str(tmp_path / "no.sock"))
    result = run_module(module, params, capsys)
    assert "images[0]" in result["msg"] and "not pinned by digest" in result["msg"]
    assert "images[2]" in result["msg"] and "whitespace" in result["msg"]
    assert "images[3]" in result["msg"] and "empty" in result["msg"]
    assert "images[1]" not in result["msg"]


def test_missing_runtime_is_named(capsys, tmp_path):
    socket = str(tmp_path / "no.sock")
    result = run_module(module, dict(images=[GOOD], cri_socket=socket), capsys)
    assert result["msg"] == f"nothing is listening at {socket} (no such file): is crio or containerd running?"
    assert result["error_kind"] == "unavailable"


def test_unknown_registries_conf_keys_are_warned_about(capsys, tmp_path):
    conf = tmp_path / "registries.conf"
    conf.write_text('[[registry]]\nlocation = "quay.io"\nmirorr-by-digest-only = true\n')
    socket = str(tmp_path / "no.sock")
    result = run_module(module, dict(images=[GOOD], cri_socket=socket, registries_conf=str(conf)), capsys)
    assert result["msg"].startswith("nothing is listening at")
    assert any("unknown keys 'mirorr-by-digest-only' are ignored" in str(w) for w in result.get("warnings", []))


class CrioWithEveryImage(ScriptedRuntime):
    """CRI-O that has every image already: the prefetch goes straight to the pin."""

    runtime_name, runtime_version = "cri-o", "1.31.0"
    endpoint = "unix:///scripted.sock"
    image_fs = "/"

    @classmethod
    def from_options(cls, options):
        return cls()

    def image_fs_info(self):
        return [dict(mountpoint=self.image_fs)]

    def list_images(self):
        return []

    def image_status(self, image):
        return dict(id="sha256:1", repo_tags=[], repo_digests=[image], size=7, pinned=False)


def test_a_missing_systemctl_fails_the_pin_and_the_result_keeps_the_pulls_and_the_drop_in(
    capsys, tmp_path, monkeypatch
):
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(CrioWithEveryImage, "image_fs", str(tmp_path))
    monkeypatch.setattr(_prefetch_run, "cri_client", CrioWithEveryImage.from_options)
    dropin = tmp_path / "50-pinned-images"
    (tmp_path / "auth.json").write_text('{"auths": {}}')
    (tmp_path / "registries.conf").write_text("")
    params = dict(
        images=[GOOD],
        pin="dropin",
        crio_reload="systemd",
        dropin_path=str(dropin),
        auth_file=str(tmp_path / "auth.json"),
        registries_conf=str(tmp_path / "registries.conf"),
        lock_file=str(tmp_path / "lock"),
    )
    result = run_module(module, params, capsys)
    assert result["rc"] == 1 and "systemctl reload crio failed (rc=127)" in result["msg"]
    assert "systemctl is not on the PATH" in result["msg"]
    assert [image["status"] for image in result["images"]] == ["present"]
    pin = result["pin"]
    assert result["changed"] and pin["changed"] and not pin["reloaded"]
    assert pin["images"] == [GOOD] and pin["path"] == str(dropin) and GOOD in dropin.read_text()
