# SPDX-License-Identifier: GPL-3.0-or-later
"""_runs/pin_audit: the options checked into one request, the method in force from the runtime, and nothing but
reads on the runtime."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._runs.pin_audit import AuditRequest, run_audit

A = f"registry.example:5000/a@sha256:{'a' * 64}"


def params(tmp_path, **extra):
    base = dict(
        images=[A, A],
        pin="auto",
        dropin_path=str(tmp_path / "50-pinned-images"),
        record_file=None,
        state_dir=str(tmp_path / "state"),
        mco_dir=str(tmp_path / "mcd"),
        host_root=None,
        cri_socket=str(tmp_path / "cri.sock"),
        cri_connect_timeout=1.0,
        cri_timeout=1.0,
    )
    return dict(base, **extra)


class ReadOnly:
    """A CRI-O that answers reads and fails any call that would change the node."""

    endpoint = "unix:///fake.sock"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def version(self):
        return dict(runtime_name="cri-o", runtime_version="1.33.0", runtime_api_version="v1")

    def list_images(self):
        return [dict(id="id-a", repo_tags=[], repo_digests=[A], size=1, pinned=False)]

    def image_status(self, name):
        return None

    def __getattr__(self, name):
        raise AssertionError(f"the audit called {name}")


def test_every_bad_image_is_named_at_once(tmp_path):
    with pytest.raises(CollectionError) as caught:
        AuditRequest.from_params(params(tmp_path, images=["Bad Name", A, "also bad"]))
    assert [problem.split(":")[0] for problem in caught.value.problems] == ["images[0]", "images[2]"]


def test_the_record_defaults_to_the_prefetch_s_in_the_state_directory_and_is_never_made(tmp_path):
    request = AuditRequest.from_params(params(tmp_path))
    assert request.record_file == str(tmp_path / "state" / "pinned-images-record.json")
    given = AuditRequest.from_params(params(tmp_path, record_file=str(tmp_path / "mine.json")))
    assert given.record_file == str(tmp_path / "mine.json")
    run_audit(request, lambda options: ReadOnly())
    assert not (tmp_path / "state").exists()


def test_auto_on_cri_o_reads_the_drop_in_and_only_reads(tmp_path):
    request = AuditRequest.from_params(params(tmp_path))
    assert len(request.refs) == 1
    result = run_audit(request, client_factory=lambda options: ReadOnly())
    assert (result["method"], result["changed"], result["unpinned"]) == ("dropin", False, [A])
    assert result["crio"]["exists"] is False and result["mco_managed"] is None
    assert not (tmp_path / "50-pinned-images").exists()
