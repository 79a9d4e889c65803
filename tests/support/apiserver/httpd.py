# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The HTTP server of the fake API server: it parses requests and hands them to ``FakeApiServer.handle``."""

from __future__ import annotations

import copy
import http.server
import json
import re
import socket
import ssl
import urllib.parse
import uuid
from typing import TYPE_CHECKING

import yaml

from support.apiserver.podexec import serve_exec
from support.apiserver.pods import WatchStream, as_table
from support.apiserver.schema import ApiError, RecordedRequest

_EXEC_PATH = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec")

if TYPE_CHECKING:
    from support.apiserver.api import FakeApiServer


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):  # noqa: ARG002 - quiet: clients that hang up are normal here
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    api: FakeApiServer = None
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - keep test output clean
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in two writes; without this, Nagle + delayed ACK add 40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _user(self):
        header = self.headers.get("Authorization")
        if header:
            scheme, token = header.partition(" ")[::2]
            if scheme.lower() == "bearer" and token == self.api.token:
                return "token-user"
            return None
        if isinstance(self.connection, ssl.SSLSocket):
            cert = self.connection.getpeercert()
            if cert:
                for rdn in cert.get("subject", ()):
                    for key, value in rdn:
                        if key == "commonName":
                            return value
        return None

    def _send(self, status, body, headers=()):
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for text in headers:
            escaped = text.replace("\\", "\\\\").replace('"', '\\"')
            self.send_header("Warning", f'299 - "{escaped}"')
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, watch):
        """A watch: chunked JSON events until the watch ends or the client leaves."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.end_headers()
        gone = False

        def stopped():
            return gone or self.api._release.is_set()

        try:
            for event in watch.events(stopped):
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            gone = True
        self.close_connection = True

    def _dispatch(self):
        parsed = urllib.parse.urlsplit(self.path)
        match = _EXEC_PATH.fullmatch(parsed.path)
        if match:
            serve_exec(
                self, match.group(1), match.group(2), urllib.parse.parse_qsl(parsed.query, keep_blank_values=True)
            )
            return
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        content_type = self.headers.get("Content-Type")
        body = None
        record = RecordedRequest(self.command, parsed.path, query, content_type, None, None)
        if any(self.command == method and parsed.path.startswith(prefix) for method, prefix in self.api.held):
            self.api.requests.append(record)
            self.api._release.wait()
            self.close_connection = True
            return
        try:
            if raw:
                try:
                    body = yaml.safe_load(raw.decode("utf-8")) if "yaml" in (content_type or "") else json.loads(raw)
                except (ValueError, yaml.YAMLError) as exc:
                    raise ApiError(400, "BadRequest", f"cannot decode the request body: {exc}") from exc
            record.body = copy.deepcopy(body)
            user = self._user()
            record.user = user
            with self.api._lock:
                self.api.requests.append(record)
                if user is None:
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                for hook in list(self.api.before_request):
                    hook(record)
                status, answer, warnings = self.api.handle(self.command, parsed.path, query, content_type, body, user)
        except ApiError as exc:
            record.status = exc.code
            self._send(exc.code, exc.status())
            return
        record.status = status
        if isinstance(answer, WatchStream):
            self._stream(answer)
            return
        if (
            isinstance(answer, dict)
            and answer.get("kind") in ("Pod", "PodList")
            and "as=Table" in (self.headers.get("Accept") or "")
        ):
            answer = as_table(answer)
        self._send(status, answer, warnings)

    do_GET = do_PATCH = do_DELETE = do_POST = do_PUT = _dispatch
