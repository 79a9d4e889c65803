# SPDX-License-Identifier: GPL-3.0-or-later
"""The one push client of the tests and the lab: registry HTTP API v2 over one keep-alive connection (monolithic
blob uploads), anonymous, with basic auth, or with a bearer token per repository."""

from __future__ import annotations

import base64
import hashlib
import http.client
import socket
import ssl
import urllib.parse
from typing import Callable, Mapping


class PushError(RuntimeError):
    """The registry answered a push with an unexpected status."""


def sha256(data: bytes) -> str:
    """The ``sha256:<hex>`` digest of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class PushClient:
    """Pushes blobs and manifests to ``host`` (``127.0.0.1:<port>``), over TLS when ``context`` or ``ca`` is given.

    ``basic`` is a (user, password) pair; ``bearer`` a function of the repository that returns a push token.
    """

    def __init__(
        self,
        host: str,
        *,
        ca: str | None = None,
        context: ssl.SSLContext | None = None,
        basic: tuple[str, str] | None = None,
        bearer: Callable[[str], str] | None = None,
        timeout: float = 60,
    ) -> None:
        if ca and context is None:
            context = ssl.create_default_context(cafile=ca)
        self.host = host
        self._context = context
        self._timeout = timeout
        self._basic = basic
        self._bearer = bearer
        self._tokens: dict[str, str] = {}
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._context is not None:
                self._conn = http.client.HTTPSConnection(self.host, timeout=self._timeout, context=self._context)
            else:
                self._conn = http.client.HTTPConnection(self.host, timeout=self._timeout)
            self._conn.connect()
            # http.client sends bodies above 2920 bytes apart from the headers: avoid 40 ms delayed-ACK stalls.
            self._conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self._conn

    def _auth(self, repository: str) -> dict[str, str]:
        if self._basic:
            return {"Authorization": "Basic " + base64.b64encode(("%s:%s" % self._basic).encode()).decode()}
        if self._bearer:
            if repository not in self._tokens:
                self._tokens[repository] = self._bearer(repository)
            return {"Authorization": "Bearer " + self._tokens[repository]}
        return {}

    def request(
        self,
        method: str,
        path: str,
        repository: str,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
        expect: int | None = None,
    ) -> tuple:
        """``(response, body)``; raises PushError on a status other than ``expect`` (any 2xx when None)."""
        conn = self._connection()
        conn.request(
            method,
            path,
            body=body,
            headers={"Content-Length": str(len(body)), **self._auth(repository), **(headers or {})},
        )
        response = conn.getresponse()
        data = response.read()
        ok = response.status == expect if expect is not None else 200 <= response.status < 300
        if not ok and method != "HEAD":
            raise PushError("%s %s: HTTP %d %r" % (method, path.split("?")[0], response.status, data[:300]))
        return response, data

    def push_blob(self, repository: str, blob: bytes) -> str:
        """Upload ``blob`` unless the registry has it; return its digest."""
        digest = sha256(blob)
        if self.request("HEAD", "/v2/%s/blobs/%s" % (repository, digest), repository)[0].status == 200:
            return digest
        started, _data = self.request("POST", "/v2/%s/blobs/uploads/" % repository, repository, expect=202)
        location = urllib.parse.urlsplit(started.getheader("Location", ""))
        query = urllib.parse.parse_qsl(location.query) + [("digest", digest)]
        self.request(
            "PUT",
            "%s?%s" % (location.path, urllib.parse.urlencode(query)),
            repository,
            blob,
            {"Content-Type": "application/octet-stream"},
            expect=201,
        )
        return digest

    def push_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        """Put the manifest ``body`` under ``reference`` (a tag or its digest); return its digest."""
        self.request(
            "PUT",
            "/v2/%s/manifests/%s" % (repository, reference),
            repository,
            body,
            {"Content-Type": media_type},
            expect=201,
        )
        return sha256(body)
