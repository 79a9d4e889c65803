# SPDX-License-Identifier: GPL-3.0-or-later
"""Real docker-registry processes and a small JWT token server for the registry client tests.

``start_registries(base_dir)`` starts, on 127.0.0.1 free ports with storage under ``base_dir``:
- ``plain``: plain HTTP, anonymous;
- ``secure``: TLS (the CA of ``support.pki``) + htpasswd basic auth;
- ``token``: TLS with ``auth: token`` (realm/service/issuer/rootcertbundle) backed by ``TokenServer`` (HTTPS),
  which signs RS256 JWTs with ``cryptography`` (a dependency of ansible-core);
- ``mtls``: TLS that requires a client certificate (``http.tls.clientcas``).
Test images are pushed with ``support.push.PushClient`` (see ``push_test_images``). The ``registry_lab`` session
fixture wraps it for pytest.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from support.images import layer, push_image, push_index
from support.pki import make_pki
from support.push import PushClient
from support.registry import RegistryProcess, start_registry, write_htpasswd

USER = "alice"
# Colons, quotes and non-ASCII on purpose: they must survive basic auth and never leak.
PASSWORD = "pa:ss'w\"0rd-" + "ü" + secrets.token_hex(4)
IDENTITY_TOKEN = "idtok-" + secrets.token_hex(8)
SERVICE = "pinned-test-registry"
ISSUER = "pinned-test-issuer"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TokenServer:
    """Docker token server: GET /token with basic auth or anonymous, POST /token with a refresh token.

    GET answers ``{"token": ...}``, POST answers ``{"access_token": ...}``, so clients must accept both.
    alice may push and pull anything; anonymous may pull ``*/public*`` only.
    """

    def __init__(self, key_path: str, cert_path: str, tls: tuple | None = None):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding

        with open(key_path, "rb") as handle:
            self._key = serialization.load_pem_private_key(handle.read(), password=None)
        with open(cert_path, "rb") as handle:
            cert = x509.load_pem_x509_certificate(handle.read())
        self._x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode("ascii")
        self._sign = lambda data: self._key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        self.requests = 0
        self.log = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; without this, delayed ACKs add 40 ms to every token.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):
                query = parse_qs(urlsplit(self.path).query)
                user = None
                header = self.headers.get("Authorization", "")
                if header.startswith("Basic "):
                    name, _sep, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
                    if (name, password) != (USER, PASSWORD):
                        return self._answer(401, {"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]})
                    user = name
                self._grant(user, query, "token")

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                form = parse_qs(self.rfile.read(length).decode("ascii"))
                if form.get("grant_type") != ["refresh_token"] or form.get("refresh_token") != [IDENTITY_TOKEN]:
                    return self._answer(401, {"error": "invalid_grant"})
                self._grant(USER, form, "access_token")

            def _grant(self, user, query, field_name):
                with server.lock:
                    server.requests += 1
                    server.log.append((self.command, user, query.get("scope", [])))
                if query.get("service") != [SERVICE]:
                    return self._answer(400, {"error": "wrong service"})
                access = []
                for scope in query.get("scope", []):
                    kind, _sep, rest = scope.partition(":")
                    name, _sep, actions = rest.rpartition(":")
                    allowed = (
                        actions.split(",")
                        if user
                        else [a for a in actions.split(",") if a == "pull" and "/public" in name]
                    )
                    access.append({"type": kind, "name": name, "actions": allowed})
                self._answer(200, {field_name: server.token(user or "", access), "expires_in": 300})

            def _answer(self, status, document):
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.netloc = f"127.0.0.1:{self.port}"
        self.realm = f"{'https' if tls else 'http'}://{self.netloc}/token"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def token(self, subject: str, access: list) -> str:
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._x5c]}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        signing_input = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
        return signing_input + "." + _b64url(self._sign(signing_input.encode("ascii")))

    def stop(self):
        self.httpd.shutdown()


@dataclass
class RegistryLab:
    base_dir: str
    pki: dict
    certs_dir: str  # certs.d layout: <host:port>/ca.crt (and client.cert/.key for mtls)
    token_server: TokenServer
    plain: RegistryProcess
    secure: RegistryProcess
    token: RegistryProcess
    mtls: RegistryProcess
    images: dict = field(default_factory=dict)

    def stop(self):
        for registry in (self.plain, self.secure, self.token, self.mtls):
            registry.stop()
        self.token_server.stop()

    def tls_context(self, client: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.pki["ca.crt"])
        if client:
            context.load_cert_chain(self.pki["client.crt"], self.pki["client.key"])
        return context

    def pusher(self, name: str) -> PushClient:
        """A push client of registry ``name`` with the credentials it needs."""
        registry = getattr(self, name)
        if name == "plain":
            return PushClient(registry.name)
        if name == "secure":
            return PushClient(registry.name, context=self.tls_context(), basic=(USER, PASSWORD))
        if name == "token":
            access = [{"type": "repository", "actions": ["pull", "push"]}]
            return PushClient(
                registry.name,
                context=self.tls_context(),
                bearer=lambda repo: self.token_server.token(USER, [dict(access[0], name=repo)]),
            )
        return PushClient(registry.name, context=self.tls_context(client=True))


def start_registries(base_dir: str, push: bool = True) -> RegistryLab:
    """Start the four registries and the token server (see the module docstring); push the test images."""
    pki = make_pki(os.path.join(base_dir, "pki"), client_cn="pinned-test-client", token_signer=True, days=2)
    htpasswd = os.path.join(base_dir, "htpasswd")
    write_htpasswd(htpasswd, USER, PASSWORD)
    token_server = TokenServer(pki["token.key"], pki["token.crt"], tls=(pki["server.crt"], pki["server.key"]))
    started = []
    try:
        tls = {"certificate": pki["server.crt"], "key": pki["server.key"]}
        token_auth = {
            "realm": token_server.realm,
            "service": SERVICE,
            "issuer": ISSUER,
            "rootcertbundle": pki["token.crt"],
        }
        for args in (
            ("plain", {}),
            ("secure", {"tls": tls, "auth": {"htpasswd": {"realm": "pinned-test", "path": htpasswd}}}),
            ("token", {"tls": tls, "auth": {"token": token_auth}}),
            ("mtls", {"tls": dict(tls, clientcas=pki["ca.crt"])}),
        ):
            started.append(start_registry(os.path.join(base_dir, args[0]), **args[1]))
    except BaseException:
        for registry in started:
            registry.stop()
        token_server.stop()
        raise
    plain, secure, token, mtls = started
    certs_dir = os.path.join(base_dir, "certs.d")
    for netloc in (secure.name, token.name, mtls.name, token_server.netloc):
        directory = os.path.join(certs_dir, netloc)
        os.makedirs(directory)
        shutil.copyfile(pki["ca.crt"], os.path.join(directory, "ca.crt"))
    mtls_dir = os.path.join(certs_dir, mtls.name)
    for src, dst in (("client.crt", "client.cert"), ("client.key", "client.key")):
        shutil.copyfile(pki[src], os.path.join(mtls_dir, dst))
    lab = RegistryLab(base_dir, pki, certs_dir, token_server, plain, secure, token, mtls)
    if push:
        try:
            push_test_images(lab)
        except BaseException:
            lab.stop()
            raise
    return lab


def push_test_images(lab: RegistryLab) -> None:
    """The images the registry client tests read, recorded in ``lab.images``."""
    base = layer("base", 30000)
    plain = lab.pusher("plain")
    images = lab.images
    images["plain/single"] = push_image(plain, "test/single", [base, layer("single", 5000)], tag="v1")
    images["plain/multi"] = push_index(
        plain,
        "test/multi",
        {
            "linux/amd64": [base, layer("amd64-a", 7000), layer("amd64-b", 11000)],
            "linux/arm64/v8": [layer("arm64-a", 3000), layer("arm64-b", 2000)],
            # An attestation manifest as buildx adds it; never a candidate platform.
            "unknown/unknown": [layer("attestation", 100)],
        },
        tag="v1",
    )
    images["plain/dockerlist"] = push_index(
        plain,
        "test/dockerlist",
        {
            "linux/amd64": [base, layer("dl-amd64", 4000)],
            "linux/arm/v7": [layer("dl-armv7", 2500)],
            "linux/arm/v6": [layer("dl-armv6", 2400)],
        },
        tag="v1",
        docker=True,
    )
    images["plain/docker"] = push_image(plain, "test/docker", [layer("docker", 1234)], tag="v1", docker=True)

    secure = lab.pusher("secure")
    images["secure/app"] = push_image(secure, "secure/app", [layer("secure", 4321)], tag="v1")

    token = lab.pusher("token")
    images["token/app"] = push_image(token, "tok/app", [base, layer("tok", 999)], tag="v1")
    images["token/public"] = push_image(token, "tok/public", [layer("pub", 777)], tag="v1")
    images["token/multi"] = push_index(
        token,
        "tok/multi",
        {
            "linux/amd64": [layer("tm-amd64", 1500)],
            "linux/arm64": [layer("tm-arm64", 1600)],
        },
        tag="v1",
    )

    mtls = lab.pusher("mtls")
    images["mtls/app"] = push_image(mtls, "mtls/app", [layer("mtls", 555)], tag="v1")
    for client in (plain, secure, token, mtls):
        client.close()


@pytest.fixture(scope="session")
def registry_lab(tmp_path_factory):
    """The four registries of ``start_registries``, with the test images pushed."""
    lab = start_registries(str(tmp_path_factory.mktemp("registries")))
    yield lab
    lab.stop()
