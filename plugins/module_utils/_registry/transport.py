# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What comes back over HTTP: a response, a streamed blob that checks its digest, and a registry's error body."""

from __future__ import annotations

import hashlib
import http.client
import json
from typing import Callable, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    DigestMismatchError,
    RegistryConnectionError,
)

__all__ = ["MAX_SMALL_BODY", "BlobStream", "Response", "error_code", "error_detail"]

MAX_SMALL_BODY = 1024 * 1024


def error_detail(body: bytes) -> str:
    """``CODE: message`` from a registry error body, short."""
    try:
        errors = json.loads(body.decode("utf-8")).get("errors") or []
        first = errors[0]
        text = f"{first.get('code', '')}: {first.get('message', '')}".strip(": ")
    except (ValueError, AttributeError, IndexError, TypeError, UnicodeDecodeError):
        return ""
    return text[:200]


def error_code(body: bytes) -> str:
    detail = error_detail(body)
    return detail.split(":", 1)[0] if detail else ""


class Response:
    """A registry's answer: status, headers, the body read whole, or the stream of a 200 blob answer."""

    __slots__ = ("status", "headers", "body", "stream")

    def __init__(
        self,
        status: int,
        headers: http.client.HTTPMessage,
        body: bytes,
        stream: Optional[Tuple[http.client.HTTPResponse, http.client.HTTPConnection]] = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        # (HTTPResponse, connection) of a streamed 200 answer; the connection is out of the pool then.
        self.stream = stream


class BlobStream:
    """A blob being downloaded: ``read(n)`` as a file; ``bytes_read`` counts the bytes received so far.

    Reading to the end verifies the digest; closing early drops the connection (the rest is never sent).
    """

    def __init__(
        self,
        response: http.client.HTTPResponse,
        connection: http.client.HTTPConnection,
        digest: str,
        what: str,
        registry: str,
        counter: Optional[Callable[[int], None]] = None,
    ) -> None:
        self._response = response
        self._connection = connection
        self._digest = digest
        self._hash = hashlib.sha256()
        self._what = what
        self._registry = registry
        self._counter = counter
        self.bytes_read = 0

    def read(self, size: Optional[int] = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when negative or None); b"" at the end."""
        try:
            data = self._response.read(size if size is not None and size >= 0 else None)
        except (OSError, http.client.HTTPException) as exc:
            raise RegistryConnectionError(
                f"reading {self._what} from registry {self._registry} failed: {type(exc).__name__}", self._registry
            ) from None
        self.bytes_read += len(data)
        if self._counter is not None:
            self._counter(len(data))
        self._hash.update(data)
        if not data or (size is not None and size < 0):
            if self._digest.startswith("sha256:") and "sha256:" + self._hash.hexdigest() != self._digest:
                raise DigestMismatchError(
                    f"registry {self._registry} sent {self._what} whose sha256 is not {self._digest}", self._registry
                )
        return data

    def close(self) -> None:
        """Drop the download and its connection."""
        self._response.close()
        self._connection.close()

    def __enter__(self) -> BlobStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
