# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A Docker Registry HTTP API v2 client for manifests, for the disk estimate, and streamed blobs.

Blobs are streamed (``open_blob``), never kept whole: a reader stops when it has what it needs, and
``bytes_read`` counts what came from the network so that can be measured.

Authentication: anonymous, basic, and the bearer-token flow announced by ``WWW-Authenticate`` (token GET with
basic credentials or anonymous; OAuth2 ``refresh_token`` POST for identity tokens; a registry token is sent as is).
TLS is verified unless the source is insecure; CAs (``*.crt``) and client pairs (``*.cert``/``*.key``) come from
``certs.d/<host[:port]>/`` directories, as containers/image and docker read them. Connections are kept alive and
tokens cached per repository scope, so an estimate costs about one token and one or two manifest requests an image.
Errors name the registry and what happened; secrets never appear in them.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple, Union
from urllib.parse import quote, urlencode, urljoin, urlsplit

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef
from ansible_collections.pinned.images.plugins.module_utils._common.secrets import redact
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import RegistryCredentials
from ansible_collections.pinned.images.plugins.module_utils._registry.challenges import Challenge, parse_challenges
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    DigestMismatchError,
    ManifestFormatError,
    ManifestUnknownError,
    RegistryAuthRejected,
    RegistryConnectionError,
    RegistryError,
    RegistryTLSError,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import (
    ACCEPT,
    DOCKER_SCHEMA1,
    INDEX_TYPES,
    KNOWN_TYPES,
    MANIFEST_TYPES,
    MAX_INDEX_DEPTH,
    MAX_MANIFEST_SIZE,
    ManifestInfo,
    decode_manifest,
    guess_type,
    manifest_layers,
    select_platform,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import Platform, parse_platform
from ansible_collections.pinned.images.plugins.module_utils._registry.tls import endpoint_tls_context, tls_context
from ansible_collections.pinned.images.plugins.module_utils._registry.transport import (
    MAX_SMALL_BODY,
    BlobStream,
    Response,
    error_code,
    error_detail,
)

__all__ = ["DEFAULT_CERTS_DIRS", "DEFAULT_TIMEOUT", "HostEndpoint", "RegistryClient"]

DEFAULT_CERTS_DIRS = ("/etc/containers/certs.d", "/etc/docker/certs.d")
DEFAULT_TIMEOUT = 30.0

# Docker Hub's API lives on another host than its name.
_API_HOSTS = {"docker.io": "registry-1.docker.io"}
# Blob downloads follow at most this many redirects (registry -> CDN -> signed URL).
_MAX_REDIRECTS = 5
# Tokens are renewed this long before they expire.
_TOKEN_MARGIN = 10.0
# A cached token's key: (registry, realm, service, scopes, the identity that asked for it).
_TokenKey = Tuple[str, str, str, Tuple[str, ...], Optional[Tuple[str, str, str]]]
# A thread's kept-alive connections by (scheme, netloc, insecure).
_Pool = Dict[Tuple[str, str, bool], http.client.HTTPConnection]


@dataclass(frozen=True)
class HostEndpoint:
    """A host that serves a registry's API other than the registry itself over HTTPS at ``/v2``: a containerd
    ``hosts.toml`` host (``_registry.containerd_hosts``). Requests go to ``<scheme>://<netloc><path>/<repo>/...``,
    with ``?ns=<namespace>`` when set, the ``headers`` (also to its token server), and TLS from ``ca_files`` (None:
    the system roots), ``client_pairs`` ((cert, key); an empty key is in the cert file) and ``skip_verify``.
    ``http_fallback`` (an ``http`` host): HTTPS first, plain HTTP after a TLS failure, as containerd's
    ``NewHTTPFallback``."""

    scheme: str
    netloc: str
    path: str = "/v2"
    namespace: str = ""
    headers: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    ca_files: Optional[Tuple[str, ...]] = None
    client_pairs: Tuple[Tuple[str, str], ...] = ()
    skip_verify: bool = False
    http_fallback: bool = False
    source: str = ""

    def __str__(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.path}"

    def request_path(self, repository: str, kind: str, wanted: str) -> str:
        """containerd's ``path.Join("/", path, repository, kind, wanted)``, plus the namespace query."""
        parts = [part.strip("/") for part in (self.path, quote(repository), kind, quote(wanted, safe=":"))]
        path = "/" + "/".join(part for part in parts if part)
        return path + ("?" + urlencode({"ns": self.namespace}) if self.namespace else "")


class RegistryClient:
    """Reads manifests. ``request_count`` counts every HTTP request attempted (token requests included).

    Safe to share between threads: connections are per thread, token and scheme caches are shared.
    """

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        certs_dirs: Optional[Iterable[str]] = DEFAULT_CERTS_DIRS,
        user_agent: str = "pinned.images",
    ) -> None:
        self.timeout = timeout
        self.certs_dirs = tuple(certs_dirs or ())
        self.user_agent = user_agent
        self.request_count = 0
        self.blob_bytes_read = 0
        self._lock = threading.Lock()
        self._local = threading.local()
        # Every thread's connection pool, so close() reaches the connections of worker threads too.
        self._pools: List[_Pool] = []
        self._contexts: Dict[Tuple[Union[str, HostEndpoint], bool], ssl.SSLContext] = {}
        self._schemes: Dict[str, str] = {}
        self._challenges: Dict[str, Challenge] = {}
        self._tokens: Dict[_TokenKey, Tuple[str, float]] = {}

    # --- public API -------------------------------------------------------------------------------------------

    def get_manifest(
        self,
        ref: ImageRef,
        credentials: Optional[RegistryCredentials] = None,
        insecure: bool = False,
        reference: Optional[str] = None,
        endpoint: Optional[HostEndpoint] = None,
    ) -> Tuple[bytes, str, str]:
        """GET one manifest of ``ref`` (an ImageRef), from ``endpoint`` when given: ``(body, media_type, digest)``,
        digest verified."""
        wanted = reference or ref.digest or ref.tag or "latest"
        response = self._registry_request("GET", ref, wanted, credentials, insecure, endpoint=endpoint)
        body = response.body
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if wanted.startswith("sha256:") and digest != wanted:
            raise DigestMismatchError(
                f"registry {ref.registry} returned a manifest for {ref.name}@{wanted} whose sha256 is {digest}",
                ref.registry,
            )
        announced = response.headers.get("Docker-Content-Digest", "")
        if announced.startswith("sha256:") and announced != digest:
            raise DigestMismatchError(
                f"registry {ref.registry} announced digest {announced} for {ref.name}:{wanted} "
                f"but the manifest's sha256 is {digest}",
                ref.registry,
            )
        media_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip()
        return body, media_type, digest

    def open_blob(
        self, ref: ImageRef, digest: str, credentials: Optional[RegistryCredentials] = None, insecure: bool = False
    ) -> BlobStream:
        """Start downloading blob ``digest`` of ``ref``'s repository; redirects (to a CDN) are followed."""
        if not re.match(r"^sha256:[0-9a-f]{64}$", digest or ""):
            raise ManifestFormatError(f"{ref}: blob digest {str(digest)[:80]!r} is not sha256:<64 hex>", ref.registry)
        response = self._registry_request("GET", ref, digest, credentials, insecure, kind="blobs")
        if response.stream is None:  # pragma: no cover - _registry_request streams every 200 blob answer
            raise RegistryError(f"{ref}: blob {digest} was not streamed", ref.registry)
        raw, connection = response.stream
        return BlobStream(raw, connection, digest, f"blob {digest} of {ref.name}", ref.registry, self._count_bytes)

    def read_blob(
        self,
        ref: ImageRef,
        digest: str,
        credentials: Optional[RegistryCredentials] = None,
        insecure: bool = False,
        limit: int = MAX_SMALL_BODY,
    ) -> bytes:
        """A small blob (an image config) whole, digest verified; RegistryError above ``limit`` bytes."""
        with self.open_blob(ref, digest, credentials, insecure) as blob:
            data = blob.read(limit + 1)
            if len(data) > limit:
                raise RegistryError(f"{ref}: blob {digest} is larger than {limit} bytes", ref.registry)
            while True:
                more = blob.read(limit + 1 - len(data))
                if not more:
                    break
                data += more
                if len(data) > limit:
                    raise RegistryError(f"{ref}: blob {digest} is larger than {limit} bytes", ref.registry)
        return data

    def _count_bytes(self, count: int) -> None:
        with self._lock:
            self.blob_bytes_read += count

    def manifest_info(
        self,
        ref: ImageRef,
        credentials: Optional[RegistryCredentials] = None,
        insecure: bool = False,
        platform: Union[str, Platform, None] = None,
        endpoint: Optional[HostEndpoint] = None,
    ) -> ManifestInfo:
        """Layers of ``ref`` for ``platform`` (default: this host), read from ``endpoint`` when given (else the
        registry itself); an index is resolved to that platform."""
        wanted = parse_platform(platform)
        body, media_type, digest = self.get_manifest(ref, credentials, insecure, endpoint=endpoint)
        top_digest: str = digest
        top_type: Optional[str] = None
        chosen_platform = ""
        for _depth in range(MAX_INDEX_DEPTH):
            document = decode_manifest(ref, digest, body)
            media_type = (
                document.get("mediaType") or (media_type if media_type in KNOWN_TYPES else "") or guess_type(document)
            )
            if top_type is None:
                top_type = media_type
            if media_type in INDEX_TYPES:
                entry = select_platform(ref, digest, document, wanted)
                chosen_platform = str(wanted)
                body, media_type, digest = self.get_manifest(ref, credentials, insecure, entry, endpoint)
                continue
            if media_type in MANIFEST_TYPES:
                layers, config_size = manifest_layers(ref, digest, document)
                config_digest = (document.get("config") or {}).get("digest") or ""
                return ManifestInfo(
                    top_digest,
                    top_type,
                    digest,
                    layers,
                    config_size,
                    chosen_platform,
                    str(ref),
                    config_digest if isinstance(config_digest, str) else "",
                )
            if media_type in DOCKER_SCHEMA1:
                raise ManifestFormatError(
                    f"{ref}: registry {ref.registry} serves only a Docker schema 1 manifest, which is not supported",
                    ref.registry,
                )
            raise ManifestFormatError(
                f"{ref}: registry {ref.registry} returned unsupported manifest media type {media_type!r}", ref.registry
            )
        raise ManifestFormatError(f"{ref}: image indexes nested more than {MAX_INDEX_DEPTH} deep", ref.registry)

    # --- requests with authentication -------------------------------------------------------------------------

    def _registry_request(
        self,
        method: str,
        ref: ImageRef,
        wanted: str,
        credentials: Optional[RegistryCredentials],
        insecure: bool,
        kind: str = "manifests",
        endpoint: Optional[HostEndpoint] = None,
    ) -> Response:
        """A manifest (read whole) or, with ``kind="blobs"``, a blob (a streamed 200 answer)."""
        registry = ref.registry
        path = f"/v2/{quote(ref.repository)}/{kind}/{quote(wanted, safe=':')}"
        if endpoint is not None:
            # Challenges and tokens are kept per host, as containerd keeps one auth handler per host; credentials
            # go to a plain-HTTP token realm only from a host configured as plain HTTP.
            registry, insecure = endpoint.netloc, endpoint.scheme == "http"
            path = endpoint.request_path(ref.repository, kind, wanted)
        headers: Dict[str, str] = {"Accept": ACCEPT} if kind == "manifests" else {}
        stream = kind == "blobs"
        scope = f"repository:{ref.repository}:pull"
        secrets = credentials.secrets() if credentials is not None else set()
        authorization = self._known_authorization(registry, scope, credentials, insecure, endpoint)
        if authorization:
            headers["Authorization"] = authorization
        response = self._send(
            registry, insecure, method, path, headers, MAX_MANIFEST_SIZE, stream=stream, endpoint=endpoint
        )
        # Basic credentials that were sent and refused stay refused; a bearer token may have expired.
        if response.status == 401 and not (authorization and authorization.startswith("Basic ")):
            challenge = self._remember_challenge(registry, response)
            if authorization:
                self._drop_tokens(registry)
            headers["Authorization"] = self._authorize(registry, challenge, scope, credentials, insecure, endpoint)
            response = self._send(
                registry, insecure, method, path, headers, MAX_MANIFEST_SIZE, stream=stream, endpoint=endpoint
            )
        if stream and response.status in (301, 302, 303, 307, 308):
            response = self._follow_redirect(registry, insecure, path, response)
        # A mirror is named beside the image's registry.
        elsewhere = endpoint is not None and endpoint.netloc != _API_HOSTS.get(ref.registry, ref.registry)
        self._raise_for_status(
            response, ref, wanted, credentials, secrets, f"{ref.registry} at {endpoint}" if elsewhere else ref.registry
        )
        return response

    def _follow_redirect(self, registry: str, insecure: bool, path: str, response: Response) -> Response:
        """Blobs often live behind a redirect to storage; the registry's credentials are never sent there."""
        base = f"{self._schemes.get(registry, 'https') if insecure else 'https'}://{_API_HOSTS.get(registry, registry)}"
        for _hop in range(_MAX_REDIRECTS):
            location = urljoin(base + path, response.headers.get("Location", ""))
            split = urlsplit(location)
            if split.scheme not in ("http", "https") or not split.netloc:
                raise RegistryError(f"registry {registry} redirected {path} to an unusable location", registry)
            target = split.path + (f"?{split.query}" if split.query else "")
            response = self._send(
                split.netloc,
                insecure,
                "GET",
                target,
                {},
                MAX_SMALL_BODY,
                scheme=split.scheme,
                registry=registry,
                stream=True,
            )
            if response.status not in (301, 302, 303, 307, 308):
                return response
            base, path = f"{split.scheme}://{split.netloc}", target
        raise RegistryError(f"registry {registry} redirected {path} more than {_MAX_REDIRECTS} times", registry)

    def _known_authorization(
        self,
        registry: str,
        scope: str,
        credentials: Optional[RegistryCredentials],
        insecure: bool,
        endpoint: Optional[HostEndpoint] = None,
    ) -> Optional[str]:
        """Authorization for a registry whose challenge is already known, saving the 401 round trip."""
        challenge = self._challenges.get(registry)
        if challenge is None:
            return None
        return self._authorize(registry, challenge, scope, credentials, insecure, endpoint)

    def _remember_challenge(self, registry: str, response: Response) -> Challenge:
        header = ", ".join(response.headers.get_all("WWW-Authenticate") or [])
        challenges = dict(parse_challenges(header)) if header else {}
        for scheme in ("bearer", "basic"):
            if scheme in challenges:
                challenge = (scheme, challenges[scheme])
                self._challenges[registry] = challenge
                return challenge
        raise RegistryAuthRejected(
            f"registry {registry} requires authentication but announced no supported scheme "
            f"(WWW-Authenticate: {header[:100]!r})",
            registry,
        )

    def _authorize(
        self,
        registry: str,
        challenge: Challenge,
        scope: str,
        credentials: Optional[RegistryCredentials],
        insecure: bool,
        endpoint: Optional[HostEndpoint] = None,
    ) -> str:
        scheme, fields = challenge
        if scheme == "basic":
            if credentials is None or not (credentials.username or credentials.password):
                raise RegistryAuthRejected(
                    f"registry {registry} requires authentication (basic) and no credentials were found for it",
                    registry,
                )
            raw = f"{credentials.username}:{credentials.password}".encode("utf-8")
            return "Basic " + base64.b64encode(raw).decode("ascii")
        if credentials is not None and credentials.registry_token:
            return "Bearer " + credentials.registry_token
        return "Bearer " + self._token(registry, fields, scope, credentials, insecure, endpoint)

    def _drop_tokens(self, registry: str) -> None:
        with self._lock:
            for key in [k for k in self._tokens if k[0] == registry]:
                del self._tokens[key]

    def _token(
        self,
        registry: str,
        fields: Dict[str, str],
        scope: str,
        credentials: Optional[RegistryCredentials],
        insecure: bool,
        endpoint: Optional[HostEndpoint] = None,
    ) -> str:
        realm = fields.get("realm", "")
        service = fields.get("service", "")
        # Our own scope, not the challenge's: a remembered challenge names the repository that triggered it.
        scopes = [scope]
        identity = (
            None if credentials is None else (credentials.username, credentials.password, credentials.identity_token)
        )
        key: _TokenKey = (registry, realm, service, tuple(scopes), identity)
        cached = self._tokens.get(key)
        if cached and cached[1] > time.monotonic():
            return cached[0]
        split = urlsplit(realm)
        if split.scheme not in ("http", "https") or not split.netloc:
            raise RegistryAuthRejected(
                f"registry {registry} announced an unusable token realm {realm[:100]!r}", registry
            )
        has_secret = credentials is not None and bool(
            credentials.username or credentials.password or credentials.identity_token
        )
        if has_secret and split.scheme == "http" and not insecure:
            raise RegistryAuthRejected(
                f"registry {registry} announced a plain-HTTP token realm {split.netloc}; credentials are sent "
                "over plain HTTP only for registries marked insecure",
                registry,
            )
        query = [("service", service)] if service else []
        query += [("scope", s) for s in scopes]
        headers = {"Accept": "application/json"}
        path = split.path or "/"
        body: Optional[bytes]
        who = "anonymous"
        if credentials is not None and credentials.identity_token:
            # OAuth2 refresh-token grant, as docker does with identity tokens.
            who = "the identity token"
            form = [
                ("grant_type", "refresh_token"),
                ("refresh_token", credentials.identity_token),
                ("client_id", self.user_agent),
            ] + query
            body = urlencode(form).encode("ascii")
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            method = "POST"
            if split.query:
                path += "?" + split.query
        else:
            body = None
            method = "GET"
            if credentials is not None and (credentials.username or credentials.password):
                who = f"user {credentials.username!r}"
                raw = f"{credentials.username}:{credentials.password}".encode("utf-8")
                headers["Authorization"] = "Basic " + base64.b64encode(raw).decode("ascii")
            path += "?" + "&".join(q for q in (split.query, urlencode(query)) if q)
        response = self._send(
            split.netloc,
            insecure,
            method,
            path,
            headers,
            MAX_SMALL_BODY,
            scheme=split.scheme,
            body=body,
            registry=registry,
            endpoint=endpoint,
        )
        if response.status in (401, 403):
            raise RegistryAuthRejected(
                f"token server {split.netloc} of registry {registry} rejected {who} "
                f"(HTTP {response.status}) for scope {' '.join(scopes)}",
                registry,
            )
        if response.status != 200:
            raise RegistryError(
                f"token server {split.netloc} of registry {registry} answered HTTP {response.status}", registry
            )
        try:
            answer = json.loads(response.body.decode("utf-8"))
            token: object = answer.get("token") or answer.get("access_token")
            lifetime = float(answer.get("expires_in") or 60)
        except (ValueError, AttributeError, TypeError, UnicodeDecodeError):
            token = None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"token server {split.netloc} of registry {registry} returned no token", registry)
        with self._lock:
            self._tokens[key] = (token, time.monotonic() + max(lifetime - _TOKEN_MARGIN, 1.0))
        return token

    def _raise_for_status(
        self,
        response: Response,
        ref: ImageRef,
        wanted: str,
        credentials: Optional[RegistryCredentials],
        secrets: Set[str],
        registry: str,
    ) -> None:
        status = response.status
        if status == 200:
            return
        detail = redact(error_detail(response.body), secrets)
        suffix = f" ({detail})" if detail else ""
        target = f"{ref.name}@{wanted}" if wanted.startswith("sha256:") else f"{ref.name}:{wanted}"
        if status in (401, 403):
            if credentials is None:
                who = "anonymous access"
                suffix += "; no credentials were found for it"
            elif credentials.username:
                who = f"the credentials of user {credentials.username!r}"
            else:
                who = "the token"
            verb = "rejected" if status == 401 else "denied"
            raise RegistryAuthRejected(
                f"registry {registry} {verb} {who} for {ref.repository} (HTTP {status}){suffix}", registry
            )
        if status == 404:
            code = error_code(response.body)
            what = {"NAME_UNKNOWN": "repository unknown", "BLOB_UNKNOWN": "blob unknown"}.get(code, "manifest unknown")
            raise ManifestUnknownError(f"{what}: registry {registry} has no {target}{suffix}", registry)
        raise RegistryError(f"registry {registry} answered HTTP {status} for {target}{suffix}", registry)

    # --- transport --------------------------------------------------------------------------------------------

    def _context(self, host: Union[str, HostEndpoint], insecure: bool) -> ssl.SSLContext:
        key = (host, insecure)
        context = self._contexts.get(key)
        if context is not None:
            return context
        if isinstance(host, HostEndpoint):
            context = endpoint_tls_context(host.netloc, host.ca_files, host.client_pairs, host.skip_verify, host.source)
        else:
            context = tls_context(host, insecure, self.certs_dirs)
        with self._lock:
            self._contexts[key] = context
        return context

    def _connection(
        self, scheme: str, netloc: str, tls_host: Union[str, HostEndpoint], insecure: bool
    ) -> Tuple[http.client.HTTPConnection, bool]:
        pool: Optional[_Pool] = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = {}
            with self._lock:
                self._pools.append(pool)
        key = (scheme, netloc, insecure)
        connection = pool.get(key)
        if connection is not None:
            return connection, True
        if scheme == "https":
            connection = http.client.HTTPSConnection(
                netloc, timeout=self.timeout, context=self._context(tls_host, insecure)
            )
        else:
            connection = http.client.HTTPConnection(netloc, timeout=self.timeout)
        pool[key] = connection
        return connection, False

    def _discard(self, scheme: str, netloc: str, insecure: bool) -> None:
        connection = self._local.pool.pop((scheme, netloc, insecure), None)
        if connection is not None:
            connection.close()

    def _send(
        self,
        host: str,
        insecure: bool,
        method: str,
        path: str,
        headers: Dict[str, str],
        limit: int,
        scheme: Optional[str] = None,
        body: Optional[bytes] = None,
        registry: Optional[str] = None,
        stream: bool = False,
        endpoint: Optional[HostEndpoint] = None,
    ) -> Response:
        """One request to ``host`` (a registry name, or a token realm's netloc when ``scheme`` is given); with
        ``endpoint``, to that host (or the realm) with its TLS settings and headers."""
        registry = registry or host
        netloc = host if scheme else _API_HOSTS.get(host, host)
        tls: Union[str, HostEndpoint] = host
        # An insecure registry may speak plain HTTP: fall back once, as containers/image does.
        fallback, remembered = insecure and host == registry, host
        headers = dict(headers, **{"User-Agent": self.user_agent})
        if endpoint is not None:
            tls, remembered = endpoint, str(endpoint)
            headers.update((name, ", ".join(values)) for name, values in endpoint.headers)
            if scheme is None:
                netloc, fallback = endpoint.netloc, endpoint.http_fallback
                scheme = self._schemes.get(remembered, "https") if fallback else endpoint.scheme
        if scheme is None:
            # Plain HTTP is remembered, and used, only for sources marked insecure.
            scheme = self._schemes.get(host, "https") if insecure else "https"
        while True:
            try:
                return self._exchange(scheme, netloc, tls, insecure, method, path, headers, body, limit, stream)
            except (ssl.SSLError, ConnectionResetError, http.client.BadStatusLine) as exc:
                if fallback and scheme == "https":
                    scheme = "http"
                    with self._lock:
                        self._schemes[remembered] = "http"
                    continue
                raise self._connection_error(exc, registry, scheme, netloc, tls) from None
            except (OSError, http.client.HTTPException) as exc:
                raise self._connection_error(exc, registry, scheme, netloc, tls) from None

    def _exchange(
        self,
        scheme: str,
        netloc: str,
        tls_host: Union[str, HostEndpoint],
        insecure: bool,
        method: str,
        path: str,
        headers: Dict[str, str],
        body: Optional[bytes],
        limit: int,
        stream: bool = False,
    ) -> Response:
        for attempt in (1, 2):
            connection, reused = self._connection(scheme, netloc, tls_host, insecure)
            with self._lock:
                self.request_count += 1
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                if stream and response.status == 200:
                    # The caller reads the body and owns the connection from now on.
                    self._local.pool.pop((scheme, netloc, insecure), None)
                    return Response(response.status, response.headers, b"", (response, connection))
                data = response.read(limit + 1)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._discard(scheme, netloc, insecure)
                # A kept-alive connection the server closed meanwhile: retry once on a new one.
                if reused and attempt == 1:
                    continue
                raise
            except BaseException:
                self._discard(scheme, netloc, insecure)
                raise
            if len(data) > limit:
                self._discard(scheme, netloc, insecure)
                raise RegistryError(
                    f"registry {tls_host} sent a response larger than {limit} bytes for {path}", str(tls_host)
                )
            if response.will_close:
                self._discard(scheme, netloc, insecure)
            return Response(response.status, response.headers, data)
        raise AssertionError("unreachable")

    def _connection_error(
        self, exc: BaseException, registry: str, scheme: str, netloc: str, tls_host: Union[str, HostEndpoint]
    ) -> RegistryError:
        where = f"registry {registry} at {scheme}://{netloc}"
        if isinstance(exc, ssl.SSLCertVerificationError):
            hint = (
                f"add its CA as certs.d/{tls_host}/ca.crt or mark the registry insecure"
                if isinstance(tls_host, str)
                else f'name its CA in {tls_host.source} (ca = "...")'
            )
            return RegistryTLSError(
                f"TLS verification failed for {where}: {exc.verify_message or exc.reason}; {hint}", registry
            )
        if isinstance(exc, ssl.SSLError):
            hint = (
                "; it may speak plain HTTP, which is used only for insecure registries"
                if (exc.reason == "WRONG_VERSION_NUMBER")
                else ""
            )
            return RegistryTLSError(f"TLS handshake failed with {where}: {exc.reason or exc}{hint}", registry)
        if isinstance(exc, ConnectionRefusedError):
            return RegistryConnectionError(f"cannot connect to {where}: connection refused", registry)
        if isinstance(exc, (socket.timeout, TimeoutError)):
            return RegistryConnectionError(f"{where} timed out after {self.timeout:g} s", registry)
        if isinstance(exc, socket.gaierror):
            return RegistryConnectionError(f"cannot resolve {where}: {exc.strerror or exc}", registry)
        if isinstance(exc, OSError):
            return RegistryConnectionError(f"cannot talk to {where}: {exc.strerror or exc}", registry)
        return RegistryConnectionError(f"bad HTTP exchange with {where}: {type(exc).__name__}", registry)

    def close(self) -> None:
        """Close the kept-alive connections of every thread that used this client (after its threads are done)."""
        with self._lock:
            pools = list(self._pools)
        for pool in pools:
            for connection in pool.values():
                connection.close()
            pool.clear()

    def __enter__(self) -> "RegistryClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
