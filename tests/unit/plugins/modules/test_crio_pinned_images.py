# SPDX-License-Identifier: GPL-3.0-or-later
"""crio_pinned_images main(): options, presence check, check/diff mode, idempotence, errors that write nothing."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import tomllib
import yaml
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import dropin_pinned_images
from ansible_collections.pinned.images.plugins.module_utils._runs import crio_pinned_images as crio_run
from ansible_collections.pinned.images.plugins.modules import crio_pinned_images as module
from fixtures.module_runner import run_module
from fixtures.openshift_objects import MCO_API_VERSION as API
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set

A = "quay.io/org/a@sha256:" + "a" * 64
B = "quay.io/org/b@sha256:" + "b" * 64
C = "registry.example.com/c@sha256:" + "c" * 64
EXPECTED_AB = (
    '[crio]\n  [crio.image]\n    pinned_images = ["quay.io/org/a@sha256:'
    + "a" * 64
    + '", "quay.io/org/b@sha256:'
    + "b" * 64
    + '"]\n'
)


class FakeCriClient:
    """Stands in for CriClient: the presence check and the read-back only call image_status; an image is pinned when
    the drop-in of the module's run lists it (as if CRI-O had read it). The real CRI-O is in
    tests/functional/test_crio_lab.py."""

    present = set()
    error_message = None
    opened = 0
    asked = []
    # The drop-in the module's run writes (``run`` sets it).
    dropin = None

    def __init__(self, options):
        self.options = options

    @classmethod
    def from_options(cls, options):
        if cls.error_message:
            raise CriError(cls.error_message)
        return cls(options)

    def __enter__(self):
        type(self).opened += 1
        return self

    def __exit__(self, *exc):
        return False

    def image_status(self, image):
        type(self).asked.append(image)
        if image in self.present:
            pinned = image in (_listed(self.dropin) or [])
            return {"id": "sha256:1", "repo_tags": [], "repo_digests": [image], "size": 1, "pinned": pinned}
        return None


def _listed(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return dropin_pinned_images(handle.read())
    except FileNotFoundError:
        return None


@pytest.fixture
def cri(monkeypatch):
    FakeCriClient.present = {A, B, C}
    FakeCriClient.error_message = None
    FakeCriClient.opened = 0
    FakeCriClient.asked = []
    monkeypatch.setattr(crio_run, "cri_client", FakeCriClient.from_options)
    return FakeCriClient


@pytest.fixture
def systemctl(monkeypatch):
    calls = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/" + name

    def run_command(self, args, **kwargs):
        calls.append(args)
        return 0, "", ""

    monkeypatch.setattr(AnsibleModule, "get_bin_path", get_bin_path)
    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    return calls


def run(args, capsys, check_mode=False, diff=False):
    FakeCriClient.dropin = args.get("dropin_path", args.get("path"))
    return run_module(module, args, capsys, check_mode, diff)


def test_pins_and_reloads_then_is_idempotent(tmp_path, capsys, cri, systemctl):
    path = tmp_path / "50-pinned-images"
    result = run({"images": [B, A, B], "dropin_path": str(path)}, capsys, diff=True)
    assert result["rc"] == 0 and result["changed"] and result["reloaded"]
    assert result["images"] == [A, B] and result["path"] == str(path) and result["set_names"] == []
    assert path.read_text() == EXPECTED_AB
    assert result["diff"]["after"] == EXPECTED_AB and result["diff"]["before"] == ""
    assert systemctl == [["/usr/bin/systemctl", "reload", "crio"]]
    # The presence check, then CRI read back after the reload.
    assert cri.asked == [A, B, A, B] and result["cri_pinned"] == {A: True, B: True}

    cri.asked.clear()
    again = run({"images": [A, B], "dropin_path": str(path)}, capsys)
    assert again["rc"] == 0 and not again["changed"] and not again["reloaded"]
    # A rerun reads CRI once: the pins must still be what the file says.
    assert cri.opened == 2 and cri.asked == [A, B] and len(systemctl) == 1
    assert again["cri_pinned"] == {A: True, B: True}


def test_check_mode_writes_nothing_and_returns_a_diff(tmp_path, capsys, cri, systemctl):
    path = tmp_path / "50-pinned-images"
    result = run({"images": [A, B], "dropin_path": str(path)}, capsys, check_mode=True, diff=True)
    assert result["changed"] and not result["reloaded"]
    assert result["diff"]["after"] == EXPECTED_AB
    assert not path.exists() and systemctl == []


def test_missing_images_are_all_listed_and_nothing_is_written(tmp_path, capsys, cri, systemctl):
    cri.present = {A}
    path = tmp_path / "50-pinned-images"
    result = run({"images": [A, B, C], "dropin_path": str(path)}, capsys)
    assert result["rc"] == 1 and result["failed"]
    assert result["missing"] == [B, C]
    assert B in result["msg"] and C in result["msg"] and "force" in result["msg"]
    assert not path.exists() and systemctl == []

    forced = run({"images": [A, B, C], "dropin_path": str(path), "force": True, "crio_reload": "none"}, capsys)
    assert forced["changed"] and path.exists() and not forced["reloaded"]


def test_runtime_unreachable_is_a_clear_failure(tmp_path, capsys, cri):
    cri.error_message = "nothing is listening at /run/x.sock (no such file): is crio or containerd running?"
    result = run({"images": [A], "dropin_path": str(tmp_path / "f"), "crio_reload": "none"}, capsys)
    assert result["rc"] == 1 and "cannot read the images' state through CRI" in result["msg"]
    assert "/run/x.sock" in result["msg"]
    assert not (tmp_path / "f").exists()


def test_force_without_reload_writes_where_no_runtime_runs(tmp_path, capsys):
    """An image build or a node before CRI-O starts: no socket under host_root, the real client; the file is
    written, the read-back is skipped with a warning. Without force the presence check needs the runtime."""
    dropin = "/etc/crio/crio.conf.d/50-pinned-images"
    args = {"images": [A, B], "host_root": str(tmp_path), "dropin_path": dropin, "crio_reload": "none"}
    (tmp_path / "etc/crio/crio.conf.d").mkdir(parents=True)
    result = run_module(module, dict(args, force=True), capsys)
    assert result["rc"] == 0 and result["changed"], result
    assert (tmp_path / dropin.lstrip("/")).read_text() == EXPECTED_AB
    assert result["cri_pinned"] == {}
    warnings = str(result["warnings"])
    assert "no CRI socket found under host_root" in warnings and "written without reading the pins back" in warnings

    (tmp_path / dropin.lstrip("/")).unlink()
    refused = run_module(module, args, capsys)
    assert refused["rc"] == 1 and "no CRI socket found" in refused["msg"]
    assert not (tmp_path / dropin.lstrip("/")).exists()


def test_force_without_reload_still_fails_on_a_runtime_error_other_than_unreachable(tmp_path, capsys, monkeypatch):
    def denied(options):
        raise CriError("permission denied on /run/crio/crio.sock: run as root (become: true)", "permission")

    monkeypatch.setattr(crio_run, "cri_client", denied)
    result = run({"images": [A], "dropin_path": str(tmp_path / "f"), "force": True, "crio_reload": "none"}, capsys)
    assert result["rc"] == 1 and "permission denied" in result["msg"]
    assert not (tmp_path / "f").exists()


def test_bad_images_fail_with_every_problem(tmp_path, capsys, cri):
    path = tmp_path / "f"
    result = run({"images": [A, "quay.io/x:latest", "quay.io/y/*"], "dropin_path": str(path)}, capsys)
    assert result["rc"] == 1
    assert len(result["problems"]) == 2
    assert result["problems"][0].startswith("images[1]: ") and result["problems"][1].startswith("images[2]: ")
    assert not path.exists() and cri.opened == 0


def test_patterns_without_require_digest(tmp_path, capsys, cri):
    path = tmp_path / "f"
    result = run(
        {
            "images": ["quay.io/y/*", "*pause*", A],
            "require_digest": False,
            "dropin_path": str(path),
            "crio_reload": "none",
        },
        capsys,
    )
    assert result["rc"] == 0 and result["images"] == ["*pause*", A, "quay.io/y/*"]
    # Patterns name no image: neither checked for presence nor read back.
    assert cri.asked == [A, A] and result["cri_pinned"] == {A: True}


def write_sets(tmp_path, *docs):
    path = tmp_path / "sets.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_sets_union_and_pool_selection(tmp_path, capsys, cri):
    sets_file = write_sets(
        tmp_path, pinned_image_set("w", [B, A], {ROLE: "worker"}), pinned_image_set("m", [C], {ROLE: "master"})
    )
    path = tmp_path / "f"
    base = {"sets": [sets_file], "dropin_path": str(path), "crio_reload": "none"}
    everything = run(base, capsys, check_mode=True)
    assert everything["images"] == [A, B, C] and everything["set_names"] == ["w", "m"]
    worker = run(dict(base, pools=["worker"]), capsys, check_mode=True)
    assert worker["images"] == [A, B] and worker["set_names"] == ["w"]
    alias = run(dict(base, pool="master"), capsys, check_mode=True)
    assert alias["images"] == [C]
    node = run(
        dict(base, node_labels={"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}), capsys
    )
    assert node["images"] == [C] and node["set_names"] == ["m"]
    assert path.read_text() == '[crio]\n  [crio.image]\n    pinned_images = ["' + C + '"]\n'


def test_node_labels_with_pools_from_the_set_files(tmp_path, capsys, cri):
    infra = {
        "apiVersion": API,
        "kind": "MachineConfigPool",
        "metadata": {"name": "infra"},
        "spec": {
            "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/infra": ""}},
            "machineConfigSelector": {"matchLabels": {ROLE: "infra"}},
        },
    }
    sets_file = write_sets(
        tmp_path, infra, pinned_image_set("i", [A], {ROLE: "infra"}), pinned_image_set("w", [B], {ROLE: "worker"})
    )
    labels = {"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/worker": ""}
    result = run(
        {
            "sets": [sets_file],
            "node_labels": labels,
            "pools": ["worker"],
            "dropin_path": str(tmp_path / "f"),
            "crio_reload": "none",
        },
        capsys,
        check_mode=True,
    )
    assert result["images"] == [A, B] and result["set_names"] == ["i", "w"]


def test_bad_sets_fail_with_every_problem_and_nothing_is_written(tmp_path, capsys, cri, systemctl):
    path = tmp_path / "f"
    path.write_text(EXPECTED_AB)
    bad = pinned_image_set(
        "Bad_Name", ["quay.io/org/a:latest", A, A] + [f"quay.io/org/x@sha256:{n:064x}" for n in range(498)]
    )
    result = run({"sets": [write_sets(tmp_path, bad)], "dropin_path": str(path)}, capsys)
    assert result["rc"] == 1
    text = "\n".join(result["problems"])
    assert "metadata.name 'Bad_Name'" in text
    assert "has 501 items; at most 500" in text
    assert "spec.pinnedImages[0].name 'quay.io/org/a:latest' is a tag reference" in text
    assert "spec.pinnedImages[2].name" in text and "duplicates spec.pinnedImages[1]" in text
    assert len(result["problems"]) == 4
    assert path.read_text() == EXPECTED_AB and systemctl == [] and cri.opened == 0


def test_an_empty_selection_fails_and_touches_nothing(tmp_path, capsys, cri, systemctl):
    path = tmp_path / "f"
    path.write_text(EXPECTED_AB)
    listed = run({"images": [], "dropin_path": str(path)}, capsys)
    assert listed["rc"] == 1 and listed["msg"] == (
        f"images is empty: that would remove the drop-in {path}; nothing was changed. Give the images to pin, "
        "allow_empty=true to empty the pins, or state=absent to remove them"
    )
    (tmp_path / "sets").mkdir()
    from_sets = run({"sets": [str(tmp_path / "sets")], "pools": ["worker"], "dropin_path": str(path)}, capsys)
    assert from_sets["rc"] == 1 and from_sets["msg"].startswith(
        f"sets ({tmp_path / 'sets'}) selected no image for the pools worker (sets found: none): that would remove"
    )
    assert path.read_text() == EXPECTED_AB and systemctl == [] and cri.opened == 0


def test_an_allowed_empty_list_and_absent_remove_the_file(tmp_path, capsys, cri, systemctl):
    path = tmp_path / "f"
    path.write_text(EXPECTED_AB)
    result = run({"images": [], "allow_empty": True, "dropin_path": str(path)}, capsys, diff=True)
    assert result["changed"] and result["reloaded"] and not path.exists()
    assert result["diff"]["before"] == EXPECTED_AB and result["diff"]["after"] == ""
    assert not run({"state": "absent", "dropin_path": str(path)}, capsys)["changed"]
    path.write_text(EXPECTED_AB)
    gone = run({"state": "absent", "dropin_path": str(path), "crio_reload": "none"}, capsys)
    assert gone["changed"] and not path.exists() and gone["images"] == []


def test_absent_also_removes_a_dead_writers_leftover(tmp_path, capsys, cri, systemctl):
    # CRI-O reads every file of crio.conf.d, hidden ones too: a killed writer's complete temporary would still pin.
    path = tmp_path / "50-pinned-images"
    path.write_text(EXPECTED_AB)
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    leftover = tmp_path / f".{path.name}.{finished.pid}.{'5' * 16}.tmp"
    leftover.write_text(EXPECTED_AB)
    assert tomllib.loads(leftover.read_text())["crio"]["image"]["pinned_images"] == [A, B]
    result = run({"state": "absent", "dropin_path": str(path), "crio_reload": "none"}, capsys)
    assert result["rc"] == 0 and result["changed"]
    assert list(tmp_path.iterdir()) == []


def test_reload_by_signal(tmp_path, capsys, cri):
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "signal.signal(signal.SIGHUP, lambda *a: sys.exit(42))\n"
            "print('ready', flush=True)\ntime.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout.readline().strip() == b"ready"
        pid_file = tmp_path / "crio.pid"
        pid_file.write_text(str(child.pid))
        result = run(
            {
                "images": [A],
                "dropin_path": str(tmp_path / "f"),
                "crio_reload": "signal",
                "crio_pid_file": str(pid_file),
            },
            capsys,
        )
        assert result["rc"] == 0 and result["reloaded"]
        assert child.wait(timeout=10) == 42
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()


def test_reload_failure_reports_the_written_file(tmp_path, capsys, cri, monkeypatch):
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: "/bin/" + name)
    monkeypatch.setattr(AnsibleModule, "run_command", lambda self, args, **kw: (5, "", "Failed to reload crio.service"))
    result = run({"images": [A], "dropin_path": str(tmp_path / "f")}, capsys)
    assert result["rc"] == 1 and result["changed"] and not result["reloaded"]
    assert "was written, but CRI-O was not reloaded" in result["msg"] and "Failed to reload" in result["msg"]


def test_a_missing_systemctl_is_a_failed_reload_that_reports_the_written_file(tmp_path, capsys, cri, monkeypatch):
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = run({"images": [A], "dropin_path": str(tmp_path / "f")}, capsys)
    assert result["rc"] == 1 and result["changed"] and result["images"] == [A] and not result["reloaded"]
    assert "was written, but CRI-O was not reloaded: systemctl reload crio failed (rc=127)" in result["msg"]
    assert "systemctl is not on the PATH" in result["msg"]


def test_the_former_names_path_reload_and_pid_file_still_work(tmp_path, capsys, cri):
    path = tmp_path / "50-pinned-images"
    result = run({"images": [A, B], "path": str(path), "reload": "none"}, capsys)
    assert result["rc"] == 0 and result["changed"] and not result["reloaded"], result
    assert result["path"] == str(path) and path.read_text() == EXPECTED_AB
    without_pid = run({"images": [A], "path": str(path), "reload": "signal"}, capsys)
    assert without_pid["rc"] == 1 and "crio_pid_file" in without_pid["msg"]
    pid_file = tmp_path / "crio.pid"
    pid_file.write_text("999999999")
    signalled = run({"images": [A], "path": str(path), "reload": "signal", "pid_file": str(pid_file)}, capsys)
    assert signalled["rc"] == 1 and str(pid_file) in signalled["msg"], signalled


def test_option_rules(tmp_path, capsys, cri):
    both = run({"images": [A], "sets": [], "dropin_path": str(tmp_path / "f")}, capsys)
    assert both["rc"] == 1 and "mutually exclusive" in both["msg"]
    signal_without_pid = run({"images": [A], "crio_reload": "signal", "dropin_path": str(tmp_path / "f")}, capsys)
    assert signal_without_pid["rc"] == 1 and "pid_file" in signal_without_pid["msg"]
    nothing = run({"dropin_path": str(tmp_path / "f")}, capsys)
    assert nothing["rc"] == 1 and "images, sets" in nothing["msg"]
    pools_without_sets = run({"images": [A], "pools": ["worker"], "dropin_path": str(tmp_path / "f")}, capsys)
    assert pools_without_sets["rc"] == 1 and "sets" in pools_without_sets["msg"]
