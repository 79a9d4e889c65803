# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""How the collection reaches an API server: kubernetes.core's connection options (``K8sConnection``), the
``kubernetes`` Configuration they make (``build_configuration``), and the credentials in them, which never appear
in a message (``scrub_text``, ``K8sConnection.secrets``).

Options follow kubernetes.core: ``host`` given (and no ``kubeconfig``/``context``): that URL with ``api_key``
and/or client certificates; ``kubeconfig`` (path or dict) and/or ``context``: that kubeconfig, then the explicit
options on top; nothing: the pod's service account in a pod, else the default kubeconfig (``KUBECONFIG`` or
``~/.kube/config``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple, Union
from urllib.parse import unquote

from ansible_collections.pinned.images.plugins.module_utils._common.secrets import redact
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError

__all__ = [
    "K8sConnection",
    "build_configuration",
    "kubeconfig_secrets",
    "safe_url",
    "scrub_text",
    "temp_file_kwarg",
    "url_secrets",
]

# Shorter values are not scrubbed from messages: they would blank out unrelated words.
_MIN_SECRET_LENGTH = 4
# Keys of a kubeconfig whose string values are credentials.
_KUBECONFIG_SECRET_KEYS = frozenset(
    (
        "token",
        "password",
        "client-key-data",
        "access-token",
        "refresh-token",
        "id-token",
        "client-secret",
        "secret",
    )
)
_USERINFO_RE = re.compile(r"(?<=://)[^/\s]*@")


def safe_url(url: object) -> str:
    """The URL (or any text) without the user info of URLs (``https://user:pass@host`` -> ``https://host``)."""
    return _USERINFO_RE.sub("", str(url or ""))


def url_secrets(url: object) -> Set[str]:
    """The user info of a URL and its password, raw and percent-decoded (empty for a URL without them)."""
    found: Set[str] = set()
    for match in _USERINFO_RE.finditer(str(url or "")):
        userinfo = match.group(0)[:-1]
        password = userinfo.partition(":")[2]
        for value in (userinfo, password):
            found.update((value, unquote(value)))
    found.discard("")
    return found


def kubeconfig_secrets(data: object) -> Set[str]:
    """String values of a kubeconfig dict under credential keys (tokens, passwords, private keys)."""
    found: Set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if key in _KUBECONFIG_SECRET_KEYS and isinstance(value, str):
                found.add(value)
            else:
                found |= kubeconfig_secrets(value)
    elif isinstance(data, list):
        for item in data:
            found |= kubeconfig_secrets(item)
    found.discard("")
    return found


@dataclass(frozen=True)
class K8sConnection:
    """How to reach the API server: kubernetes.core's connection options (``K8S_AUTH_ARG_SPEC`` of
    ``_runs/k8s_options``), each None when not given."""

    kubeconfig: Union[str, Dict[str, Any], None] = None
    context: Optional[str] = None
    host: Optional[str] = None
    api_key: Optional[str] = None
    validate_certs: Optional[bool] = None
    ca_cert: Optional[str] = None
    client_cert: Optional[str] = None
    client_key: Optional[str] = None
    proxy: Optional[str] = None
    request_timeout: Optional[float] = None

    def secrets(self) -> Set[str]:
        """Credentials inside the options (a dict kubeconfig, a proxy URL's password), for no_log_values."""
        return kubeconfig_secrets(self.kubeconfig) | url_secrets(self.proxy)


def scrub_text(text: object, secrets: Iterable[str]) -> str:
    """``text`` without URL user info and without any of ``secrets`` (those of at least _MIN_SECRET_LENGTH)."""
    return redact(safe_url(text), secrets, _MIN_SECRET_LENGTH)


def temp_file_kwarg(loader: Callable[..., Any], tmpdir: str) -> Dict[str, str]:
    """``temp_file_path`` for the kubeconfig loaders that take it (older clients write to the system temp dir)."""
    try:
        accepted = inspect.signature(loader).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return {}
    return {"temp_file_path": tmpdir} if "temp_file_path" in accepted else {}


