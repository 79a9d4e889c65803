# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""containerd's registry hosts (``hosts.toml`` under the CRI plugin's ``config_path``), read as containerd reads them.

containerd never reads registries.conf. For a pull of ``host[:port]/repo`` its CRI plugin looks, in each root of
``config_path`` in turn, for the directory ``host_port_``, then ``host:port``, then ``_default``; the first that
exists holds ``hosts.toml`` (or, without one, Docker-style ``*.crt``/``*.cert``/``*.key`` files). The ``[host]``
tables are tried first, in file order, then ``server`` or the registry itself (containerd
``core/remotes/docker/config/hosts.go``: ``ConfigureHosts``, ``parseHostsFile``, ``hostPaths``, ``loadCertFiles``).
Where ``config_path`` is: CRI ``Status(verbose)`` on 1.6/1.7 (``registry.configPath``), the config file on 2.x.
"""

from __future__ import annotations

import glob
import ipaddress
import json
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import read_config_text, short_value
from ansible_collections.pinned.images.plugins.module_utils._common.host_root import host_path
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig, RegistryCredentials
from ansible_collections.pinned.images.plugins.module_utils._registry.client import HostEndpoint
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    PullSource,
    RegistriesConf,
    RegistriesConfError,
    load_toml,
)

__all__ = [
    "ALL_CAPABILITIES",
    "DEFAULT_CONFIG_PATH_2_2",
    "DEFAULT_CONTAINERD_CONFIG",
    "DISTRIBUTION_CONFIGS",
    "MAX_HOSTS_FILE",
    "ContainerdHosts",
    "ContainerdHostsError",
    "HostConfig",
    "RegistryHostsConfig",
    "check_tls_files",
    "configure_hosts",
    "containerd_credentials",
    "endpoints",
    "find_host_dir",
    "from_config_file",
    "from_cri_status",
    "host_directory",
    "image_settings",
    "host_paths",
    "is_loopback",
    "load_cert_files",
    "load_host_dir",
    "locate",
    "parse_hosts_file",
    "pull_mode",
    "read_config",
    "registry_headers",
    "split_config_path",
    "uses_http_fallback",
]

DEFAULT_CONTAINERD_CONFIG = "/etc/containerd/config.toml"
# Where k3s and RKE2 write the config of the containerd they run; tried, in order, when the default is absent.
DISTRIBUTION_CONFIGS = (
    "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
    "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
)
# containerd 2.2 and later use this list when neither config_path nor the deprecated mirrors is set.
DEFAULT_CONFIG_PATH_2_2 = "/etc/containerd/certs.d:/etc/docker/certs.d"
ALL_CAPABILITIES = frozenset(("pull", "resolve", "push", "referrers"))
MAX_HOSTS_FILE = 1024 * 1024
# The CRI plugin's table by config version: its registry settings are in "<table>".registry.
_CRI_TABLES = {1: "cri", 2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.images"}
_DURATION = re.compile(r"^(?:[0-9]+(?:\.[0-9]*)?(?:ns|us|µs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ContainerdHostsError(RegistriesConfError):
    """A hosts.toml, its CA or client files, or containerd's config file cannot be used; names the file and key."""


@dataclass(frozen=True)
class HostConfig:
    """One entry of a host directory (containerd's ``hostConfig``); ``host`` empty means "the registry itself"."""

    scheme: str = ""
    host: str = ""
    path: str = ""
    capabilities: FrozenSet[str] = ALL_CAPABILITIES
    ca: Optional[Tuple[str, ...]] = None
    client: Optional[Tuple[Tuple[str, str], ...]] = None
    skip_verify: Optional[bool] = None
    header: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    dial_timeout: Optional[float] = None
    source: str = ""


def host_directory(host: str) -> str:
    """``host:port`` as containerd names its directory, ``host_port_`` (``hostDirectory``)."""
    index = host.rfind(":")
    if index > 0:
        return host[:index] + "_" + host[index + 1 :] + "_"
    return host


def host_paths(root: str, host: str) -> List[str]:
    """The directories tried for ``host`` under one root, in order (``hostPaths``)."""
    paths = []
    if host_directory(host) != host:
        paths.append(os.path.join(root, host_directory(host)))
    return paths + [os.path.join(root, host), os.path.join(root, "_default")]


