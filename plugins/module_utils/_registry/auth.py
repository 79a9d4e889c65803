# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Registry credentials from a docker-config JSON file (the kubelet's node pull secret).

Keys of ``auths`` may be a host, ``host:port``, a repository path (``host/ns/repo``), with or without a
``https://`` scheme and a ``/v1/``-style suffix, or a host with ``*`` wildcard labels (``*.example.com``, as the
kubelet accepts). The most specific key wins: the longest repository-path prefix on path-component boundaries;
then an exact host before a wildcard host; among spellings of one registry, the key written exactly as the
image's host (``docker.io``) before another spelling of it (``index.docker.io``) before a URL
(``https://index.docker.io/v1/``), as containers/image looks them up; last the key text, so the order of the JSON
keys never matters. Secrets never appear in errors, ``repr`` or ``str``.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import (
    StrPath,
    read_config_text,
    short_value,
)
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import DOCKER_HUB, DOCKER_HUB_ALIASES
from ansible_collections.pinned.images.plugins.module_utils._common.secrets import REDACTED

__all__ = [
    "DEFAULT_AUTH_FILE",
    "MAX_AUTH_FILE_SIZE",
    "DockerConfig",
    "RegistryAuthError",
    "RegistryCredentials",
    "load_docker_config",
    "parse_docker_config",
]

DEFAULT_AUTH_FILE = "/var/lib/kubelet/config.json"
# A pull secret is a few kilobytes; refuse to parse anything absurd.
MAX_AUTH_FILE_SIZE = 4 * 1024 * 1024

_SECRET_FIELDS = ("password", "identity_token", "registry_token")


class RegistryAuthError(CollectionError):
    """The auth file is missing, unreadable or malformed. The message names the file and key, never a secret."""


class RegistryCredentials:
    """Credentials for one registry; ``repr`` and ``str`` redact every secret."""

    __slots__ = ("username", "password", "identity_token", "registry_token", "server_address", "_extra_secrets")

    def __init__(
        self,
        username: Optional[str] = "",
        password: Optional[str] = "",
        identity_token: Optional[str] = "",
        registry_token: Optional[str] = "",
        server_address: Optional[str] = "",
        extra_secrets: Iterable[str] = (),
    ) -> None:
        self.username = username or ""
        self.password = password or ""
        self.identity_token = identity_token or ""
        self.registry_token = registry_token or ""
        self.server_address = server_address or ""
        # The raw ``auth`` blob and the decoded "user:pass" reveal the password too.
        self._extra_secrets = frozenset(s for s in extra_secrets if s)

    def __repr__(self) -> str:
        parts = [f"username={self.username!r}"]
        for field in _SECRET_FIELDS:
            parts.append(f"{field}={REDACTED if getattr(self, field) else ''!r}")
        parts.append(f"server_address={self.server_address!r}")
        return "RegistryCredentials(" + ", ".join(parts) + ")"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RegistryCredentials):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> Tuple[str, str, str, str, str]:
        return (self.username, self.password, self.identity_token, self.registry_token, self.server_address)

    def cri_auth_fields(self) -> Dict[str, str]:
        """Keyword arguments for the CRI ``AuthConfig`` message; only non-empty fields.

        ``server_address`` stays empty, as the kubelet leaves it: containerd parses it as a URL and rejects the
        bare ``host:port`` of a docker-config key.
        """
        fields = {
            "username": self.username,
            "password": self.password,
            "identity_token": self.identity_token,
            "registry_token": self.registry_token,
        }
        return {name: value for name, value in fields.items() if value}

    def secrets(self) -> Set[str]:
        """Every secret string these credentials carry, for scrubbing error text."""
        found: Set[str] = {getattr(self, field) for field in _SECRET_FIELDS}
        found |= self._extra_secrets
        found.discard("")
        return found


def _normalise_host(host: str) -> str:
    host = host.lower()
    return DOCKER_HUB if host in DOCKER_HUB_ALIASES else host


def _split_key(key: str) -> Tuple[str, Tuple[str, ...]]:
    """``https://Host:5000/v1/ns/repo/`` -> ("host:5000", ("ns", "repo"))."""
    text = key.strip()
    lowered = text.lower()
    for scheme in ("https://", "http://"):
        if lowered.startswith(scheme):
            text = text[len(scheme) :]
            break
    host, _sep, path = text.partition("/")
    components = [c for c in path.split("/") if c]
    # docker's ResolveAuthConfig treats /v1/ and /v2/ as the bare host (https://index.docker.io/v1/).
    if components and components[0] in ("v1", "v2"):
        components = components[1:]
    return _normalise_host(host), tuple(components)


def _host_matches(pattern: str, host: str) -> bool:
    if "*" not in pattern:
        return pattern == host
    # Like the kubelet: label by label, same number of labels, and the port must be equal.
    pattern_name, _sep, pattern_port = pattern.partition(":")
    host_name, _sep, host_port = host.partition(":")
    if pattern_port != host_port:
        return False
    pattern_labels = pattern_name.split(".")
    host_labels = host_name.split(".")
    if len(pattern_labels) != len(host_labels):
        return False
    return all(fnmatch.fnmatchcase(h, p) for p, h in zip(pattern_labels, host_labels))


