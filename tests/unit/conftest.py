# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests never see the machine's cluster settings, and start with Ansible's warning registry empty."""

from __future__ import annotations

import pytest
from ansible.module_utils.common import warnings as ansible_warnings

AMBIENT_CLUSTER_VARIABLES = (
    "K8S_AUTH_KUBECONFIG",
    "K8S_AUTH_CONTEXT",
    "K8S_AUTH_HOST",
    "K8S_AUTH_API_KEY",
    "K8S_AUTH_VERIFY_SSL",
    "K8S_AUTH_SSL_CA_CERT",
    "K8S_AUTH_CERT_FILE",
    "K8S_AUTH_KEY_FILE",
    "K8S_AUTH_PROXY",
    "K8S_AUTH_REQUEST_TIMEOUT",
    "KUBECONFIG",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
)


@pytest.fixture(autouse=True)
def no_ambient_cluster(monkeypatch):
    for name in AMBIENT_CLUSTER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # AnsibleModule keeps warnings in a process-wide registry; every test starts with an empty one.
    monkeypatch.setattr(ansible_warnings, "_global_warnings", type(ansible_warnings._global_warnings)())
