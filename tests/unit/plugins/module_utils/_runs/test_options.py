# SPDX-License-Identifier: GPL-3.0-or-later
"""_runs/options: the shared argument specs and their readers, and Problems."""

from __future__ import annotations

import copy
import socket

import pytest
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import K8sClient
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DropinSettings
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    K8S_AUTH_ARG_SPEC,
    Problems,
    RegistryOptions,
    RuntimeOptions,
    cri_socket,
    dropin_settings,
    k8s_connection,
    node_params,
    selected_images,
)
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


def test_problems_raise_one_error_as_it_was_and_several_as_one():
    problems = Problems()
    problems.raise_any()
    problems.at_least({"concurrency": 0}, "concurrency", 1)
    with pytest.raises(CollectionError, match="^concurrency must be at least 1, got 0$"):
        problems.raise_any()
    problems.above_zero({"timeout": 0.0}, "timeout")
    assert problems.attempt(lambda: 7) == 7

    def bad():
        raise K8sError("unreachable", status=0)

    assert problems.attempt(bad) is None
    with pytest.raises(CollectionError) as info:
        problems.raise_any()
    assert info.value.problems == [
        "concurrency must be at least 1, got 0",
        "timeout must be above 0, got 0.0",
        "unreachable",
    ]
    only = Problems()
    only.attempt(bad)
    with pytest.raises(K8sError):
        only.raise_any()


def test_the_registry_options_read_the_pull_secret_and_registries_conf(tmp_path):
    auth = tmp_path / "auth.json"
    auth.write_text('{"auths": {"quay.io": {"auth": "dXNlcjpzM2NyZXQ="}}}')
    conf = tmp_path / "registries.conf"
    conf.write_text("")
    problems = Problems()
    options = RegistryOptions.from_params(
        dict(
            auth_file=str(auth),
            registries_conf=str(conf),
            registry_mirrors=None,
            registry_certs_dirs=["/certs"],
            registry_timeout=5.0,
        ),
        problems,
    )
    problems.raise_any()
    assert options is not None and options.certs_dirs == ("/certs",) and options.timeout == 5.0
    assert "s3cret" in options.docker_config.secrets()
    broken = Problems()
    assert (
        RegistryOptions.from_params(
            dict(
                auth_file=str(tmp_path / "missing.json"),
                registries_conf=str(conf),
                registry_mirrors=None,
                registry_certs_dirs=[],
                registry_timeout=0,
            ),
            broken,
        )
        is None
    )
    assert len(broken.errors) == 2 and str(broken.errors[0]) == "registry_timeout must be above 0, got 0"


def test_the_selection_is_empty_for_absent_and_validated_for_present():
    image = "quay.io/a/b@sha256:" + "a" * 64
    absent = dict(
        state="absent", images=[image], sets=None, pools=None, node_labels=None, require_digest=True, allow_empty=False
    )
    assert selected_images(absent, lambda names, require_digest: names, "remove the pins") == ([], [])
    seen = []
    present = dict(absent, state="present")
    assert selected_images(
        present, lambda names, require_digest: seen.append(require_digest) or names, "remove the pins"
    ) == ([image], [])
    assert seen == [True]


def test_an_empty_selection_fails_naming_what_it_would_remove_unless_allowed():
    empty = dict(
        state="present", images=[], sets=None, pools=None, node_labels=None, require_digest=True, allow_empty=False
    )
    with pytest.raises(CollectionError) as info:
        selected_images(empty, lambda names, require_digest: names, "remove the drop-in /d")
    assert "that would remove the drop-in /d; nothing was changed" in info.value.message
    assert selected_images(dict(empty, allow_empty=True), lambda names, require_digest: names, "x") == ([], [])


