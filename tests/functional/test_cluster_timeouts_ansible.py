# SPDX-License-Identifier: GPL-3.0-or-later
"""Real ``ansible`` / ``ansible-playbook`` runs against an API server that never answers end with the timeout
message within ``request_timeout`` (a bound with a margin for a loaded machine, not a benchmark)."""

from __future__ import annotations

import time

from fixtures.ansible_runs import adhoc, playbook

MARGIN = 10.0


def test_the_status_module_ends_within_the_timeout(silent_listener):
    start = time.monotonic()
    rc, result, output = adhoc(
        "pinned.images.pinned_image_status",
        {
            "host": silent_listener,
            "api_key": "s3cret-t0ken",
            "request_timeout": 2,
            "nodes": [{"name": "n1", "state": "progressing"}],
        },
        timeout=60,
    )
    elapsed = time.monotonic() - start
    assert rc != 0
    assert (
        result["msg"] == f"the Kubernetes API server at {silent_listener} did not answer within 2 s (request_timeout)"
    )
    assert "s3cret-t0ken" not in output
    assert elapsed < 2 + MARGIN


def test_the_cluster_role_honours_the_timeout_from_the_environment(silent_listener, tmp_path):
    extra = {
        "cluster_read_cluster": True,
        "cluster_render_dest": str(tmp_path / "out"),
        "cluster_k8s_auth": {"host": silent_listener, "api_key": "s3cret-t0ken"},
    }
    start = time.monotonic()
    proc = playbook("pinned.images.render", extra_vars=extra, env=dict(K8S_AUTH_REQUEST_TIMEOUT="2"), timeout=60)
    elapsed = time.monotonic() - start
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"the Kubernetes API server at {silent_listener} did not answer within 2 s" in output
    assert "s3cret-t0ken" not in output
    assert not (tmp_path / "out").exists()
    assert elapsed < 2 + MARGIN
