# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry/transport: registry error bodies, and a streamed blob that checks its digest as it ends.

The blob streams come from a real HTTP server on 127.0.0.1 (http.server), read through http.client."""

from __future__ import annotations

import hashlib
import http.client
import http.server
import threading

import pytest

from ansible_collections.pinned.images.plugins.module_utils._registry.errors import DigestMismatchError
from ansible_collections.pinned.images.plugins.module_utils._registry.transport import (
    BlobStream,
    error_code,
    error_detail,
)

BODY = b"layer bytes " * 1000


@pytest.fixture(scope="module")
def server():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the name http.server calls
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


def open_blob(port, digest, counted):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/blob")
    return BlobStream(connection.getresponse(), connection, digest, "blob x", "127.0.0.1", counted.append)


def test_a_blob_read_to_its_end_checks_its_digest(server):
    counted = []
    with open_blob(server, "sha256:" + hashlib.sha256(BODY).hexdigest(), counted) as blob:
        data = blob.read(100) + blob.read()
    assert data == BODY and blob.bytes_read == len(BODY) == sum(counted)
    with pytest.raises(DigestMismatchError, match="sent blob x whose sha256 is not sha256:0"):
        with open_blob(server, "sha256:" + "0" * 64, []) as blob:
            blob.read()


def test_an_error_body_gives_its_first_code_and_message():
    body = b'{"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}, {"code": "OTHER"}]}'
    assert error_detail(body) == "MANIFEST_UNKNOWN: manifest unknown"
    assert error_code(body) == "MANIFEST_UNKNOWN"
    assert error_detail(b"<html>") == error_code(b"{}") == ""
    assert len(error_detail(b'{"errors": [{"code": "X", "message": "%s"}]}' % (b"m" * 500))) == 200