def test_node_params_put_the_node_paths_under_host_root_and_leave_the_rest(tmp_path):
    params = dict(
        host_root=str(tmp_path) + "/",
        cri_socket="unix:///run/containerd/containerd.sock",
        auth_file="/run/secret.json",
        registries_conf=None,
        registry_certs_dirs=["/etc/containers/certs.d"],
        dropin_path="/etc/crio/crio.conf.d/50-pinned-images",
        images=["/not/a/path"],
    )
    mapped = node_params(params, ("dropin_path",))
    assert mapped == dict(
        params,
        host_root=str(tmp_path),
        cri_socket=f"unix://{tmp_path}/run/containerd/containerd.sock",
        auth_file=f"{tmp_path}/run/secret.json",
        registry_certs_dirs=[f"{tmp_path}/etc/containers/certs.d"],
        dropin_path=f"{tmp_path}/etc/crio/crio.conf.d/50-pinned-images",
    )
    assert node_params(dict(params, host_root=None), ("dropin_path",)) == dict(params, host_root=None)
    with pytest.raises(CollectionError, match="host_root must be an absolute path"):
        node_params(dict(params, host_root="host"), ())


def test_the_runtime_options_are_read_once_with_the_node_paths_under_host_root(tmp_path):
    params = node_params(
        dict(
            host_root=str(tmp_path),
            cri_socket="/run/containerd/containerd.sock",
            cri_connect_timeout=2.0,
            cri_timeout=9.0,
        ),
        (),
    )
    assert RuntimeOptions.from_params(params) == RuntimeOptions(
        cri_socket=f"{tmp_path}/run/containerd/containerd.sock",
        cri_connect_timeout=2.0,
        cri_timeout=9.0,
        containerd_namespace=None,
        host_root=str(tmp_path),
    )
    assert RuntimeOptions.from_params(dict(params, containerd_namespace="k8s.io")).containerd_namespace == "k8s.io"


def test_the_drop_in_options_are_read_alike_for_every_module_that_writes_it(tmp_path):
    params = node_params(
        dict(
            host_root=str(tmp_path),
            dropin_path="/etc/crio/crio.conf.d/50-pinned-images",
            crio_reload="signal",
            crio_pid_file="/run/crio/crio.pid",
            settle_timeout=3.0,
        ),
        ("dropin_path", "crio_pid_file"),
    )
    assert dropin_settings(params, force=True) == DropinSettings(
        path=f"{tmp_path}/etc/crio/crio.conf.d/50-pinned-images",
        reload="signal",
        pid_file=f"{tmp_path}/run/crio/crio.pid",
        force=True,
        settle_timeout=3.0,
    )
    assert dropin_settings(params).force is False


def test_the_default_cri_socket_is_found_under_host_root(tmp_path):
    with pytest.raises(
        CollectionError, match=f"no CRI socket found under host_root {tmp_path} .*{tmp_path}/run/containerd"
    ):
        cri_socket(RuntimeOptions(cri_socket=None, host_root=str(tmp_path)))
    (tmp_path / "run/containerd").mkdir(parents=True)
    path = tmp_path / "run/containerd/containerd.sock"
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(path))
        assert cri_socket(RuntimeOptions(cri_socket=None, host_root=str(tmp_path))) == str(path)
    finally:
        listener.close()
    assert cri_socket(RuntimeOptions(cri_socket="/x.sock", host_root=str(tmp_path))) == "/x.sock"
    assert cri_socket(RuntimeOptions(cri_socket=None, host_root=None)) is None


def test_cri_os_default_socket_is_found_through_debians_absolute_var_run_link(tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("/run")
    (tmp_path / "run/crio").mkdir(parents=True)
    path = tmp_path / "run/crio/crio.sock"
    path.write_text("")
    assert cri_socket(RuntimeOptions(cri_socket=None, host_root=str(tmp_path))) == str(path)


def test_the_default_pull_secret_and_registries_conf_are_the_hosts(tmp_path):
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet/config.json").write_text('{"auths": {"quay.io": {"auth": "dXNlcjpzM2NyZXQ="}}}')
    (tmp_path / "etc/containers").mkdir(parents=True)
    (tmp_path / "etc/containers/registries.conf").write_text('unqualified-search-registries = ["quay.io"]\n')
    problems = Problems()
    options = RegistryOptions.from_params(
        dict(
            host_root=str(tmp_path),
            auth_file=None,
            registries_conf=None,
            registry_mirrors=None,
            registry_certs_dirs=[],
            registry_timeout=5.0,
        ),
        problems,
    )
    problems.raise_any()
    assert options is not None and "s3cret" in options.docker_config.secrets()
    assert options.registries.files == [str(tmp_path / "etc/containers/registries.conf")]
