# SPDX-License-Identifier: GPL-3.0-or-later
"""The CRI-O drop-in: the exact bytes the machine-config-operator writes, validation, sync."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import tomllib

from ansible_collections.pinned.images.plugins.module_utils._common.errors import UNAVAILABLE, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    DEFAULT_PATH,
    DropinSettings,
    MissingImagesError,
    NotReportedError,
    OverriddenError,
    PinnedImagesError,
    ReloadError,
    covers,
    dropin_pinned_images,
    effective_pins,
    missing_images,
    pin_dropin,
    reload_crio,
    render_pinned_images,
    same_content,
    sync_pinned_images,
    validate_pinned_images,
)

A = "quay.io/openshift-release-dev/ocp-release@sha256:" + "0" * 64
B = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "1" * 64
C = "registry.example.com:5000/team/app@sha256:" + "ab" * 32

# What pkg/daemon/pinned_image_set.go (createCrioConfigFileBytes, BurntSushi/toml encoder, 2-space indent)
# writes for [A, B], written out byte by byte.
EXPECTED_TWO = (
    b"[crio]\n"
    b"  [crio.image]\n"
    b'    pinned_images = ["quay.io/openshift-release-dev/ocp-release@sha256:'
    b"0000000000000000000000000000000000000000000000000000000000000000"
    b'", "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:'
    b"1111111111111111111111111111111111111111111111111111111111111111"
    b'"]\n'
)
EXPECTED_ONE = (
    b"[crio]\n  [crio.image]\n    pinned_images = "
    b'["registry.example.com:5000/team/app@sha256:abababababababababababababababababababababababababababababababab"]\n'
)


def test_default_path():
    assert DEFAULT_PATH == "/etc/crio/crio.conf.d/50-pinned-images"


def test_render_matches_the_mco_bytes():
    assert render_pinned_images([A, B]).encode() == EXPECTED_TWO
    assert render_pinned_images([C]).encode() == EXPECTED_ONE


def test_render_of_an_empty_list_omits_the_key_like_omitempty():
    assert render_pinned_images([]) == "[crio]\n  [crio.image]\n"
    assert tomllib.loads(render_pinned_images([])) == {"crio": {"image": {}}}


def test_rendered_text_is_toml_with_the_list():
    text = render_pinned_images([A, B, C])
    assert tomllib.loads(text) == {"crio": {"image": {"pinned_images": [A, B, C]}}}
    assert tomllib.loads(EXPECTED_TWO.decode()) == {"crio": {"image": {"pinned_images": [A, B]}}}


def test_quoting_follows_the_go_encoder():
    text = render_pinned_images(['a"b', "c\\d", "e\tf", "\x01", "\x7f"])
    assert text.splitlines()[2] == '    pinned_images = ["a\\"b", "c\\\\d", "e\\tf", "\\u0001", "\\u007f"]'
    assert tomllib.loads(text)["crio"]["image"]["pinned_images"] == ['a"b', "c\\d", "e\tf", "\x01", "\x7f"]


def test_validate_sorts_dedupes_and_drops_blanks():
    assert validate_pinned_images([C, B, A, B, "", "  "]) == [A, B, C]
    assert validate_pinned_images(None) == []


def test_validate_lists_every_bad_entry():
    bad = [
        A,
        "quay.io/org/app:latest",
        "nginx@sha256:" + "0" * 64,
        "quay.io/org/*",
        7,
        " " + A,
        "quay.io/UP@sha256:" + "0" * 64,
    ]
    with pytest.raises(PinnedImagesError) as info:
        validate_pinned_images(bad)
    problems = info.value.problems
    assert len(problems) == 6
    assert problems[0].startswith("images[1]: ") and "not pinned by digest" in problems[0]
    assert problems[1].startswith("images[2]: ") and "docker.io/library/nginx@sha256:" in problems[1]
    assert problems[2].startswith("images[3]: ") and "require_digest=false" in problems[2]
    assert problems[3].startswith("images[4]: ") and "must be a string" in problems[3]
    assert problems[4].startswith("images[5]: ") and "whitespace" in problems[4]
    assert problems[5].startswith("images[6]: ")


def test_patterns_and_tags_only_without_require_digest():
    allowed = ["quay.io/org/*", "*pause*", "quay.io/org/app:latest", A]
    assert validate_pinned_images(allowed, require_digest=False) == sorted(allowed)
    with pytest.raises(PinnedImagesError) as info:
        validate_pinned_images(["*", "**", "quay.io/*/x", "*a*b*", "a b*", "*bar"], require_digest=False)
    assert len(info.value.problems) == 6


@pytest.mark.parametrize(
    "value, canonical, require_digest",
    [
        ("docker.io/busybox@sha256:" + "0" * 64, "docker.io/library/busybox@sha256:" + "0" * 64, True),
        ("index.docker.io/library/busybox@sha256:" + "0" * 64, "docker.io/library/busybox@sha256:" + "0" * 64, True),
        ("registry-1.docker.io/org/app@sha256:" + "0" * 64, "docker.io/org/app@sha256:" + "0" * 64, True),
        ("busybox@sha256:" + "0" * 64, "docker.io/library/busybox@sha256:" + "0" * 64, True),
        ("docker.io/busybox:1.36", "docker.io/library/busybox:1.36", False),
    ],
)
def test_validate_requires_the_name_crio_matches(value, canonical, require_digest):
    # CRI-O compares pinned_images with fully qualified names; any other spelling would silently pin nothing.
    with pytest.raises(PinnedImagesError) as info:
        validate_pinned_images([value], require_digest=require_digest)
    (problem,) = info.value.problems
    assert problem.startswith("images[0]: ") and "not fully qualified" in problem
    assert problem.endswith(f"write {canonical!r}")
    assert validate_pinned_images([canonical], require_digest=require_digest) == [canonical]


def test_validate_refuses_a_string():
    with pytest.raises(PinnedImagesError, match="must be a list"):
        validate_pinned_images(A)


def test_same_content_trims_like_the_mco():
    new = render_pinned_images([A])
    assert same_content(new, new)
    assert same_content("\n" + new.rstrip("\n") + "  \n\n", new)
    assert not same_content(None, new)
    assert not same_content(render_pinned_images([B]), new)
    # Go's bytes.TrimSpace: NEL and NBSP (in UTF-8) are trimmed, the U+001C..U+001F separators are not.
    assert same_content(new.encode() + "\u0085\u00a0".encode(), new)
    assert same_content("\u3000" + new, new.encode())
    assert not same_content(new + "\x1c", new)
    assert not same_content(new.encode() + b"\xff", new)


class FakeCri:
    def __init__(self, present):
        self.present = set(present)
        self.asked = []

    def image_status(self, image):
        self.asked.append(image)
        return (
            {"id": "sha256:x", "repo_tags": [], "repo_digests": [image], "size": 1, "pinned": False}
            if image in self.present
            else None
        )


def test_missing_images_uses_image_status_and_skips_patterns():
    client = FakeCri({A})
    assert missing_images(client, [A, B, "quay.io/org/*", C]) == [B, C]
    assert client.asked == [A, B, C]


def test_sync_writes_checks_presence_and_is_idempotent(tmp_path):
    path = str(tmp_path / "50-pinned-images")
    client = FakeCri({A, B})
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "", ""

    def presence(images):
        return missing_images(client, images)

    result = sync_pinned_images(path, [A, B], check_presence=presence, reload="systemd", run_command=run)
    assert result["changed"] and result["reloaded"]
    assert open(path, "rb").read() == EXPECTED_TWO
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert calls == [["systemctl", "reload", "crio"]]
    assert result["diff"]["before"] == "" and result["diff"]["after"] == EXPECTED_TWO.decode()

    client.asked.clear()
    again = sync_pinned_images(path, [A, B], check_presence=presence, reload="systemd", run_command=run)
    assert not again["changed"] and not again["reloaded"] and client.asked == [] and len(calls) == 1

    # A file the MCO wrote with extra surrounding whitespace is left alone.
    with open(path, "ab") as handle:
        handle.write(b"\n\n")
    assert not sync_pinned_images(path, [A, B], check_presence=presence)["changed"]


def test_sync_refuses_missing_images_and_writes_nothing(tmp_path):
    path = tmp_path / "50-pinned-images"
    path.write_bytes(EXPECTED_ONE)
    client = FakeCri({A})
    with pytest.raises(MissingImagesError) as info:
        sync_pinned_images(str(path), [A, B, C], check_presence=lambda images: missing_images(client, images))
    assert info.value.missing == [B, C]
    assert "2 image(s)" in str(info.value) and B in str(info.value)
    assert path.read_bytes() == EXPECTED_ONE
    forced = sync_pinned_images(str(path), [A, B], force=True, check_presence=lambda images: pytest.fail("asked"))
    assert forced["changed"] and path.read_bytes() == EXPECTED_TWO


def test_sync_check_mode_writes_nothing_and_returns_a_diff(tmp_path):
    path = tmp_path / "50-pinned-images"
    result = sync_pinned_images(
        str(path),
        [A, B],
        check_mode=True,
        reload="systemd",
        run_command=lambda argv: pytest.fail("reloaded in check mode"),
    )
    assert result["changed"] and not result["reloaded"]
    assert result["diff"]["after"] == EXPECTED_TWO.decode()
    assert not path.exists()


def test_sync_empty_or_absent_removes(tmp_path):
    path = tmp_path / "50-pinned-images"
    path.write_bytes(EXPECTED_TWO)
    calls = []
    result = sync_pinned_images(
        str(path), [], reload="systemd", run_command=lambda argv: calls.append(argv) or (0, "", "")
    )
    assert result["changed"] and result["reloaded"] and not path.exists()
    assert result["diff"]["before"] == EXPECTED_TWO.decode() and result["diff"]["after"] == ""
    assert not sync_pinned_images(str(path), [A], state="absent")["changed"]


def test_reload_failure_carries_the_result(tmp_path):
    path = tmp_path / "50-pinned-images"
    with pytest.raises(ReloadError) as info:
        sync_pinned_images(
            str(path), [A], reload="systemd", run_command=lambda argv: (1, "", "Unit crio.service not loaded.")
        )
    assert "rc=1" in str(info.value) and "not loaded" in str(info.value)
    assert str(info.value).startswith(f"{path} was written, but CRI-O was not reloaded: ")
    assert info.value.result["changed"] and path.exists()
    assert info.value.details == {"changed": True, "path": str(path), "images": [A]}


def test_a_cri_error_of_the_presence_check_names_the_check(tmp_path):
    def presence(images):
        raise CriError("connection refused", UNAVAILABLE)

    with pytest.raises(CollectionError) as info:
        pin_dropin([A], DropinSettings(str(tmp_path / "50-pinned-images")), False, presence, None)
    assert str(info.value) == "cannot read the images' state through CRI: connection refused"
    assert info.value.details == {"error_kind": UNAVAILABLE} and not (tmp_path / "50-pinned-images").exists()


def test_reload_by_signal(tmp_path):
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "signal.signal(signal.SIGHUP, lambda *a: sys.exit(42))\n"
            "print('ready', flush=True)\n"
            "time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout.readline().strip() == b"ready"
        pid_file = tmp_path / "crio.pid"
        pid_file.write_text(f"{child.pid}\n")
        reload_crio("signal", pid_file=str(pid_file))
        assert child.wait(timeout=10) == 42
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()


@pytest.mark.parametrize("content, why", [(None, "cannot read"), ("abc", "does not hold"), ("1", "does not hold")])
def test_reload_by_signal_errors(tmp_path, content, why):
    pid_file = tmp_path / "crio.pid"
    if content is not None:
        pid_file.write_text(content)
    with pytest.raises(ReloadError, match=why):
        reload_crio("signal", pid_file=str(pid_file))


def test_reload_none_and_unknown():
    reload_crio("none")
    with pytest.raises(ReloadError):
        reload_crio("bogus")
    with pytest.raises(ReloadError):
        reload_crio("systemd")


def test_a_huge_old_drop_in_is_replaced_without_being_read_whole(tmp_path, monkeypatch):
    path = tmp_path / "50-pinned-images"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    from ansible_collections.pinned.images.plugins.module_utils._common import atomic_file as _atomic_file

    reads = []
    real_read_bytes = _atomic_file.read_bytes

    def recorded(target, limit=None):
        data = real_read_bytes(target, limit)
        reads.append(len(data or b""))
        return data

    monkeypatch.setattr(_atomic_file, "read_bytes", recorded)
    result = sync_pinned_images(str(path), [A], check_presence=lambda images: [])
    assert result["changed"] is True
    assert result["diff"]["before"].startswith(f"({50 * 1024 * 1024} bytes")
    assert tomllib.loads(path.read_text())["crio"]["image"]["pinned_images"] == [A]
    assert reads and max(reads) <= _atomic_file.compare_limit(path.read_text()) + 1


# ---- what CRI-O keeps from its drop-in directory, and the CRI read-back


class CrioLike(FakeCri):
    """Reports an image pinned when the drop-ins, read as CRI-O reads them, pin it and ``reloaded`` is set."""

    def __init__(self, present, path, reloads_after=0):
        super().__init__(present)
        self.path = path
        self.reloads_after = reloads_after  # calls before the "reload" takes effect
        self.calls = 0

    def image_status(self, image):
        status = super().image_status(image)
        self.calls += 1
        if status is not None and self.calls > self.reloads_after:
            own = dropin_pinned_images(open(self.path).read()) if os.path.exists(self.path) else []
            status["pinned"] = covers(effective_pins(self.path, own or [])[0], image)
        return status


@pytest.mark.parametrize(
    "text, expected",
    [
        ('[crio]\n  [crio.image]\n    pinned_images = ["a", "b"]\n', ["a", "b"]),
        ("[crio.image]\npinned_images = [\n  'x/*',\n  \"y\",\n]\n", ["x/*", "y"]),
        ("crio.image.pinned_images = []\n", []),
        ('[crio.image]\npause_image = "p"\n', None),
        ("[crio.image\npinned_images = [", None),
    ],
)
def test_dropin_pinned_images_reads_the_key_as_toml(text, expected, monkeypatch):
    assert dropin_pinned_images(text) == expected


def test_dropin_pinned_images_without_a_toml_reader(monkeypatch):
    from ansible_collections.pinned.images.plugins.module_utils._pins import crio_dropin

    monkeypatch.setattr(crio_dropin, "toml_module", lambda: None)
    assert dropin_pinned_images(EXPECTED_TWO.decode()) == [A, B]
    assert dropin_pinned_images("[crio.image]\npinned_images = [\n  'x/*',\n]\n") == ["x/*"]
    assert dropin_pinned_images('[crio.image]\npause_image = "p"\n') is None


def test_covers_is_cri_os_match():
    assert covers([A], A) and not covers([B], A)
    assert covers(["quay.io/openshift-release-dev/*"], A) and not covers(["quay.io/other/*"], A)
    assert covers(["*ocp-release*"], A) and not covers(["*nothing*"], A)


def test_a_later_dropin_that_sets_the_list_fails_the_pin_naming_it_in_check_mode_too(tmp_path):
    path = tmp_path / "50-pinned-images"
    (tmp_path / "10-early").write_text('[crio.image]\npinned_images = ["%s"]\n' % C)
    (tmp_path / "60-other").write_text('[crio.image]\npause_image = "p"\n')
    later = tmp_path / "99-other"
    later.write_text('[crio.image]\npinned_images = ["%s"]\n' % B)
    for check_mode in (True, False):
        with pytest.raises(OverriddenError) as info:
            sync_pinned_images(str(path), [A, B], check_mode=check_mode)
        assert str(later) in str(info.value) and A in str(info.value) and "replaces the whole list" in str(info.value)
        assert info.value.details == {"overridden_by": [str(later)]}
        assert not path.exists()
    # A later list that pins every wanted image voids nothing: written, with a warning that names it.
    later.write_text('[crio.image]\npinned_images = ["quay.io/openshift-release-dev/*"]\n')
    result = sync_pinned_images(str(path), [A, B])
    assert result["changed"] and str(later) in result["warnings"][0]
    assert effective_pins(str(path), [A, B]) == (["quay.io/openshift-release-dev/*"], str(later))
    later.unlink()
    assert effective_pins(str(path), [A, B]) == ([A, B], str(path))
    path.unlink()
    assert effective_pins(str(path), []) == ([C], str(tmp_path / "10-early"))


def test_after_the_reload_cri_must_report_the_pins(tmp_path):
    path = tmp_path / "50-pinned-images"
    client = CrioLike({A, B, C}, str(path), reloads_after=3)
    signals = []
    result = sync_pinned_images(
        str(path),
        [A, B],
        client=client,
        reload="systemd",
        run_command=lambda argv: signals.append(argv) or (0, "", ""),
        settle_timeout=5,
    )
    assert result["cri_pinned"] == {A: True, B: True} and result["reloaded"]
    # B leaves the list: CRI must report it unpinned; a rerun reads CRI once and agrees.
    result = sync_pinned_images(
        str(path), [A], client=client, reload="systemd", run_command=lambda argv: (0, "", ""), settle_timeout=5
    )
    assert result["cri_pinned"] == {A: True, B: False}
    client.asked.clear()
    again = sync_pinned_images(str(path), [A], client=client, reload="systemd", run_command=pytest.fail)
    assert not again["changed"] and again["cri_pinned"] == {A: True} and client.asked == [A]


def test_cri_that_does_not_report_the_pins_fails_the_step_and_says_why(tmp_path):
    path = tmp_path / "50-pinned-images"
    client = FakeCri({A, B})  # never reports anything pinned: as a CRI-O that ignored the reload
    with pytest.raises(NotReportedError) as info:
        sync_pinned_images(
            str(path), [A, B], client=client, reload="systemd", run_command=lambda argv: (0, "", ""), settle_timeout=0.3
        )
    message = str(info.value)
    assert f"after 0.3s CRI still reports {A} as not pinned, {B} as not pinned" in message
    assert "is written and CRI-O reloaded" in message and str(tmp_path) in message
    assert info.value.details["changed"] and info.value.details["cri_pinned"] == {A: False, B: False}
    # reload=none: CRI-O was not told, so CRI is only reported.
    assert sync_pinned_images(str(path), [A, B], client=client)["cri_pinned"] == {A: False, B: False}


class ReloadableCri(FakeCri):
    """A CRI-O whose pins are what the drop-ins said at its last reload (``applied``), not what they say now."""

    def __init__(self, present, path):
        super().__init__(present)
        self.path = path
        self.applied = []
        self.reloads = 0

    def image_status(self, image):
        status = super().image_status(image)
        if status is not None:
            status["pinned"] = covers(self.applied, image)
        return status

    def reload(self, rc=0):
        """``run_command`` of a systemctl that reloads CRI-O (rc 0) or fails (any other rc)."""

        def run(argv):
            assert argv == ["systemctl", "reload", "crio"]
            if rc:
                return rc, "", "crio.service: stale pid file"
            self.reloads += 1
            own = dropin_pinned_images(open(self.path).read()) if os.path.exists(self.path) else []
            self.applied = effective_pins(self.path, own or [])[0]
            return 0, "", ""

        return run


def test_a_dropin_as_wanted_that_crio_does_not_apply_is_reloaded_once_then_verified(tmp_path):
    path = str(tmp_path / "50-pinned-images")
    client = ReloadableCri({A, B}, path)

    def sync(rc=0, check_mode=False, run_command=None):
        return sync_pinned_images(
            path,
            [A, B],
            client=client,
            reload="systemd",
            run_command=run_command or client.reload(rc),
            settle_timeout=1,
            check_mode=check_mode,
        )

    with pytest.raises(ReloadError, match="was written, but CRI-O was not reloaded: .*stale pid file"):
        sync(rc=1)
    # Every rerun finds the file as wanted; while the reload fails, it says so, and that nothing changed.
    with pytest.raises(ReloadError) as info:
        sync(rc=1)
    assert str(info.value).startswith(f"{path} is as wanted but CRI-O does not apply it, and it was not reloaded: ")
    assert info.value.details == {"changed": False, "path": path, "images": [A, B]}
    # Check mode says the run would change the node (so the role's check leads to the pin call), and reloads nothing.
    planned = sync(check_mode=True, run_command=pytest.fail)
    assert (planned["changed"], planned["reloaded"], planned["cri_pinned"]) == (True, False, {A: False, B: False})
    healed = sync()
    assert (healed["changed"], healed["reloaded"], client.reloads) == (True, True, 1)
    assert healed["cri_pinned"] == {A: True, B: True} and healed["diff"]["before"] == healed["diff"]["after"]
    assert healed["warnings"] == [
        f"{path} was as wanted but CRI-O did not apply it (CRI reported {A} as not pinned, {B} as not pinned): "
        "CRI-O reloaded"
    ]
    again = sync(run_command=pytest.fail)
    assert (again["changed"], again["reloaded"], again["warnings"]) == (False, False, [])


def test_a_dropin_crio_still_does_not_apply_after_the_reload_fails_the_step(tmp_path):
    path = tmp_path / "50-pinned-images"
    path.write_text(render_pinned_images([A, B]))
    client = FakeCri({A, B})  # never reports anything pinned: a CRI-O that cannot read its drop-ins
    reloads = []
    with pytest.raises(NotReportedError) as info:
        sync_pinned_images(
            str(path),
            [A, B],
            client=client,
            reload="systemd",
            run_command=lambda argv: reloads.append(argv) or (0, "", ""),
            settle_timeout=0.2,
        )
    assert len(reloads) == 1
    assert str(info.value).startswith(f"{path} is as wanted and CRI-O reloaded, but after 0.2s CRI still reports {A}")
    assert "CRI-O did not apply the drop-in" in str(info.value)
    assert info.value.details["reloaded"] and info.value.details["changed"]
