# SPDX-License-Identifier: GPL-3.0-or-later
"""PullEstimator: pull-source order, mirror fallback, retries of the primary source, loopback registries.

A scripted registry client stands in for the network so that the order of requests and the backoff are exact;
tests/functional/test_disk_guard_lab.py runs the same code against real registries.
"""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import PullEstimator, RetryPolicy
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import parse_docker_config
from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import is_loopback
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    ManifestUnknownError,
    RegistryAuthRejected,
    RegistryConnectionError,
    RegistryTLSError,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import ManifestInfo
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import load_registries_conf

DIGEST = "sha256:" + "b" * 64
IMAGE = parse_image_ref(f"origin.example/team/app@{DIGEST}")


class ScriptedRegistries:
    """manifest_info answers per registry host from a list of outcomes (an exception or None for success)."""

    def __init__(self, outcomes):
        self.outcomes = {host: list(items) for host, items in outcomes.items()}
        self.calls = []
        self.request_count = 0

    def manifest_info(self, ref, credentials=None, insecure=False, platform=None, endpoint=None):
        self.calls.append((ref.registry, credentials.username if credentials else None, insecure))
        self.request_count += 1
        outcome = self.outcomes[ref.registry].pop(0)
        if outcome is not None:
            raise outcome
        return ManifestInfo(DIGEST, "application/vnd.oci.image.manifest.v1+json", DIGEST, (("sha256:l1", 100),), 10)


def estimator(outcomes, mirrors=None, auths=None, retries=2):
    sleeps = []
    registries = load_registries_conf(None, mirrors, default_path="", default_conf_d="")
    config = parse_docker_config('{"auths": %s}' % (auths or "{}"))
    client = ScriptedRegistries(outcomes)
    return PullEstimator(client, registries, config, RetryPolicy(retries=retries), sleep=sleeps.append), client, sleeps


MIRRORED = [dict(prefix="origin.example", location="origin.example", mirrors=[dict(location="mirror.example")])]


def test_mirror_answers_first():
    pull, client, _sleeps = estimator({"mirror.example": [None]}, MIRRORED)
    manifests, failures = pull.read([IMAGE])
    assert failures == {}
    assert [registry for registry, _user, _insecure in client.calls] == ["mirror.example"]
    assert manifests[0][0] == str(IMAGE)


@pytest.mark.parametrize(
    "mirror_error",
    [ManifestUnknownError("unknown"), RegistryConnectionError("refused"), RegistryAuthRejected("denied")],
)
def test_failing_mirror_falls_back_to_origin_without_retrying_it(mirror_error):
    pull, client, sleeps = estimator({"mirror.example": [mirror_error], "origin.example": [None]}, MIRRORED)
    manifests, failures = pull.read([IMAGE])
    assert failures == {} and len(manifests) == 1
    assert [registry for registry, _user, _insecure in client.calls] == ["mirror.example", "origin.example"]
    assert sleeps == []


def test_origin_connection_errors_are_retried_with_backoff():
    refused = RegistryConnectionError("connection refused")
    pull, client, sleeps = estimator({"origin.example": [refused, refused, None]})
    _manifests, failures = pull.read([IMAGE])
    assert failures == {}
    assert sleeps == [1.0, 2.0]
    assert pull.requests == 3


def test_origin_gives_up_after_retries():
    refused = RegistryConnectionError("connection refused")
    pull, _client, sleeps = estimator({"origin.example": [refused] * 5}, retries=2)
    _manifests, failures = pull.read([IMAGE])
    message, kind = failures[str(IMAGE)]
    assert kind == "unavailable"
    assert message.startswith("size estimate failed, not pulled: connection refused")
    assert message.endswith("(gave up after 3 attempts)")
    assert len(sleeps) == 2


@pytest.mark.parametrize(
    "error, kind",
    [
        (RegistryAuthRejected("401"), "auth"),
        (ManifestUnknownError("404"), "not_found"),
        (RegistryTLSError("bad certificate"), "unavailable"),
    ],
)
def test_permanent_errors_are_not_retried(error, kind):
    pull, _client, sleeps = estimator({"origin.example": [error]})
    _manifests, failures = pull.read([IMAGE])
    assert failures[str(IMAGE)][1] == kind
    assert sleeps == []


def test_blocked_registry_is_an_invalid_image():
    blocked = [dict(prefix="origin.example", location="origin.example", blocked=True)]
    pull, client, _sleeps = estimator({}, blocked)
    _manifests, failures = pull.read([IMAGE])
    assert failures[str(IMAGE)][1] == "invalid"
    assert client.calls == []


def test_rewrite_the_runtime_refuses_is_an_invalid_image_never_docker_hub():
    # origin.example/team/app@... rewritten onto "hub" gives "hub@sha256:...", which parses only as docker.io/library/hub.
    rewrite = [dict(prefix=IMAGE.name, location="hub")]
    pull, client, _sleeps = estimator({}, rewrite)
    _manifests, failures = pull.read([IMAGE])
    message, kind = failures[str(IMAGE)]
    assert kind == "invalid" and "not a canonical reference" in message
    assert client.calls == []


def test_mirror_uses_its_own_credentials_else_the_image_hosts():
    auths = (
        '{"mirror.example": {"username": "m", "password": "x"}, "origin.example": {"username": "o", "password": "y"}}'
    )
    pull, client, _sleeps = estimator({"mirror.example": [None]}, MIRRORED, auths)
    pull.read([IMAGE])
    assert client.calls[0][1] == "m"
    auths = '{"origin.example": {"username": "o", "password": "y"}}'
    pull, client, _sleeps = estimator({"mirror.example": [None]}, MIRRORED, auths)
    pull.read([IMAGE])
    assert client.calls[0][1] == "o"


@pytest.mark.parametrize(
    "registry, expected",
    [
        ("127.0.0.1:5000", True),
        ("127.9.9.9", True),
        ("localhost:5000", True),
        ("localhost", True),
        ("[::1]:5000", True),
        ("[::1]", True),
        ("10.0.0.1:5000", False),
        ("quay.io", False),
        ("localhost.example:5000", False),
        ("[2001:db8::1]:5000", False),
    ],
)
def test_loopback_registries(registry, expected):
    assert is_loopback(registry) is expected


def test_loopback_sources_are_read_insecure():
    ref = parse_image_ref(f"127.0.0.1:5000/team/app@{DIGEST}")
    pull, client, _sleeps = estimator({"127.0.0.1:5000": [None]})
    pull.read([ref])
    assert client.calls == [("127.0.0.1:5000", None, True)]


def test_retry_policy_doubles_up_to_its_bound():
    policy = RetryPolicy(retries=4, delay=0.5, factor=3.0, max_delay=4.0)
    assert [policy.backoff(n) for n in (1, 2, 3)] == [0.5, 1.5, 4.0]
    assert RetryPolicy().retries == 0
