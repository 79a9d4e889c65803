# SPDX-License-Identifier: GPL-3.0-or-later
"""The pod mode on the controller: kubectl connected as the cluster modules connect, and the hosts of the node pods."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import K8S_AUTH_ARG_SPEC
from ansible_collections.pinned.images.plugins.plugin_utils._pod_access import (
    node_pods,
    pod_access_problem,
    resolved_k8s_auth,
)

_EMPTY_KUBECTL = {
    "ansible_kubectl_token": "",
    "ansible_kubectl_password": "",
    "ansible_kubectl_username": "",
    "ansible_kubectl_verify_ssl": "",
    "ansible_kubectl_kubeconfig": "",
    "ansible_kubectl_context": "",
    "ansible_kubectl_host": "",
    "ansible_kubectl_ca_cert": "",
    "ansible_kubectl_cert_file": "",
    "ansible_kubectl_key_file": "",
    "ansible_kubectl_extra_args": "",
}


def _kubeconfig_file(tmp_path):
    path = tmp_path / "kube" / "config"
    path.parent.mkdir()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://api:6443", "certificate-authority": "ca.crt"}},
                    {"name": "other", "cluster": {"server": "https://other:6443"}},
                ],
                "users": [{"name": "u", "user": {"token": "old-token", "client-key": "/abs/key"}}],
                "contexts": [
                    {"name": "admin", "context": {"cluster": "c", "user": "u", "namespace": "ns"}},
                    {"name": "x", "context": {"cluster": "other", "user": "u"}},
                ],
                "current-context": "x",
            }
        )
    )
    return path


def test_pod_mode_hosts_reach_their_pod_with_the_cluster_connection_and_no_token_on_kubectls_command_line(tmp_path):
    kubeconfig = _kubeconfig_file(tmp_path)
    pods = [
        {"node": "cp-0", "name": "pinned-images-cp-0-1", "namespace": "ns", "running": True, "reason": ""},
        {"node": "w-0", "name": "pinned-images-w-0-2", "namespace": "ns", "running": False, "reason": "ErrImagePull"},
    ]
    auth = {
        "kubeconfig": str(kubeconfig),
        "context": "admin",
        "api_key": "t0ken",
        "ssl_ca_cert": "/ca",
        "validate_certs": False,
        "proxy": "http://proxy:3128",
        "host": "",
        "request_timeout": 30,
    }
    hosts = node_pods(pods, [{"node": "cp-0", "host": "master-a"}], auth, "/host", "/usr/bin/python3", {})
    assert [(item["node"], item["host"]) for item in hosts] == [("cp-0", "master-a"), ("w-0", "w-0")]
    # The token only inside a kubeconfig dict (the plugin writes it to a 0600 file for each exec), with the
    # context's cluster (its relative CA made absolute) and user; validation off through kubectl's own flag.
    assert hosts[0]["vars"] == dict(
        _EMPTY_KUBECTL,
        ansible_connection="kubernetes.core.kubectl",
        ansible_become=False,
        ansible_kubectl_kubeconfig={
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "pinned-images",
                    "cluster": {
                        "server": "https://api:6443",
                        "certificate-authority": str(kubeconfig.parent / "ca.crt"),
                    },
                }
            ],
            "users": [{"name": "pinned-images", "user": {"token": "t0ken", "client-key": "/abs/key"}}],
            "contexts": [
                {
                    "name": "pinned-images",
                    "context": {"cluster": "pinned-images", "user": "pinned-images", "namespace": "ns"},
                }
            ],
            "current-context": "pinned-images",
        },
        ansible_kubectl_extra_args="--insecure-skip-tls-verify=true",
        ansible_kubectl_local_env_vars={"HTTPS_PROXY": "http://proxy:3128", "HTTP_PROXY": "http://proxy:3128"},
        ansible_kubectl_pod="pinned-images-cp-0-1",
        ansible_kubectl_namespace="ns",
        ansible_python_interpreter="/usr/bin/python3",
        node_host_root="/host",
        node_access_error="",
    )
    assert hosts[1]["vars"]["node_access_error"] == "ErrImagePull"
    assert node_pods(pods[:1], [], {}, "/host", "auto", {})[0]["vars"]["ansible_connection"] == (
        "kubernetes.core.kubectl"
    )


def test_pod_mode_reads_the_k8s_auth_environment_as_the_modules_do():
    pods = [{"node": "cp-0", "name": "p", "namespace": "ns", "running": True, "reason": ""}]
    environ = {"K8S_AUTH_API_KEY": "env-t0ken", "K8S_AUTH_HOST": "https://api:6443", "K8S_AUTH_VERIFY_SSL": "yes"}
    variables = node_pods(pods, [], {"ca_cert": "/ca"}, "/host", "auto", environ)[0]["vars"]
    assert variables["ansible_kubectl_token"] == ""
    assert variables["ansible_kubectl_verify_ssl"] == ""
    assert variables["ansible_kubectl_host"] == "https://api:6443"
    assert variables["ansible_kubectl_ca_cert"] == "/ca"
    assert variables["ansible_kubectl_extra_args"] == "--insecure-skip-tls-verify=false"
    assert variables["ansible_kubectl_kubeconfig"]["users"] == [
        {"name": "pinned-images", "user": {"token": "env-t0ken"}}
    ]
    assert variables["ansible_kubectl_kubeconfig"]["clusters"] == [{"name": "pinned-images", "cluster": {}}]
    # Without a token, a kubeconfig path stays a path.
    del environ["K8S_AUTH_API_KEY"]
    variables = node_pods(pods, [], {"kubeconfig": "/k", "context": "c"}, "/host", "auto", environ)[0]["vars"]
    assert (variables["ansible_kubectl_kubeconfig"], variables["ansible_kubectl_context"]) == ("/k", "c")


def test_pod_mode_names_a_missing_kubeconfig(tmp_path):
    pods = [{"node": "cp-0", "name": "p", "namespace": "ns", "running": True, "reason": ""}]
    with pytest.raises(ValueError, match=f"kubeconfig {tmp_path}/none does not exist"):
        node_pods(pods, [], {"kubeconfig": str(tmp_path / "none"), "api_key": "t"}, "/host", "auto", {})


def test_pod_mode_names_a_missing_kubectl_or_kubernetes_core_before_any_pod():
    assert pod_access_problem("kubectl", lambda _name: "/usr/bin/kubectl", lambda _name: True) == ""
    problem = pod_access_problem("kubectl", lambda _name: None, lambda _name: False)
    assert problem.startswith("cluster_node_access=pod needs kubectl and kubernetes.core on the controller: ")
    assert "no kubectl on the controller's PATH" in problem
    assert "no connection plugin kubernetes.core.kubectl: install the collection kubernetes.core" in problem
    assert problem.endswith("; no pod was created")


def test_kubectl_reads_each_connection_option_as_the_modules_do():
    # Under its name, each alias and its K8S_AUTH_* variable (K8S_AUTH_ARG_SPEC); kubectl has no request timeout.
    for option, spec in K8S_AUTH_ARG_SPEC.items():
        if option == "request_timeout":
            continue
        value = True if spec["type"] == "bool" else "/given"
        for name in (option, *spec.get("aliases", ())):
            assert resolved_k8s_auth({name: value}, {}) == {option: value}, name
        variable = spec["fallback"][1][0]
        text, read = ("yes", True) if spec["type"] == "bool" else ("/env", "/env")
        assert resolved_k8s_auth({}, {variable: text}) == {option: read}, variable