def build_configuration(connection: K8sConnection, tmpdir: str) -> Tuple[Any, List[str]]:
    """Return (Configuration, secrets) for the options; never touches the process-wide default configuration.
    The kubernetes library must be importable (``client.require_kubernetes``)."""
    # Untyped library modules: their attributes are Any.
    k8s_client_mod = importlib.import_module("kubernetes.client")
    k8s_config = importlib.import_module("kubernetes.config")
    ConfigException = importlib.import_module("kubernetes.config.config_exception").ConfigException

    configuration: Any = k8s_client_mod.Configuration()
    kubeconfig = connection.kubeconfig
    context = connection.context
    host = connection.host
    api_key = connection.api_key
    secrets = [api_key] if api_key else []
    secrets.extend(connection.secrets())

    def load_kubeconfig(source: Union[str, Dict[str, Any], None]) -> None:
        try:
            if isinstance(source, dict):
                k8s_config.load_kube_config_from_dict(
                    config_dict=source,
                    context=context,
                    client_configuration=configuration,
                    persist_config=False,
                    **temp_file_kwarg(k8s_config.load_kube_config_from_dict, tmpdir),
                )
            else:
                if source is None:
                    source = os.environ.get("KUBECONFIG") or "~/.kube/config"
                paths = [os.path.expanduser(p) for p in str(source).split(os.pathsep) if p]
                if not any(os.path.exists(p) for p in paths):
                    raise K8sError(f"kubeconfig file {', '.join(paths)} does not exist")
                k8s_config.load_kube_config(
                    config_file=os.pathsep.join(paths),
                    context=context,
                    client_configuration=configuration,
                    persist_config=False,
                    **temp_file_kwarg(k8s_config.load_kube_config, tmpdir),
                )
        except K8sError:
            raise
        except (ConfigException, ValueError, TypeError, KeyError, OSError) as exc:
            where = "the kubeconfig given as a dict" if isinstance(source, dict) else f"kubeconfig {source}"
            message = f"cannot load {where}{f' (context {context})' if context else ''}: {exc}"
            raise K8sError(scrub_text(message, secrets)) from None

    if kubeconfig is not None and not isinstance(kubeconfig, (str, dict)):
        raise K8sError(f"kubeconfig must be a path or a dict, got {type(kubeconfig).__name__}")
    if kubeconfig or context:
        load_kubeconfig(kubeconfig or None)
    elif host:
        pass
    else:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except ConfigException:
            try:
                load_kubeconfig(None)
            except K8sError as exc:
                raise K8sError(
                    "no Kubernetes connection configured: give host (and api_key or client certificates) or kubeconfig, "
                    f"or run in a pod with a service account ({exc})"
                ) from None

    # Explicit options win over what the kubeconfig or service account provided. The kubeconfig loader installs a
    # hook that re-copies its settings before every request; re-apply the explicit ones after it.
    overrides: Dict[str, Any] = {}
    if host:
        overrides["host"] = host.rstrip("/")
    if connection.validate_certs is not None:
        overrides["verify_ssl"] = bool(connection.validate_certs)
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        value = getattr(connection, option)
        if value:
            if not os.path.isfile(value):
                raise K8sError(f"{option} file {value} does not exist")
            overrides[attribute] = value
    if connection.proxy:
        overrides["proxy"] = connection.proxy

    def apply_overrides(cfg: Any) -> None:
        for attribute, value in overrides.items():
            setattr(cfg, attribute, value)
        if api_key:
            cfg.api_key = {"authorization": "Bearer " + api_key}
            cfg.api_key_prefix = {}

    apply_overrides(configuration)
    loader_hook: Any = getattr(configuration, "refresh_api_key_hook", None)
    if loader_hook is not None and (overrides or api_key):

        def refresh_then_override(cfg: Any) -> None:
            loader_hook(cfg)
            apply_overrides(cfg)
            # The loader's hook re-installs itself; keep this wrapper in front of it.
            cfg.refresh_api_key_hook = refresh_then_override

        configuration.refresh_api_key_hook = refresh_then_override

    for value in (configuration.api_key or {}).values():
        if value:
            secrets.append(value)
            secrets.append(value.split(" ", 1)[-1])
    # A kubeconfig's cluster may name a proxy (proxy-url) with user info as well.
    secrets.extend(url_secrets(getattr(configuration, "proxy", None)))
    if not configuration.host:
        raise K8sError("no Kubernetes API server URL: give host or a kubeconfig with a cluster server")
    return configuration, secrets
