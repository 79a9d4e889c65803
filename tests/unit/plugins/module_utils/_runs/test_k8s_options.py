# SPDX-License-Identifier: GPL-3.0-or-later
"""_runs/k8s_options: kubernetes.core's connection options, their K8S_AUTH_* variables, and the connection read
from them."""

from __future__ import annotations

import copy

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._k8s.client import K8sClient
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC, k8s_connection
from fixtures.module_runner import patch_module_args
from fixtures.openshift_objects import MCO_API_VERSION as MCO
from fixtures.openshift_objects import pinned_image_set

IMAGE = "quay.io/openshift/app-a@sha256:" + "a" * 64
ENV_NAMES = {
    "kubeconfig": "K8S_AUTH_KUBECONFIG",
    "context": "K8S_AUTH_CONTEXT",
    "host": "K8S_AUTH_HOST",
    "api_key": "K8S_AUTH_API_KEY",
    "validate_certs": "K8S_AUTH_VERIFY_SSL",
    "ca_cert": "K8S_AUTH_SSL_CA_CERT",
    "client_cert": "K8S_AUTH_CERT_FILE",
    "client_key": "K8S_AUTH_KEY_FILE",
    "proxy": "K8S_AUTH_PROXY",
    "request_timeout": "K8S_AUTH_REQUEST_TIMEOUT",
}


def module_params(args):
    with patch_module_args(args):
        return AnsibleModule(argument_spec=copy.deepcopy(K8S_AUTH_ARG_SPEC)).params


def test_arg_spec_matches_kubernetes_core_names():
    assert set(K8S_AUTH_ARG_SPEC) == set(ENV_NAMES)
    for option, env in ENV_NAMES.items():
        assert K8S_AUTH_ARG_SPEC[option]["fallback"][1] == [env]
    assert K8S_AUTH_ARG_SPEC["api_key"]["no_log"] is True
    assert K8S_AUTH_ARG_SPEC["validate_certs"]["aliases"] == ["verify_ssl"]
    assert K8S_AUTH_ARG_SPEC["ca_cert"]["aliases"] == ["ssl_ca_cert"]
    assert K8S_AUTH_ARG_SPEC["client_cert"]["aliases"] == ["cert_file"]
    assert K8S_AUTH_ARG_SPEC["client_key"]["aliases"] == ["key_file"]
    assert K8S_AUTH_ARG_SPEC["kubeconfig"]["type"] == "raw"
    # Masking a whole dict kubeconfig would hide "v1" and "Config" everywhere: only its credentials are masked.
    assert K8S_AUTH_ARG_SPEC["kubeconfig"]["no_log"] is False
    assert K8S_AUTH_ARG_SPEC["proxy"]["no_log"] is False


def test_connection_secrets_are_the_credentials_only():
    config = {"apiVersion": "v1", "kind": "Config", "users": [{"name": "u", "user": {"token": "kubeconfig-t0ken"}}]}
    proxy = "http://proxy-user:pr0xy-pa55word@proxy.example.test:3128"
    with patch_module_args({"kubeconfig": config, "proxy": proxy}):
        module = AnsibleModule(argument_spec=copy.deepcopy(K8S_AUTH_ARG_SPEC))
    secrets = k8s_connection(module.params).secrets()
    assert {"kubeconfig-t0ken", "pr0xy-pa55word"} <= secrets
    assert not {"v1", "Config", "u"} & secrets


def test_every_env_fallback_reaches_the_params(monkeypatch, tmp_path):
    files = {}
    for name in ("ca.crt", "client.crt", "client.key", "kubeconfig"):
        files[name] = tmp_path / name
        files[name].write_text("x")
    values = {
        "K8S_AUTH_KUBECONFIG": str(files["kubeconfig"]),
        "K8S_AUTH_CONTEXT": "ctx-from-env",
        "K8S_AUTH_HOST": "https://api.example.test:6443",
        "K8S_AUTH_API_KEY": "env-secret-token",
        "K8S_AUTH_VERIFY_SSL": "false",
        "K8S_AUTH_SSL_CA_CERT": str(files["ca.crt"]),
        "K8S_AUTH_CERT_FILE": str(files["client.crt"]),
        "K8S_AUTH_KEY_FILE": str(files["client.key"]),
        "K8S_AUTH_PROXY": "http://proxy.example.test:3128",
        "K8S_AUTH_REQUEST_TIMEOUT": "7.5",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    params = module_params({})
    assert params == {
        "kubeconfig": str(files["kubeconfig"]),
        "context": "ctx-from-env",
        "host": "https://api.example.test:6443",
        "api_key": "env-secret-token",
        "validate_certs": False,
        "ca_cert": str(files["ca.crt"]),
        "client_cert": str(files["client.crt"]),
        "client_key": str(files["client.key"]),
        "proxy": "http://proxy.example.test:3128",
        "request_timeout": 7.5,
    }
    # Explicit arguments (and the kubernetes.core aliases) win over the environment.
    params = module_params({"verify_ssl": True, "ssl_ca_cert": "/x/ca", "cert_file": "/x/c", "key_file": "/x/k"})
    assert (params["validate_certs"], params["ca_cert"], params["client_cert"], params["client_key"]) == (
        True,
        "/x/ca",
        "/x/c",
        "/x/k",
    )


def test_env_host_and_token_connect(monkeypatch, fake_apiserver, tmp_path):
    monkeypatch.setenv("K8S_AUTH_HOST", fake_apiserver.url)
    monkeypatch.setenv("K8S_AUTH_API_KEY", fake_apiserver.token)
    fake_apiserver.add(pinned_image_set("set-a", (IMAGE,), None))
    with K8sClient.connect(k8s_connection(module_params({})), tmpdir=str(tmp_path)) as c:
        assert c.get(MCO, "PinnedImageSet", "set-a")["spec"]["pinnedImages"] == [{"name": IMAGE}]
    assert {r.user for r in fake_apiserver.requests} == {"token-user"}