def find_host_dir(roots: Sequence[str], host: str) -> Optional[str]:
    """The first existing directory for ``host`` over the roots (``hostDirFromRoots``), or None."""
    for root in roots:
        for path in host_paths(root, host):
            if os.path.exists(path):
                return path
    return None


def is_loopback(host: str) -> bool:
    """containerd's ``IsLocalhost``: ``localhost`` or a loopback IP, with or without a port."""
    name = host
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        name = host.split(":", 1)[0]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _port(host: str) -> str:
    if host.startswith("["):
        rest = host[host.find("]") + 1 :] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.rsplit(":", 1)[1] if host.count(":") == 1 else ""


def _strings(value: object, where: str, base: str, root: Optional[str]) -> Tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ContainerdHostsError(f"{where}: must be a string or a list of strings, got {short_value(value)}")
    return tuple(_absolute(item, base, root) for item in items)


def _absolute(path: str, base: str, root: Optional[str]) -> str:
    # An absolute path in hosts.toml is the node's: under host_root when the module sees the node from a pod.
    return host_path(root, path) if os.path.isabs(path) else os.path.join(base, path)


def _client_pairs(value: object, where: str, base: str, root: Optional[str]) -> Tuple[Tuple[str, str], ...]:
    """``client``: a file, a list of files, or a list of [cert, key] pairs (an empty key: the key is in the cert)."""
    if isinstance(value, str):
        return ((_absolute(value, base, root), ""),)
    if not isinstance(value, list):
        raise ContainerdHostsError(
            f"{where}: must be a path, a list of paths or a list of [cert, key] pairs, got {short_value(value)}"
        )
    pairs = []
    for item in value:
        if isinstance(item, str):
            pairs.append((_absolute(item, base, root), ""))
            continue
        if not isinstance(item, list) or len(item) != 2 or not all(isinstance(p, str) for p in item):
            raise ContainerdHostsError(f"{where}: {short_value(item)} is not a [cert, key] pair")
        pairs.append((_absolute(item[0], base, root), _absolute(item[1], base, root) if item[1] else ""))
    return tuple(pairs)


def _duration(value: object, where: str) -> float:
    """A Go duration (``3s``, ``1m30s``, ``500ms``) in seconds."""
    if not isinstance(value, str) or not _DURATION.match(value):
        raise ContainerdHostsError(f"{where}: {short_value(value)} is not a duration such as 3s or 500ms")
    return sum(float(number) * _SECONDS[unit] for number, unit in _DURATION_PART.findall(value))


