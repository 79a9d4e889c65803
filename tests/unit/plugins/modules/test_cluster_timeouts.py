# SPDX-License-Identifier: GPL-3.0-or-later
"""Every cluster module ends within ``request_timeout`` against an API server that never answers (a port that
accepts and stays silent) and against one that answers discovery and then hangs (the fake API server holding one
verb). The elapsed time is checked as a bound (timeout plus a margin for a loaded machine), not measured."""

from __future__ import annotations

import time

import pytest

from ansible_collections.pinned.images.plugins.modules import machine_config, pinned_image_set_info, pinned_image_status
from ansible_collections.pinned.images.plugins.modules import pinned_image_set as pinned_image_set_module
from fixtures.module_runner import run_module
from fixtures.openshift_objects import pinned_image_set
from support.apiserver.mco import add_machine_configuration

IMAGE = "quay.io/openshift/app-a@sha256:" + "a" * 64
MCO_PATH = "/apis/machineconfiguration.openshift.io/v1/"
TIMEOUT = 1.5
MARGIN = 5.0

# module, its arguments without the connection, and the request the hanging server holds: (method, path prefix).
CASES = {
    "pinned_image_set": (pinned_image_set_module, {"name": "s", "images": [IMAGE], "apply": True}, ("PATCH", MCO_PATH)),
    "machine_config": (machine_config, {"pools": ["worker"], "images": [IMAGE], "apply": True}, ("PATCH", MCO_PATH)),
    "pinned_image_status": (
        pinned_image_status,
        {"nodes": [{"name": "n1", "sets": [{"name": "s", "images": [IMAGE]}]}]},
        ("GET", "/api/v1/nodes"),
    ),
    "pinned_image_set_info": (pinned_image_set_info, {"cluster": True}, ("GET", MCO_PATH)),
}


def run_timed(module, args, capsys):
    start = time.monotonic()
    result = run_module(module, args, capsys)
    return result, time.monotonic() - start


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_silent_server_fails_the_module_within_the_timeout(name, silent_listener, capsys):
    module, args, _expected = CASES[name]
    result, elapsed = run_timed(
        module, {**args, "host": silent_listener, "api_key": "t0ken-value", "request_timeout": TIMEOUT}, capsys
    )
    assert result["failed"] is True
    assert f"the Kubernetes API server at {silent_listener} did not answer within {TIMEOUT:g} s" in result["msg"]
    assert elapsed < TIMEOUT + MARGIN
    assert "t0ken-value" not in result["_raw"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_server_that_hangs_after_discovery_fails_the_module_within_the_timeout(
    name, fake_apiserver, capsys, monkeypatch
):
    module, args, (method, prefix) = CASES[name]
    fake_apiserver.add(pinned_image_set("s", [IMAGE]))
    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    # machine_config applies its node disruption policy first (not held), then the MachineConfig (held).
    add_machine_configuration(fake_apiserver)
    fake_apiserver.hold(method, prefix)
    # The timeout from the environment, as an AWX credential would set it.
    monkeypatch.setenv("K8S_AUTH_REQUEST_TIMEOUT", str(TIMEOUT))
    result, elapsed = run_timed(module, {**args, "host": fake_apiserver.url, "api_key": fake_apiserver.token}, capsys)
    assert result["failed"] is True
    assert f"did not answer within {TIMEOUT:g} s" in result["msg"]
    assert elapsed < TIMEOUT + MARGIN
    held = [r for r in fake_apiserver.requests if r.method == method and r.path.startswith(prefix)]
    assert len(held) == 1
