# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Kubernetes connection options of the cluster modules, ``K8S_AUTH_ARG_SPEC`` (kubernetes.core's names, aliases
and ``K8S_AUTH_*`` variables), and their reader ``k8s_connection(params)``. Apart from ``options``, so that the node
modules never import the Kubernetes client."""

from __future__ import annotations

from typing import Any, Mapping

from ansible.module_utils.basic import env_fallback

from ansible_collections.pinned.images.plugins.module_utils._k8s.client import DEFAULT_TIMEOUT
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection

__all__ = ["K8S_AUTH_ARG_SPEC", "k8s_connection"]

K8S_AUTH_ARG_SPEC = {
    # A dict kubeconfig carries tokens and keys; Ansible then hides every string in it from results and logs.
    # Not no_log: that would mask every value of a dict kubeconfig ("v1", "Config") in all output. Modules mask
    # its credentials and a proxy password instead, with connection_secrets().
    "kubeconfig": {"type": "raw", "no_log": False, "fallback": (env_fallback, ["K8S_AUTH_KUBECONFIG"])},
    "context": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_CONTEXT"])},
    "host": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_HOST"])},
    "api_key": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_API_KEY"])},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"], "fallback": (env_fallback, ["K8S_AUTH_VERIFY_SSL"])},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"], "fallback": (env_fallback, ["K8S_AUTH_SSL_CA_CERT"])},
    "client_cert": {"type": "path", "aliases": ["cert_file"], "fallback": (env_fallback, ["K8S_AUTH_CERT_FILE"])},
    # A path to the key, not the key itself: nothing to hide from the logs.
    "client_key": {
        "type": "path",
        "aliases": ["key_file"],
        "no_log": False,
        "fallback": (env_fallback, ["K8S_AUTH_KEY_FILE"]),
    },
    # May carry user:password@ (SOCKS proxies use it); hidden from results and logs as a whole.
    "proxy": {"type": "str", "no_log": False, "fallback": (env_fallback, ["K8S_AUTH_PROXY"])},
    "request_timeout": {
        "type": "float",
        "default": DEFAULT_TIMEOUT,
        "fallback": (env_fallback, ["K8S_AUTH_REQUEST_TIMEOUT"]),
    },
}


def k8s_connection(params: Mapping[str, Any]) -> K8sConnection:
    """The connection options of the module parameters (K8S_AUTH_ARG_SPEC)."""
    return K8sConnection(**{name: params.get(name) for name in K8S_AUTH_ARG_SPEC})
