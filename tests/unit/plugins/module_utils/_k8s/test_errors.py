# SPDX-License-Identifier: GPL-3.0-or-later
"""_k8s/errors: a Kubernetes failure carries its HTTP status and the API's reason in its details."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError


def test_status_and_reason_are_details_and_causes_are_kept():
    error = K8sError("denied", status=403, reason="Forbidden", causes=[{"field": "spec"}])
    assert isinstance(error, CollectionError)
    assert (error.message, error.problems) == ("denied", ["denied"])
    assert error.details == {"status": 403, "reason": "Forbidden"}
    assert (error.status, error.reason, error.causes) == (403, "Forbidden", [{"field": "spec"}])


def test_no_answer_is_status_0():
    error = K8sError("cannot reach the API server")
    assert error.details == {"status": 0, "reason": None} and error.causes == []
