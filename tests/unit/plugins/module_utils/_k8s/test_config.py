# SPDX-License-Identifier: GPL-3.0-or-later
"""_k8s/config: the kubernetes Configuration the connection options make, and the credentials that never show."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._k8s.client import require_kubernetes
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import (
    K8sConnection,
    build_configuration,
    scrub_text,
    url_secrets,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError

TOKEN = "kubeconfig-t0ken"


def test_explicit_options_make_the_configuration(tmp_path):
    require_kubernetes()
    for name in ("ca.crt", "client.crt", "client.key"):
        (tmp_path / name).write_text("x")
    connection = K8sConnection(
        host="https://api.example.test:6443/",
        api_key="abc",
        validate_certs=False,
        ca_cert=str(tmp_path / "ca.crt"),
        client_cert=str(tmp_path / "client.crt"),
        client_key=str(tmp_path / "client.key"),
        proxy="http://u:pr0xy-pw@proxy.test:3128",
    )
    configuration, secrets = build_configuration(connection, str(tmp_path))
    assert configuration.host == "https://api.example.test:6443"
    assert configuration.api_key == {"authorization": "Bearer abc"}
    assert (configuration.verify_ssl, configuration.ssl_ca_cert) == (False, str(tmp_path / "ca.crt"))
    assert (configuration.cert_file, configuration.key_file) == (
        str(tmp_path / "client.crt"),
        str(tmp_path / "client.key"),
    )
    assert {"abc", "pr0xy-pw", "u:pr0xy-pw"} <= set(secrets)


def test_a_missing_certificate_file_is_named(tmp_path):
    require_kubernetes()
    with pytest.raises(K8sError, match=r"client_key file .*nope\.key does not exist"):
        build_configuration(K8sConnection(host="https://x.test", client_key=str(tmp_path / "nope.key")), str(tmp_path))


def test_the_secrets_are_the_credentials_of_a_dict_kubeconfig_and_the_proxy():
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "users": [{"name": "u", "user": {"token": TOKEN}}]}
    secrets = K8sConnection(kubeconfig=kubeconfig, proxy="socks5://me:p%40ss@proxy.test").secrets()
    assert {TOKEN, "me:p%40ss", "p%40ss", "p@ss"} <= secrets
    assert not {"v1", "Config", "u"} & secrets
    assert K8sConnection().secrets() == set()


def test_text_is_scrubbed_of_user_info_and_secrets():
    assert url_secrets("https://host.test/x") == set()
    text = scrub_text(f"GET https://me:pw@host.test/x with {TOKEN} and ab", [TOKEN, "ab"])
    assert text == "GET https://host.test/x with ******** and ab"
