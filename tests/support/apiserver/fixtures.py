# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pytest fixtures of the fake API server."""

from __future__ import annotations

import pytest

from fixtures.reference import OPENSHIFT_CRDS_PARTS, reference_path
from support.apiserver.api import FakeApiServer
from support.ports import silent_port


def _running(tmp_path, name, tls):
    server = FakeApiServer(tmp_path / name, tls=tls)
    server.tmp_path.mkdir()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_apiserver(tmp_path):
    """A running :class:`FakeApiServer` over HTTP; ``.url``, ``.token``, ``.kubeconfig_path``, ``.objects``, ..."""
    yield from _running(tmp_path, "apiserver-http", tls=False)


@pytest.fixture
def fake_apiserver_tls(tmp_path):
    """The same over HTTPS with a fresh CA (``.ca_cert_path``) and a client certificate (``.client_cert_path``)."""
    yield from _running(tmp_path, "apiserver-tls", tls=True)


@pytest.fixture
def crd_schemas():
    """For tests of schema behaviour (validation, pruning, list-map merges): skips without the upstream CRDs."""
    return reference_path(*OPENSHIFT_CRDS_PARTS)


@pytest.fixture
def silent_listener():
    """The URL of a port that accepts connections (into the kernel's backlog) and never answers."""
    with silent_port() as port:
        yield f"http://127.0.0.1:{port}"
