# SPDX-License-Identifier: GPL-3.0-or-later
"""node_access_pod main() against the fake API server: pods opened and removed, bad options named, no token out."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.modules import node_access_pod as module
from fixtures.module_runner import run_module
from support.apiserver.pods import PodBehaviour


def cluster(fake):
    return {"host": fake.url, "api_key": fake.token, "namespace": "pinned", "run_id": "run-1"}


def test_present_opens_a_pod_per_node_and_absent_removes_them(fake_apiserver, capsys):
    fake_apiserver.pods.behaviour = lambda pod: (
        PodBehaviour.waiting("ErrImagePull", "manifest unknown")
        if pod["spec"]["nodeName"] == "n2"
        else PodBehaviour.running()
    )
    opened = run_module(module, dict(cluster(fake_apiserver), nodes=["n1", "n2"], image="img"), capsys)
    assert opened["rc"] == 0 and opened["changed"]
    assert [(p["node"], p["running"]) for p in opened["pods"]] == [("n1", True), ("n2", False)]
    assert opened["pods"][1]["reason"].endswith("did not start: ErrImagePull: manifest unknown")
    assert fake_apiserver.token not in opened["_raw"]
    assert len(fake_apiserver.pods.objects) == 2
    checked = run_module(module, dict(cluster(fake_apiserver), state="absent"), capsys, check_mode=True)
    assert checked["removed"] == [] and len(fake_apiserver.pods.objects) == 2
    removed = run_module(module, dict(cluster(fake_apiserver), state="absent"), capsys)
    assert removed["changed"] and sorted(removed["removed"]) == sorted(p["name"] for p in opened["pods"])
    assert fake_apiserver.pods.objects == {}


def test_bad_options_are_named_together_and_nothing_is_created(fake_apiserver, capsys):
    failed = run_module(module, dict(cluster(fake_apiserver), nodes=["n1"], lifetime=0, host_root="host"), capsys)
    assert failed["rc"] == 1 and failed["failed"]
    assert failed["problems"] == [
        "lifetime must be above 0, got 0",
        "image is required with state=present: an image with Python, as registry.access.redhat.com/ubi9/python-311",
        "host_root must be an absolute path other than /, got 'host'",
    ]
    assert fake_apiserver.pods.objects == {}


def test_missing_rbac_is_the_apis_403_named(fake_apiserver, capsys):
    fake_apiserver.forbid("list", "pods")
    failed = run_module(module, dict(cluster(fake_apiserver), nodes=["n1"], image="img"), capsys)
    assert failed["rc"] == 1 and failed["status"] == 403
    assert failed["msg"].startswith("forbidden: the credentials may not list pods")
    assert fake_apiserver.token not in failed["_raw"]
