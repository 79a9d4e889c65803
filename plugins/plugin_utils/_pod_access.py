# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pod mode of the ``pinned.images.cluster`` role on the controller: kubectl connected as the cluster modules
connect (their options, their ``K8S_AUTH_*`` variables, a token only inside a kubeconfig), and the host variables
of each node reached through its pod; exposed as filters by ``plugins/filter/cluster.py``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import yaml

__all__ = [
    "kubectl_connection",
    "node_pods",
    "pod_access_problem",
    "resolved_k8s_auth",
    "token_kubeconfig",
]

# The cluster modules' connection options: kubernetes.core's names, their aliases, and the K8S_AUTH_* variables
# the modules fall back to (K8S_AUTH_ARG_SPEC of _runs/k8s_options), resolved here the same way for kubectl.
_K8S_AUTH_OPTIONS = {
    "kubeconfig": ((), "K8S_AUTH_KUBECONFIG"),
    "context": ((), "K8S_AUTH_CONTEXT"),
    "host": ((), "K8S_AUTH_HOST"),
    "api_key": ((), "K8S_AUTH_API_KEY"),
    "validate_certs": (("verify_ssl",), "K8S_AUTH_VERIFY_SSL"),
    "ca_cert": (("ssl_ca_cert",), "K8S_AUTH_SSL_CA_CERT"),
    "client_cert": (("cert_file",), "K8S_AUTH_CERT_FILE"),
    "client_key": (("key_file",), "K8S_AUTH_KEY_FILE"),
    "proxy": ((), "K8S_AUTH_PROXY"),
}
# Paths in a kubeconfig, relative to its file: made absolute when the kubeconfig is rewritten elsewhere.
_KUBECONFIG_PATH_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


def resolved_k8s_auth(k8s_auth: Mapping[str, Any], environ: Mapping[str, str]) -> Dict[str, Any]:
    """The connection options as the cluster modules see them: given (under a name or an alias), else their
    ``K8S_AUTH_*`` variable; empty ones left out."""
    resolved: Dict[str, Any] = {}
    for name, (aliases, variable) in _K8S_AUTH_OPTIONS.items():
        given = [k8s_auth.get(key) for key in (name, *aliases) if k8s_auth.get(key) not in (None, "")]
        value = given[0] if given else environ.get(variable) or None
        if value is not None:
            resolved[name] = value
    if isinstance(resolved.get("validate_certs"), str):
        resolved["validate_certs"] = resolved["validate_certs"].strip().lower() not in ("0", "false", "no", "off", "n")
    return resolved


def _named(entries: Any, name: Any) -> Dict[str, Any]:
    """The body (``cluster``, ``user``, ``context``) of kubeconfig entry ``name`` of ``entries``; {} when absent."""
    for entry in entries or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            return dict(next((value for key, value in entry.items() if key != "name"), None) or {})
    return {}


def _absolute_paths(body: Dict[str, Any], base: str) -> Dict[str, Any]:
    return {
        key: os.path.join(base, value)
        if key in _KUBECONFIG_PATH_KEYS and isinstance(value, str) and value and not os.path.isabs(value)
        else value
        for key, value in body.items()
    }


def token_kubeconfig(auth: Mapping[str, Any]) -> Dict[str, Any]:
    """A kubeconfig dict with the token of ``auth`` (``api_key``), for kubectl: its context's cluster and user of
    ``auth``'s kubeconfig (a dict or a file; none: a cluster of ``host`` only), the user's token replaced. The
    connection plugin writes a dict kubeconfig to a 0600 file for each exec and removes it, so the token never is
    on kubectl's command line."""
    source = auth.get("kubeconfig")
    base = ""
    data: Any = {}
    if isinstance(source, str):
        path = next((p for p in source.split(os.pathsep) if p and os.path.exists(os.path.expanduser(p))), "")
        if not path:
            raise ValueError(f"kubeconfig {source} does not exist")
        path = os.path.abspath(os.path.expanduser(path))
        base = os.path.dirname(path)
        with open(path, encoding="utf-8") as stream:
            data = yaml.safe_load(stream) or {}
    elif isinstance(source, Mapping):
        data = source
    if not isinstance(data, Mapping):
        raise ValueError(f"kubeconfig {source if isinstance(source, str) else '(a dict)'} is not a mapping")
    context = _named(data.get("contexts"), auth.get("context") or data.get("current-context"))
    cluster = _named(data.get("clusters"), context.get("cluster"))
    user = _named(data.get("users"), context.get("user"))
    if base:
        cluster, user = _absolute_paths(cluster, base), _absolute_paths(user, base)
    for key in ("token", "tokenFile", "username", "password", "exec", "auth-provider"):
        user.pop(key, None)
    user["token"] = auth["api_key"]
    name = "pinned-images"
    body = {"cluster": name, "user": name}
    if context.get("namespace"):
        body["namespace"] = context["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": body}],
        "current-context": name,
    }