def _parse_host_config(
    server: str, base: str, table: Mapping[str, Any], where: str, source: str, root: Optional[str]
) -> HostConfig:
    """containerd's ``parseHostConfig`` for one ``[host."..."]`` table or the top level (``server``)."""
    scheme = host = path = ""
    override = table.get("override_path", False)
    if not isinstance(override, bool):
        raise ContainerdHostsError(f"{where}.override_path: must be true or false, got {short_value(override)}")
    if server:
        url = server if server.startswith("http") else "https://" + server
        match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)([^?#]*)", url)
        if not match or not match.group(2):
            raise ContainerdHostsError(f"{where}: cannot parse server {short_value(server)}")
        scheme, host, path = match.group(1), match.group(2), match.group(3)
        if path:
            path = os.path.normpath(path)
            path = "/" + path.lstrip("/") if path.startswith("//") else path
            if not path.endswith("/v2") and not override:
                path += "/v2"
        elif not override:
            path = "/v2"
    skip_verify = table.get("skip_verify")
    if skip_verify is not None and not isinstance(skip_verify, bool):
        raise ContainerdHostsError(f"{where}.skip_verify: must be true or false, got {short_value(skip_verify)}")
    capabilities = ALL_CAPABILITIES
    if table.get("capabilities"):
        names = table["capabilities"]
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise ContainerdHostsError(f"{where}.capabilities: must be a list of strings")
        unknown = [name for name in names if name.lower() not in ALL_CAPABILITIES]
        if unknown:
            raise ContainerdHostsError(
                f"{where}.capabilities: unknown capability {unknown[0]!r}; allowed: pull, resolve, push, referrers"
            )
        capabilities = frozenset(name.lower() for name in names)
    ca = _strings(table["ca"], f"{where}.ca", base, root) if "ca" in table else None
    client = _client_pairs(table["client"], f"{where}.client", base, root) if "client" in table else None
    header: List[Tuple[str, Tuple[str, ...]]] = []
    headers = table.get("header")
    if headers is not None:
        if not isinstance(headers, dict):
            raise ContainerdHostsError(f"{where}.header: must be a table")
        for key, value in headers.items():
            values = [value] if isinstance(value, str) else value
            if not isinstance(values, list) or not all(isinstance(item, str) for item in values):
                raise ContainerdHostsError(f"{where}.header.{key}: must be a string or a list of strings")
            header.append((key, tuple(values)))
    timeout = _duration(table["dial_timeout"], f"{where}.dial_timeout") if table.get("dial_timeout") else None
    return HostConfig(scheme, host, path, capabilities, ca, client, skip_verify, tuple(header), timeout, source)


def parse_hosts_file(base: str, text: str, source: str = "hosts.toml", root: Optional[str] = None) -> List[HostConfig]:
    """The entries of one hosts.toml: its ``[host]`` tables in file order, then the top level (``server``).

    Relative ``ca`` and ``client`` paths are under ``base`` (the host directory), absolute ones (the node's) under
    ``root``, the host root (``_common/host_root.host_path``). Raises ContainerdHostsError
    naming ``source`` and the key.
    """
    data = load_toml(text, source, ContainerdHostsError)
    server = data.get("server", "")
    if not isinstance(server, str):
        raise ContainerdHostsError(f"{source}: server must be a string, got {short_value(server)}")
    tables = data.get("host") or {}
    if not isinstance(tables, dict):
        raise ContainerdHostsError(f'{source}: host must be a table of [host."<url>"] tables')
    hosts = []
    # The [host."..."] tables in file order (containerd's getSortedHosts): TOML readers keep the order of tables.
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ContainerdHostsError(f"{source}: host.{json.dumps(name)} must be a table")
        hosts.append(_parse_host_config(name, base, table, f"{source}: host.{json.dumps(name)}", source, root))
    hosts.append(_parse_host_config(server, base, data, f"{source}: top level", source, root))
    return hosts


def load_cert_files(directory: str) -> List[HostConfig]:
    """A host directory without hosts.toml: ``*.crt`` are CAs, ``*.cert`` with its ``*.key`` a client pair
    (``loadCertFiles``); one entry for the registry itself."""
    ca: List[str] = []
    pairs: List[Tuple[str, str]] = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isdir(path):
            continue
        if name.endswith(".crt"):
            ca.append(path)
        if name.endswith(".cert"):
            key = path[: -len(".cert")] + ".key"
            pairs.append((path, key if os.path.exists(key) else ""))
    return [HostConfig(ca=tuple(ca) or None, client=tuple(pairs) or None, source=directory)]


def load_host_dir(directory: str, root: Optional[str] = None) -> List[HostConfig]:
    """The entries of one host directory (``loadHostDir``); ContainerdHostsError for a hosts.toml that does not
    parse (containerd logs it and falls back to the directory's certificate files; the guard refuses to guess)."""
    path = os.path.join(directory, "hosts.toml")
    if not os.path.exists(path):
        return load_cert_files(directory)
    text = read_config_text(path, "containerd hosts file", MAX_HOSTS_FILE, ContainerdHostsError)
    if not text.strip():
        return load_cert_files(directory)
    return parse_hosts_file(directory, text, path, root)


def configure_hosts(host: str, roots: Sequence[str], root: Optional[str] = None) -> List[HostConfig]:
    """Where containerd's CRI plugin sends a pull from registry ``host``, in order (``ConfigureHosts`` with the
    options the CRI plugin passes: no default scheme, no default TLS)."""
    directory = find_host_dir(roots, host)
    hosts = load_host_dir(directory, root) if directory else [HostConfig(source="default")]
    if hosts and not hosts[-1].host:
        last = hosts[-1]
        scheme, name, skip_verify = "https", host, last.skip_verify
        if host == "docker.io":
            name = "registry-1.docker.io"
        elif is_loopback(host):
            port = _port(host)
            scheme = "https" if port in ("", "443") else "http"
            if port != "80":
                skip_verify = True
        hosts[-1] = HostConfig(
            scheme,
            name,
            "/v2",
            ALL_CAPABILITIES,
            last.ca,
            last.client,
            skip_verify,
            last.header,
            last.dial_timeout,
            last.source,
        )
    return hosts


def uses_http_fallback(config: HostConfig) -> bool:
    """containerd tries HTTPS first, then HTTP, for an ``http`` host with TLS settings on a port other than 80."""
    explicit_tls = config.ca is not None or config.client is not None or config.skip_verify is not None
    return config.scheme == "http" and explicit_tls and _port(config.host) != "80"


def endpoints(
    host: str,
    roots: Sequence[str],
    digest: bool,
    headers: Tuple[Tuple[str, Tuple[str, ...]], ...] = (),
    root: Optional[str] = None,
) -> List[HostEndpoint]:
    """The hosts a manifest of registry ``host`` is read from, in containerd's order: those with ``pull`` (and
    ``resolve`` for a tag), with ``?ns=<host>`` on mirrors, their TLS files checked."""
    wanted = {"pull"} if digest else {"pull", "resolve"}
    found = []
    for config in configure_hosts(host, roots, root):
        if not wanted <= config.capabilities:
            continue
        check_tls_files(config)
        fallback = uses_http_fallback(config)
        proxy = config.host != host and not (host == "docker.io" and config.host == "registry-1.docker.io")
        found.append(
            HostEndpoint(
                scheme=config.scheme,
                netloc=config.host,
                path=config.path,
                namespace=host if proxy else "",
                # The CRI plugin's registry.headers go to every host, before the host's own (dockerBase.request).
                headers=_merge_headers(headers, config.header),
                ca_files=config.ca,
                client_pairs=config.client or (),
                skip_verify=bool(config.skip_verify),
                http_fallback=fallback,
                source=config.source,
            )
        )
    return found


def _merge_headers(*groups: Tuple[Tuple[str, Tuple[str, ...]], ...]) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    merged: Dict[str, Tuple[str, ...]] = {}
    for group in groups:
        for name, values in group:
            merged[name] = merged.get(name, ()) + values
    return tuple(merged.items())


def registry_headers(registry: Mapping[str, Any], where: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """The CRI plugin's ``registry.headers`` (name -> list of values)."""
    headers = registry.get("headers") or {}
    if not isinstance(headers, dict) or not all(
        isinstance(values, list) and all(isinstance(v, str) for v in values) for values in headers.values()
    ):
        raise ContainerdHostsError(f"{where} headers: must map each header name to a list of strings")
    return tuple((str(name), tuple(values)) for name, values in headers.items())


def check_tls_files(config: HostConfig) -> None:
    """Every ``ca`` and ``client`` file exists, as containerd needs them before it sends a request."""
    for path in config.ca or ():
        if not os.path.isfile(path):
            raise ContainerdHostsError(f"{config.source}: ca {path} of host {config.host} does not exist")
    for cert, key in config.client or ():
        for path in (cert, key):
            if path and not os.path.isfile(path):
                raise ContainerdHostsError(f"{config.source}: client {path} of host {config.host} does not exist")


@dataclass(frozen=True)
class RegistryHostsConfig:
    """Where a containerd node's registry hosts are: the roots of ``config_path`` (empty: none) and what told us."""

    roots: Tuple[str, ...]
    origin: str
    warnings: Tuple[str, ...] = ()
    # registry.headers of the CRI plugin, sent to every host.
    headers: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    # How the CRI plugin pulls (``pull_mode``): "local" or "transfer" ("" when no config told), and why.
    pull_mode: str = ""
    pull_mode_reason: str = ""
    # The config files read, the main one first, then its imports.
    files: Tuple[str, ...] = ()


def split_config_path(value: str) -> Tuple[str, ...]:
    """``config_path`` as containerd splits it (``filepath.SplitList``: ``:``-separated, empty entries dropped)."""
    return tuple(part for part in value.split(os.pathsep) if part)


def _deprecated_warnings(where: str, registry: Mapping[str, Any], config_path: object) -> List[str]:
    """The deprecated registry settings containerd uses, which the guard does not follow: ``mirrors`` (only
    without config_path) and ``configs`` (TLS without config_path; credentials for pulls given none)."""
    warnings = []
    if registry.get("mirrors") and not config_path:
        warnings.append(
            f"{where} sets the deprecated registry.mirrors; the disk guard cannot follow it and reads "
            "manifests from each image's own registry: move the mirrors to hosts.toml files under "
            "config_path"
        )
    if registry.get("configs"):
        warnings.append(
            f"{where} sets the deprecated registry.configs (TLS, credentials per registry); the disk "
            "guard does not use them: move TLS settings to hosts.toml files under config_path and "
            "credentials to the pull secret"
        )
    return warnings


def from_cri_status(info: Mapping[str, str]) -> Optional[RegistryHostsConfig]:
    """containerd 1.6/1.7: ``registry.configPath`` of the CRI config in ``Status(verbose)``; None when the answer
    has no ``registry`` (containerd 2.x, which reports only its runtime config there)."""
    try:
        config = json.loads(info.get("config") or "{}")
    except ValueError:
        return None
    registry = config.get("registry") if isinstance(config, dict) else None
    if not isinstance(registry, dict):
        return None
    path = registry.get("configPath") or ""
    warnings = tuple(_deprecated_warnings("containerd's CRI config (Status)", registry, path))
    return RegistryHostsConfig(
        split_config_path(path) if isinstance(path, str) else (),
        "CRI Status",
        warnings,
        registry_headers(registry, "containerd's CRI config (Status) registry"),
    )


def _table(data: Mapping[str, Any], keys: Sequence[str]) -> Mapping[str, Any]:
    for key in keys:
        value = data.get(key)
        if not isinstance(value, dict):
            return {}
        data = value
    return data


# How deep ``imports`` may nest (containerd itself imports only one level; a loop must end).
_MAX_IMPORT_DEPTH = 4


def _merge_tables(into: Dict[str, Any], data: Mapping[str, Any]) -> None:
    """``data`` over ``into``: tables merged key by key, lists appended, other values replaced (containerd's
    ``mergeConfig``, which merges with override and appends slices)."""
    for key, value in data.items():
        current = into.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            _merge_tables(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            into[key] = current + [item for item in value if item not in current]
        else:
            into[key] = json.loads(json.dumps(value)) if isinstance(value, (dict, list)) else value


def _import_paths(parent: str, data: Mapping[str, Any], root: Optional[str]) -> List[str]:
    """The files ``imports`` names (``resolveImports``): relative to the importing file, globs expanded; an absolute
    path is the node's, under ``root``."""
    names = data.get("imports") or []
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ContainerdHostsError(f"containerd config file {parent}: imports must be a list of paths")
    paths = []
    for name in names:
        path = host_path(root, name) if os.path.isabs(name) else os.path.join(os.path.dirname(parent), name)
        path = os.path.normpath(path)
        paths.extend(sorted(glob.glob(path)) if "*" in path else [path])
    return paths


def read_config(path: str, root: Optional[str] = None) -> Tuple[Dict[str, Any], Tuple[str, ...]]:
    """(the config of ``path`` with its ``imports`` merged in, the files read): an imported file that does not exist
    is skipped, as containerd skips it."""
    text = read_config_text(path, "containerd config file", MAX_HOSTS_FILE, ContainerdHostsError)
    data: Dict[str, Any] = dict(load_toml(text, f"containerd config file {path}", ContainerdHostsError))
    files = [path]
    pending = [(imported, 1) for imported in _import_paths(path, data, root)]
    while pending:
        imported, depth = pending.pop(0)
        if imported in files or not os.path.exists(imported) or depth > _MAX_IMPORT_DEPTH:
            continue
        text = read_config_text(imported, "containerd config file", MAX_HOSTS_FILE, ContainerdHostsError)
        part = load_toml(text, f"containerd config file {imported}", ContainerdHostsError)
        files.append(imported)
        pending.extend((name, depth + 1) for name in _import_paths(imported, part, root))
        _merge_tables(data, {key: value for key, value in part.items() if key not in ("version", "imports")})
    return data, tuple(files)


# containerd's CheckLocalImagePullConfigs (internal/cri/config/config.go): the CRI image settings the transfer
# service does not support, each of which makes 2.1+ fall back to local pulls. (key, the value that triggers it:
# a predicate on the value as set; absent keys keep containerd's defaults, which trigger nothing.)
_LOCAL_PULL_TRIGGERS: Tuple[Tuple[str, str, Any], ...] = (
    ("disable_snapshot_annotations", "= false", lambda value: value is False),
    ("discard_unpacked_layers", "= true", lambda value: value is True),
    ("registry.mirrors", "set", bool),
    ("registry.configs", "set", bool),
    ("registry.auths", "set", bool),
    ("max_concurrent_downloads", "other than 3", lambda value: value != 3),
    ("image_pull_with_sync_fs", "= true", lambda value: value is True),
)
# A version 2 config keeps these under [plugins."io.containerd.grpc.v1.cri".containerd] (2.x migrates them).
_V2_CONTAINERD_KEYS = ("snapshotter", "disable_snapshot_annotations", "discard_unpacked_layers")


def image_settings(data: Mapping[str, Any]) -> Dict[str, Any]:
    """The CRI plugin's image settings of a config, as containerd 2.x reads them whatever the version (a version 2
    config migrated as ``plugins/cri/images`` ``migrateConfig`` does): ``registry``, ``snapshotter``, the local-pull
    triggers, ``use_local_image_pull``."""
    version = data.get("version", 1) if data else 3
    if version not in _CRI_TABLES:
        return {}
    table = dict(_table(data, ("plugins", _CRI_TABLES[version])))
    if version < 3:
        containerd = table.get("containerd")
        if isinstance(containerd, dict):
            table.update({key: containerd[key] for key in _V2_CONTAINERD_KEYS if key in containerd})
        table.pop("use_local_image_pull", None)
    return table


def pull_mode(data: Mapping[str, Any], runtime_version: str) -> Tuple[str, str]:
    """("local" or "transfer", why): how containerd's CRI plugin pulls with the config ``data``. Before 2.1 every
    CRI pull is local; 2.1 and later pull through the transfer service unless ``use_local_image_pull = true`` or a
    setting the transfer service does not support makes it fall back (``CheckLocalImagePullConfigs``)."""
    version = data.get("version", 1) if data else 3
    if runtime_version and not _version_at_least(runtime_version, (2, 1)):
        return "local", f"containerd {runtime_version} pulls locally (the transfer service pulls from 2.1 on)"
    if not runtime_version and version != 3:
        return "local", "a version 1 or 2 config is containerd 1.x's (local pulls), or migrated by 2.x"
    settings = image_settings(data)
    if settings.get("use_local_image_pull") is True:
        return "local", "use_local_image_pull = true"
    value = settings.get("registry")
    registry: Mapping[str, Any] = value if isinstance(value, dict) else {}
    for key, said, triggers in _LOCAL_PULL_TRIGGERS:
        source: Mapping[str, Any] = registry if key.startswith("registry.") else settings
        name = key.split(".", 1)[1] if key.startswith("registry.") else key
        if name in source and triggers(source[name]):
            return "local", f"{key} {said}, which the transfer service does not support"
    shown = f"containerd {runtime_version}" if runtime_version else "containerd 2.1+"
    return "transfer", f"{shown} pulls through the transfer service (no local-pull setting)"


def from_config_file(
    path: str, runtime_version: str = "", must_exist: bool = False, root: Optional[str] = None
) -> RegistryHostsConfig:
    """containerd 2.x: ``config_path`` from its config file (with its ``imports``), version 3
    (``plugins."io.containerd.cri.v1.images".registry``), 2 (``plugins."io.containerd.grpc.v1.cri".registry``) or 1
    (``plugins.cri.registry``). A missing file is containerd's defaults (an error when ``must_exist``): no hosts
    before 2.2, ``DEFAULT_CONFIG_PATH_2_2`` from 2.2 on. The pull mode decides how a list is read: the transfer
    service takes it as one directory name (containerd #12415), so the guard does too."""
    data: Mapping[str, Any] = {}
    files: Tuple[str, ...] = ()
    if os.path.exists(path) or must_exist:
        data, files = read_config(path, root)
    # A file without ``version`` is version 1, which containerd 2.x migrates; no file at all is the defaults.
    version = data.get("version", 1) if data else 3
    if version not in _CRI_TABLES:
        raise ContainerdHostsError(f"containerd config file {path}: version {short_value(version)} is not 1, 2 or 3")
    keys = ("plugins", _CRI_TABLES[version], "registry")
    registry = _table(data, keys)
    where = f"{path} [{'.'.join(json.dumps(k) if '.' in k else k for k in keys)}]"
    value = registry.get("config_path", "")
    if not isinstance(value, str):
        raise ContainerdHostsError(f"{where} config_path: must be a string, got {short_value(value)}")
    warnings = _deprecated_warnings(where, registry, value)
    if not value and not registry.get("mirrors") and _version_at_least(runtime_version, (2, 2)):
        value = DEFAULT_CONFIG_PATH_2_2
    roots = split_config_path(value)
    mode, reason = pull_mode(data, runtime_version)
    if len(roots) > 1 and mode == "transfer":
        warnings.append(
            f"{where} config_path {value!r} is a list, and {reason}: the transfer service takes the list as one "
            "directory name, so containerd reads none of its hosts.toml files and pulls every image from its own "
            "registry (containerd #12415, no fixed release); the disk guard does the same: set one directory, "
            "or use_local_image_pull = true"
        )
        roots = (value,)
    return RegistryHostsConfig(roots, path, tuple(warnings), registry_headers(registry, where), mode, reason, files)


def _version_at_least(version: str, wanted: Tuple[int, int]) -> bool:
    match = re.match(r"^v?([0-9]+)\.([0-9]+)", version)
    return match is not None and (int(match.group(1)), int(match.group(2))) >= wanted


def locate(
    status_info: Optional[Mapping[str, str]],
    runtime_version: str,
    config_file: Optional[str] = None,
    config_path: Optional[str] = None,
    candidates: Sequence[str] = (DEFAULT_CONTAINERD_CONFIG,) + DISTRIBUTION_CONFIGS,
    root: Optional[str] = None,
) -> RegistryHostsConfig:
    """The node's registry hosts: ``config_path`` when given (the option), else CRI Status (1.6/1.7), else the
    config file (2.x): ``config_file``, or the first of ``candidates`` that exists (the one the runtime's process
    names, or its layout's defaults: ``_cri/layout``); none: containerd's defaults. ``root``: the host root, under
    which absolute ``imports`` are read."""
    if config_path is not None:
        return RegistryHostsConfig(split_config_path(config_path), "the containerd_config_path option")
    if config_file is None and status_info is not None:
        found = from_cri_status(status_info)
        if found is not None:
            return found
    if config_file is None:
        config_file = next((path for path in candidates if os.path.exists(path)), None)
        if config_file is None:
            if not candidates:
                return replace(from_config_file("", runtime_version), origin="containerd's built-in defaults")
            return from_config_file(candidates[0], runtime_version)
    return from_config_file(config_file, runtime_version, must_exist=True, root=root)


def containerd_credentials(config: DockerConfig, ref: ImageRef) -> Optional[RegistryCredentials]:
    """The credentials containerd's CRI plugin offers to a host of ``ref``'s pull.

    The prefetch passes one ``AuthConfig`` per pull, the pull secret's entry for the image's own name, with
    ``server_address`` empty; containerd's ``ParseAuth`` (internal/cri/server/images/image_pull.go) then returns
    it for every host, and its authorizer (core/remotes/docker/authorizer.go, ``AddResponses``) sends it only to a
    host that answers 401: a mirror that does not ask never gets it. ``ParseAuth`` takes ``username`` and
    ``password`` first, else an identity token; it ignores a registry token, so do we.
    """
    found = config.credentials_for(ref.name)
    if found is None:
        return None
    if found.username:
        return RegistryCredentials(found.username, found.password, extra_secrets=found.secrets())
    if found.identity_token:
        return RegistryCredentials(identity_token=found.identity_token, extra_secrets=found.secrets())
    return None


@dataclass(frozen=True)
class ContainerdHosts:
    """A containerd node's pull sources: the hosts of ``config`` for every registry, except those an explicit
    override (the ``registry_mirrors`` option, an explicit ``registries_conf``) names."""

    config: RegistryHostsConfig
    overrides: RegistriesConf
    # The host root the config's roots are already under; absolute paths in hosts.toml go under it too.
    host_root: Optional[str] = None

    def describe(self) -> str:
        """Which files give the node's hosts, for the result."""
        roots = ", ".join(self.config.roots) or "none"
        return f"containerd hosts.toml under config_path {roots} (from {self.config.origin})"

    def pull_sources(self, ref: ImageRef) -> List[PullSource]:
        """The hosts containerd tries for ``ref``, in order; all but the last are skipped on failure."""
        if self.overrides.find_registry(ref) is not None:
            return self.overrides.pull_sources(ref)
        found = endpoints(ref.registry, self.config.roots, ref.digest is not None, self.config.headers, self.host_root)
        if not found:
            needed = "pull" if ref.digest else "pull and resolve"
            raise ContainerdHostsError(
                f"no host of {ref.registry} has the capabilities {needed} that a pull of "
                f"{ref} needs (containerd: no resolve hosts)"
            )
        last = len(found) - 1
        return [PullSource(ref, endpoint.netloc, False, index < last, endpoint) for index, endpoint in enumerate(found)]
