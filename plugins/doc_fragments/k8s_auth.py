# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Kubernetes connection options shared by the cluster-side modules (names as in kubernetes.core)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  action_group:
    description: Use C(group/pinned.images.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - pinned.images.k8s
options:
  kubeconfig:
    description:
      - Path to an existing Kubernetes config file, or the configuration itself as a dictionary.
      - When neither O(kubeconfig), O(context) nor O(host) is given, the service account of the pod is used when the
        module runs in a pod, else the default configuration file (E(KUBECONFIG) or C(~/.kube/config)).
      - Can also be specified via E(K8S_AUTH_KUBECONFIG) environment variable.
      - A relative path given to the task is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
      - The credentials in a dictionary (tokens, passwords, private keys) are masked wherever they occur in the
        module's results; the rest of it stays readable.
    type: raw
  context:
    description:
      - The name of a context found in the config file.
      - Can also be specified via E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - Provide a URL for accessing the API.
      - Without O(kubeconfig) and O(context), the connection is built from O(host), O(api_key), O(ca_cert),
        O(client_cert), O(client_key), O(validate_certs) and O(proxy) alone; with them, O(host) overrides the server
        of the kubeconfig context.
      - Can also be specified via E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Token used to authenticate with the API (sent as a bearer token).
      - Can also be specified via E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether or not to verify the API server's SSL certificates.
      - Can also be specified via E(K8S_AUTH_VERIFY_SSL) environment variable.
      - When unset, the kubeconfig decides (verification is on unless it sets C(insecure-skip-tls-verify)).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate used to authenticate with the API. The full certificate chain must be provided to
        avoid certificate validation errors.
      - Can also be specified via E(K8S_AUTH_SSL_CA_CERT) environment variable.
      - A relative path given to the task is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a certificate used to authenticate with the API.
      - Can also be specified via E(K8S_AUTH_CERT_FILE) environment variable.
      - A relative path given to the task is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to a key file used to authenticate with the API.
      - Can also be specified via E(K8S_AUTH_KEY_FILE) environment variable.
      - A relative path given to the task is resolved against the directory C(ansible) or C(ansible-playbook) was started in when the
        module runs over the local connection (C(delegate_to=localhost)), not against the playbook's directory.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - The URL of an HTTP proxy to use for the connection.
      - A password in the URL (C(user:password@)) is masked in the module's results, and the user info of any URL
        is left out of error messages.
      - Can also be specified via E(K8S_AUTH_PROXY) environment variable.
    type: str
  request_timeout:
    description:
      - Seconds one call to the API server may take in all, API discovery and retries included. A server that does
        not answer in that time fails the task with C(the Kubernetes API server at URL did not answer within N s).
      - A refused or dropped connection is tried again (at most 3 attempts), within the same time.
      - Can also be specified via E(K8S_AUTH_REQUEST_TIMEOUT) environment variable.
      - kubernetes.core has no such option; the name and variable follow its style.
    type: float
    default: 30
requirements:
  - kubernetes >= 24.2.0
notes:
  - To avoid SSL certificate validation errors when O(validate_certs=true), the full certificate chain for the API
    server must be provided via O(ca_cert) or in the kubeconfig file.
  - Tokens, passwords and the user info of URLs are never included in results, errors or diffs.
"""