def kubectl_connection(k8s_auth: Mapping[str, Any], environ: Mapping[str, str]) -> Dict[str, Any]:
    """The ``kubernetes.core.kubectl`` variables that connect kubectl as the cluster modules connect. Every
    credential option the plugin would read from ``K8S_AUTH_*`` or put on kubectl's command line is set empty
    (the plugin skips empty ones); a token goes in a kubeconfig dict (``token_kubeconfig``). Certificate
    validation goes through ``--insecure-skip-tls-verify=``: the plugin's own ``validate_certs`` does not turn
    into that flag's value."""
    auth = resolved_k8s_auth(k8s_auth, environ)
    connection: Dict[str, Any] = {
        "ansible_connection": "kubernetes.core.kubectl",
        "ansible_become": False,
        "ansible_kubectl_token": "",
        "ansible_kubectl_password": "",
        "ansible_kubectl_username": "",
        "ansible_kubectl_verify_ssl": "",
        "ansible_kubectl_kubeconfig": auth.get("kubeconfig", ""),
        "ansible_kubectl_context": auth.get("context", ""),
        "ansible_kubectl_host": auth.get("host", ""),
        "ansible_kubectl_ca_cert": auth.get("ca_cert", ""),
        "ansible_kubectl_cert_file": auth.get("client_cert", ""),
        "ansible_kubectl_key_file": auth.get("client_key", ""),
        "ansible_kubectl_extra_args": "",
    }
    if auth.get("api_key"):
        connection["ansible_kubectl_kubeconfig"] = token_kubeconfig(auth)
        connection["ansible_kubectl_context"] = ""
    if "validate_certs" in auth:
        skip = not auth["validate_certs"]
        connection["ansible_kubectl_extra_args"] = f"--insecure-skip-tls-verify={str(skip).lower()}"
        if skip:
            # kubectl refuses a CA together with the flag; the modules ignore the CA then too.
            connection["ansible_kubectl_ca_cert"] = ""
    if auth.get("proxy"):
        connection["ansible_kubectl_local_env_vars"] = {"HTTPS_PROXY": auth["proxy"], "HTTP_PROXY": auth["proxy"]}
    return connection


def pod_access_problem(
    kubectl: str, which: Callable[[str], Optional[str]], find_connection: Callable[[str], bool]
) -> str:
    """Why the controller cannot reach nodes through pods ("" when it can): no ``kubectl`` on the ``PATH``
    (``which``), no ``kubernetes.core.kubectl`` connection plugin (``find_connection``)."""
    missing = []
    if not which(kubectl):
        missing.append(f"no {kubectl} on the controller's PATH")
    if not find_connection("kubernetes.core.kubectl"):
        missing.append(
            "no connection plugin kubernetes.core.kubectl: install the collection kubernetes.core "
            "(a dependency of pinned.images), for example from the ansible package or a tarball"
        )
    if not missing:
        return ""
    return (
        "cluster_node_access=pod needs kubectl and kubernetes.core on the controller: "
        + "; ".join(missing)
        + ("; no pod was created")
    )


def node_pods(
    pods: Sequence[Mapping[str, Any]],
    node_groups: Sequence[Mapping[str, Any]],
    k8s_auth: Mapping[str, Any],
    host_root: str,
    python: str,
    environ: Mapping[str, str],
) -> List[Dict[str, Any]]:
    """For each pod of a ``node_access_pod`` result: ``node``, its inventory ``host`` (of ``node_groups``, the
    ``node_groups`` of the plan; the node's name for a node not there), and ``vars``, the host variables that reach the node
    through it (``kubernetes.core.kubectl`` with the same connection as the cluster modules, root in the pod, the
    node role's ``node_host_root``), with ``node_access_error`` for a pod that does not run."""
    connection = kubectl_connection(k8s_auth, environ)
    hosts = {item["node"]: item["host"] for item in node_groups}
    out = []
    for pod in pods:
        variables = dict(
            connection,
            ansible_kubectl_pod=pod["name"],
            ansible_kubectl_namespace=pod["namespace"],
            ansible_python_interpreter=python,
            node_host_root=host_root,
            node_access_error=pod.get("reason") or "",
        )
        out.append({"node": pod["node"], "host": hosts.get(pod["node"], pod["node"]), "vars": variables})
    return out