class _Entry:
    __slots__ = ("key", "host", "path", "credentials")

    def __init__(self, key: str, host: str, path: Tuple[str, ...], credentials: RegistryCredentials) -> None:
        self.key = key
        self.host = host
        self.path = path
        self.credentials = credentials

    def spelling_rank(self, host: str) -> int:
        """2: the key is the query's own text (``host[/path]``); 1: another bare spelling; 0: a URL."""
        if self.key == "/".join((host,) + self.path):
            return 2
        return 0 if "://" in self.key else 1


class DockerConfig:
    """The ``auths`` of one docker-config file (``path`` is None when no file was read)."""

    def __init__(self, path: Optional[str] = None, entries: Iterable[_Entry] = ()) -> None:
        self.path = path
        self._entries = list(entries)

    def __repr__(self) -> str:
        return f"DockerConfig(path={self.path!r}, keys={[e.key for e in self._entries]!r})"

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def keys(self) -> List[str]:
        """The ``auths`` keys that carry credentials, in file order."""
        return [e.key for e in self._entries]

    def credentials_for(self, name: str) -> Optional[RegistryCredentials]:
        """Credentials of the most specific key for ``host[:port]/path``, or None (anonymous)."""
        host, _sep, path = name.partition("/")
        host = _normalise_host(host)
        components = tuple(c for c in path.split("/") if c)
        candidates = [
            entry
            for entry in self._entries
            if len(entry.path) <= len(components)
            and components[: len(entry.path)] == entry.path
            and _host_matches(entry.host, host)
        ]
        if not candidates:
            return None
        best = min(candidates, key=lambda e: (-len(e.path), "*" in e.host, -e.spelling_rank(host), e.key))
        return best.credentials

    def secrets(self) -> Set[str]:
        """Every secret of every entry, for no_log_values and scrubbing."""
        found: Set[str] = set()
        for entry in self._entries:
            found |= entry.credentials.secrets()
        return found


def _field(entry: Mapping[str, Any], field: str, where: str) -> str:
    value = entry.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RegistryAuthError(f"{where}: field {field!r} must be a string, got {type(value).__name__}")
    return value


def _decode_auth(blob: str, where: str) -> tuple[str, str]:
    try:
        raw = base64.b64decode(blob.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise RegistryAuthError(f"{where}: field 'auth' is not valid base64") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryAuthError(f"{where}: field 'auth' does not decode to UTF-8 text") from None
    username, sep, password = text.partition(":")
    if not sep:
        raise RegistryAuthError(f"{where}: field 'auth' does not decode to 'username:password'")
    return username, password


def _parse_entry(key: str, entry: object, source: str) -> Optional[_Entry]:
    where = f"{source}: auths[{short_value(key)}]"
    if not isinstance(entry, dict):
        raise RegistryAuthError(f"{where} must be an object, got {type(entry).__name__}")
    host, path = _split_key(key)
    if not host:
        raise RegistryAuthError(f"{where}: key has no registry host")
    blob = _field(entry, "auth", where)
    username = _field(entry, "username", where)
    password = _field(entry, "password", where)
    extra: Tuple[str, ...] = ()
    if blob:
        # As in docker: "auth" takes precedence over separate username/password.
        username, password = _decode_auth(blob, where)
        extra = (blob, blob.strip(), f"{username}:{password}")
    identity_token = _field(entry, "identitytoken", where)
    registry_token = _field(entry, "registrytoken", where)
    if not (username or password or identity_token or registry_token):
        # An empty entry only announces a credential helper, which nodes do not run.
        return None
    credentials = RegistryCredentials(username, password, identity_token, registry_token, host, extra)
    return _Entry(key, host, path, credentials)


def parse_docker_config(text: Union[str, bytes], source: str = "<auth data>") -> DockerConfig:
    """Parse docker-config JSON text; ``source`` names it in errors."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        # The decoder's message quotes at most a position, never the document.
        position = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise RegistryAuthError(f"{source}: not valid JSON{position}") from None
    if not isinstance(document, dict):
        raise RegistryAuthError(f"{source}: top level must be a JSON object, got {type(document).__name__}")
    if "auths" in document:
        auths = document["auths"]
        if auths is None:
            auths = {}
        if not isinstance(auths, dict):
            raise RegistryAuthError(f"{source}: 'auths' must be an object, got {type(auths).__name__}")
    elif document and all(isinstance(v, dict) for v in document.values()):
        # The legacy .dockercfg layout has the registries at the top level; the kubelet reads both.
        auths = document
    else:
        auths = {}
    entries = []
    for key, entry in auths.items():
        parsed = _parse_entry(key, entry, source)
        if parsed is not None:
            entries.append(parsed)
    return DockerConfig(source, entries)


def load_docker_config(path: Optional[StrPath] = None, default_path: str = DEFAULT_AUTH_FILE) -> DockerConfig:
    """Read ``path``, else ``default_path`` when it exists, else return an empty (anonymous) config."""
    if path is None:
        if not default_path or not os.path.exists(default_path):
            return DockerConfig()
        path = default_path
    path = os.fspath(path)
    text = read_config_text(path, "auth file", MAX_AUTH_FILE_SIZE, RegistryAuthError, "utf-8-sig")
    return parse_docker_config(text, path)
