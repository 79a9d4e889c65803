# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry/client against real docker-registry processes (plain, TLS+htpasswd, TLS+token, mutual TLS)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import estimate
from ansible_collections.pinned.images.plugins.module_utils._registry import transport as _transport
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import (
    RegistryCredentials,
    parse_docker_config,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.client import RegistryClient
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    DigestMismatchError,
    ManifestFormatError,
    ManifestUnknownError,
    PlatformNotFoundError,
    RegistryAuthRejected,
    RegistryConnectionError,
    RegistryError,
    RegistryTLSError,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    OCI_INDEX,
    OCI_MANIFEST,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import (
    Platform,
    parse_platform,
)

# registry_lab is a session fixture; importing it registers it for this module.
from support.ports import free_port, silent_port
from support.registries import IDENTITY_TOKEN, PASSWORD, USER, registry_lab  # noqa: F401 pylint: disable=unused-import

ALICE = RegistryCredentials(USER, PASSWORD)
WRONG = "Wr0ng:" + PASSWORD[::-1]


def ref(registry, path, digest=None):
    return parse_image_ref(f"{registry.name}/{path}" + (f"@{digest}" if digest else ""), require_digest=False)


@pytest.fixture
def client(registry_lab):
    client = RegistryClient(certs_dirs=[registry_lab.certs_dir], timeout=5)
    yield client
    client.close()


def error_text(exc: BaseException) -> str:
    """Everything an exception could show: message, repr, args, chained exceptions, formatted traceback."""
    parts = [str(exc), repr(exc), repr(exc.args)]
    parts += traceback.format_exception(type(exc), exc, exc.__traceback__)
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None:
            parts.append(error_text(linked))
    return "\n".join(parts)


# --- plain HTTP registry ---------------------------------------------------------------------------------------

# (image key, path, platform, expected platform key or None for a single manifest)
PLAIN_CASES = [
    ("plain/single", "test/single:v1", None, None),
    ("plain/docker", "test/docker:v1", None, None),
    ("plain/multi", "test/multi:v1", None, "linux/amd64"),
    ("plain/multi", "test/multi:v1", "linux/amd64", "linux/amd64"),
    ("plain/multi", "test/multi:v1", "linux/arm64", "linux/arm64/v8"),
    ("plain/multi", "test/multi:v1", "linux/arm64/v8", "linux/arm64/v8"),
    ("plain/multi", "test/multi:v1", Platform("linux", "arm64"), "linux/arm64/v8"),
    ("plain/dockerlist", "test/dockerlist:v1", "linux/amd64", "linux/amd64"),
    ("plain/dockerlist", "test/dockerlist:v1", "linux/arm/v7", "linux/arm/v7"),
    ("plain/dockerlist", "test/dockerlist:v1", "linux/arm", "linux/arm/v7"),
    ("plain/dockerlist", "test/dockerlist:v1", "linux/arm/v6", "linux/arm/v6"),
    ("plain/dockerlist", "test/dockerlist:v1", "linux/arm/v8", "linux/arm/v7"),
]


@pytest.mark.parametrize("key, path, platform, platform_key", PLAIN_CASES)
def test_plain_manifests(registry_lab, client, key, path, platform, platform_key):
    pushed = registry_lab.images[key]
    expected = pushed.platforms[platform_key] if platform_key else pushed
    for target in (ref(registry_lab.plain, path), ref(registry_lab.plain, path.split(":")[0], pushed.digest)):
        info = client.manifest_info(target, insecure=True, platform=platform)
        assert info.digest == pushed.digest
        assert info.media_type == pushed.media_type
        assert info.platform_digest == expected.digest
        assert list(info.layers) == expected.layers
        assert info.config_size == expected.config_size
        assert sum(size for _digest, size in info.layers) == expected.layer_sum
        assert info.platform == (str(parse_platform(platform)) if platform_key else "")
        assert info.reference == str(target)


def test_index_estimate_equals_amd64_layer_sum(registry_lab, client):
    multi = registry_lab.images["plain/multi"]
    info = client.manifest_info(
        ref(registry_lab.plain, "test/multi", multi.digest), insecure=True, platform="linux/amd64"
    )
    assert info.media_type == OCI_INDEX
    result = estimate({"multi": info}, expansion_factor=1)
    assert result["compressed_bytes"] == multi.platforms["linux/amd64"].layer_sum == 48000
    # The reference implementation counts a manifest list as 0 bytes; the index must never be that.
    assert estimate({"multi": info})["required_bytes"] == 2 * 48000


def test_index_and_single_share_layers_once(registry_lab, client):
    single = client.manifest_info(ref(registry_lab.plain, "test/single:v1"), insecure=True)
    multi = client.manifest_info(ref(registry_lab.plain, "test/multi:v1"), insecure=True, platform="linux/amd64")
    result = estimate({"single": single, "multi": multi}, expansion_factor=1)
    # Both start with the same 30000-byte base layer.
    assert result["compressed_bytes"] == 35000 + 48000 - 30000


@pytest.mark.parametrize(
    "key, path, platform, available",
    [
        ("plain/multi", "test/multi:v1", "linux/riscv64", "linux/amd64, linux/arm64/v8"),
        ("plain/multi", "test/multi:v1", "windows/amd64", "linux/amd64, linux/arm64/v8"),
        ("plain/dockerlist", "test/dockerlist:v1", "linux/arm/v5", "linux/amd64, linux/arm/v6, linux/arm/v7"),
        ("plain/dockerlist", "test/dockerlist:v1", "linux/arm64", "linux/amd64, linux/arm/v6, linux/arm/v7"),
    ],
)
def test_platform_not_found_lists_platforms(registry_lab, client, key, path, platform, available):
    with pytest.raises(PlatformNotFoundError) as info:
        client.manifest_info(ref(registry_lab.plain, path), insecure=True, platform=platform)
    message = str(info.value)
    assert f"no manifest for platform {platform}" in message
    assert message.endswith("available: " + available)
    assert registry_lab.images[key].digest in message
    assert info.value.registry == registry_lab.plain.name


def test_plain_http_only_when_insecure(registry_lab, client):
    target = ref(registry_lab.plain, "test/single:v1")
    client.manifest_info(target, insecure=True)
    # Having used plain HTTP for an insecure source must not make a secure source use it.
    with pytest.raises(RegistryTLSError) as info:
        client.manifest_info(target)
    assert registry_lab.plain.name in str(info.value) and "plain HTTP" in str(info.value)


@pytest.mark.parametrize(
    "path, message",
    [
        ("test/single:nope", "manifest unknown"),
        ("test/nothere:v1", "manifest unknown"),
        ("test/single@sha256:" + "0" * 64, "manifest unknown"),
    ],
)
def test_manifest_unknown(registry_lab, client, path, message):
    target = parse_image_ref(f"{registry_lab.plain.name}/{path}", require_digest=False)
    with pytest.raises(ManifestUnknownError) as info:
        client.manifest_info(target, insecure=True)
    assert message in str(info.value) and registry_lab.plain.name in str(info.value)


def test_request_count_and_keep_alive(registry_lab):
    client = RegistryClient(certs_dirs=[registry_lab.certs_dir])
    target = ref(registry_lab.plain, "test/single:v1")
    client.manifest_info(target, insecure=True)
    # A failed TLS attempt, then plain HTTP.
    assert client.request_count == 2
    client.manifest_info(target, insecure=True)
    assert client.request_count == 3
    client.manifest_info(ref(registry_lab.plain, "test/multi:v1"), insecure=True)
    assert client.request_count == 5  # the index, then the amd64 manifest
    client.close()


def test_threads_share_one_client(registry_lab, client):
    targets = [ref(registry_lab.plain, p) for p in ("test/single:v1", "test/multi:v1", "test/docker:v1")] * 8
    with ThreadPoolExecutor(4) as pool:
        infos = list(pool.map(lambda t: client.manifest_info(t, insecure=True), targets))
    assert [i.digest for i in infos[:3]] * 8 == [i.digest for i in infos]


# --- TLS + htpasswd registry -----------------------------------------------------------------------------------


def test_tls_basic_with_pull_secret(registry_lab, client):
    auth_file = {
        "auths": {registry_lab.secure.name: {"auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}}
    }
    config = parse_docker_config(json.dumps(auth_file), "config.json")
    target = ref(registry_lab.secure, "secure/app:v1")
    credentials = config.credentials_for(target.name)
    info = client.manifest_info(target, credentials=credentials)
    assert info.digest == registry_lab.images["secure/app"].digest
    before = client.request_count
    client.manifest_info(target, credentials=credentials)
    # The basic challenge is remembered: credentials go with the first request.
    assert client.request_count == before + 1


@pytest.mark.parametrize(
    "credentials, message",
    [
        (None, "requires authentication (basic) and no credentials were found"),
        (RegistryCredentials(USER, WRONG), "rejected the credentials of user 'alice'"),
        (RegistryCredentials("mallory", PASSWORD + "x"), "rejected the credentials of user 'mallory'"),
    ],
)
def test_tls_basic_rejected(registry_lab, credentials, message):
    client = RegistryClient(certs_dirs=[registry_lab.certs_dir])
    with pytest.raises(RegistryAuthRejected) as info:
        client.manifest_info(ref(registry_lab.secure, "secure/app:v1"), credentials=credentials)
    text = error_text(info.value)
    assert message in str(info.value) and registry_lab.secure.name in str(info.value)
    assert info.value.registry == registry_lab.secure.name
    for secret in (PASSWORD, WRONG, base64.b64encode(f"{USER}:{WRONG}".encode()).decode()):
        assert secret not in text


def test_tls_without_ca_fails_clearly(registry_lab, tmp_path):
    client = RegistryClient(certs_dirs=[str(tmp_path)])
    with pytest.raises(RegistryTLSError) as info:
        client.manifest_info(ref(registry_lab.secure, "secure/app:v1"), credentials=ALICE)
    assert "TLS verification failed" in str(info.value) and registry_lab.secure.name in str(info.value)
    assert PASSWORD not in error_text(info.value)


def test_tls_insecure_skips_verification(registry_lab, tmp_path):
    client = RegistryClient(certs_dirs=[str(tmp_path)])
    info = client.manifest_info(ref(registry_lab.secure, "secure/app:v1"), credentials=ALICE, insecure=True)
    assert info.digest == registry_lab.images["secure/app"].digest


def test_ca_from_second_certs_dir(registry_lab, tmp_path):
    docker_dir = tmp_path / "docker-certs.d"
    shutil.copytree(registry_lab.certs_dir, docker_dir)
    client = RegistryClient(certs_dirs=[str(tmp_path / "containers-certs.d"), str(docker_dir)])
    assert client.manifest_info(ref(registry_lab.secure, "secure/app:v1"), credentials=ALICE).layers


# --- TLS + token registry --------------------------------------------------------------------------------------


def test_token_flow_with_basic_credentials(registry_lab, client):
    server = registry_lab.token_server
    start_tokens = server.requests
    info = client.manifest_info(ref(registry_lab.token, "tok/app:v1"), credentials=ALICE)
    assert info.digest == registry_lab.images["token/app"].digest
    assert client.request_count == 3  # 401 challenge, token, manifest
    assert server.requests == start_tokens + 1
    assert server.log[-1] == ("GET", USER, ["repository:tok/app:pull"])
    # Same repository: the cached token is reused.
    client.manifest_info(ref(registry_lab.token, "tok/app:v1"), credentials=ALICE)
    assert client.request_count == 4
    # Another repository: no new challenge, one token for its scope; the index costs two manifest requests.
    info = client.manifest_info(ref(registry_lab.token, "tok/multi:v1"), credentials=ALICE, platform="linux/arm64")
    assert client.request_count == 7
    assert info.platform_digest == registry_lab.images["token/multi"].platforms["linux/arm64"].digest
    assert server.requests == start_tokens + 2


def test_token_flow_identity_token(registry_lab, client):
    server = registry_lab.token_server
    creds = RegistryCredentials(username="<token>", identity_token=IDENTITY_TOKEN)
    info = client.manifest_info(ref(registry_lab.token, "tok/app:v1"), credentials=creds)
    assert info.digest == registry_lab.images["token/app"].digest
    assert server.log[-1][0] == "POST"  # answered with access_token, not token


def test_token_flow_registry_token(registry_lab, client):
    token = registry_lab.token_server.token(USER, [{"type": "repository", "name": "tok/app", "actions": ["pull"]}])
    info = client.manifest_info(
        ref(registry_lab.token, "tok/app:v1"), credentials=RegistryCredentials(registry_token=token)
    )
    assert info.digest == registry_lab.images["token/app"].digest
    with pytest.raises(RegistryAuthRejected) as exc:
        # Scoped to tok/app only.
        client.manifest_info(
            ref(registry_lab.token, "tok/multi:v1"), credentials=RegistryCredentials(registry_token=token)
        )
    assert "rejected the token" in str(exc.value) and token not in error_text(exc.value)


def test_token_flow_anonymous(registry_lab, client):
    info = client.manifest_info(ref(registry_lab.token, "tok/public:v1"))
    assert info.digest == registry_lab.images["token/public"].digest
    with pytest.raises(RegistryAuthRejected) as exc:
        client.manifest_info(ref(registry_lab.token, "tok/app:v1"))
    assert "rejected anonymous access for tok/app" in str(exc.value)
    assert "no credentials were found" in str(exc.value)


@pytest.mark.parametrize(
    "credentials, message",
    [
        (RegistryCredentials(USER, WRONG), "rejected user 'alice' (HTTP 401)"),
        (RegistryCredentials("<token>", identity_token="idtok-" + WRONG), "rejected the identity token (HTTP 401)"),
    ],
)
def test_token_flow_rejected(registry_lab, client, credentials, message):
    with pytest.raises(RegistryAuthRejected) as info:
        client.manifest_info(ref(registry_lab.token, "tok/app:v1"), credentials=credentials)
    text = error_text(info.value)
    assert message in str(info.value)
    assert f"token server {registry_lab.token_server.netloc}" in str(info.value)
    assert registry_lab.token.name in str(info.value)
    for secret in (PASSWORD, WRONG, IDENTITY_TOKEN):
        assert secret not in text


@pytest.mark.parametrize(
    "credentials, refused",
    [
        (ALICE, True),
        (RegistryCredentials("<token>", identity_token=IDENTITY_TOKEN), True),
        (None, False),
    ],
)
def test_credentials_never_go_to_a_plain_http_realm(credentials, refused, monkeypatch):
    client = RegistryClient(certs_dirs=[])
    sent = []
    monkeypatch.setattr(
        client,
        "_send",
        lambda *args, **kwargs: sent.append(args) or _transport.Response(200, _Headers(), b'{"token": "t"}'),
    )
    params = {"realm": "http://auth.example.com/token", "service": "svc"}
    if refused:
        with pytest.raises(RegistryAuthRejected, match="plain-HTTP token realm auth.example.com"):
            client._token("reg.example.com", params, "repository:a:pull", credentials, False)
        assert sent == []
        # For an insecure registry the user accepted plain HTTP.
        assert client._token("reg.example.com", params, "repository:a:pull", credentials, True) == "t"
    else:
        assert client._token("reg.example.com", params, "repository:a:pull", credentials, False) == "t"


def test_token_realm_tls_is_verified(registry_lab, tmp_path):
    # The registry's CA is known, the token server's is not.
    directory = tmp_path / registry_lab.token.name
    shutil.copytree(os.path.join(registry_lab.certs_dir, registry_lab.token.name), directory)
    client = RegistryClient(certs_dirs=[str(tmp_path)])
    with pytest.raises(RegistryTLSError) as info:
        client.manifest_info(ref(registry_lab.token, "tok/app:v1"), credentials=ALICE)
    assert registry_lab.token_server.netloc in str(info.value) and registry_lab.token.name in str(info.value)
    assert PASSWORD not in error_text(info.value)


# --- mutual TLS ------------------------------------------------------------------------------------------------


def test_client_certificate_from_certs_dir(registry_lab, client):
    info = client.manifest_info(ref(registry_lab.mtls, "mtls/app:v1"))
    assert info.digest == registry_lab.images["mtls/app"].digest


def test_client_certificate_missing(registry_lab, tmp_path):
    directory = tmp_path / registry_lab.mtls.name
    directory.mkdir()
    shutil.copy(os.path.join(registry_lab.certs_dir, registry_lab.mtls.name, "ca.crt"), directory)
    client = RegistryClient(certs_dirs=[str(tmp_path)])
    with pytest.raises(RegistryConnectionError) as info:
        client.manifest_info(ref(registry_lab.mtls, "mtls/app:v1"))
    assert registry_lab.mtls.name in str(info.value)


def test_client_certificate_without_key(registry_lab, tmp_path):
    directory = tmp_path / registry_lab.mtls.name
    directory.mkdir()
    shutil.copy(os.path.join(registry_lab.certs_dir, registry_lab.mtls.name, "client.cert"), directory)
    with pytest.raises(RegistryTLSError, match="has no matching key"):
        RegistryClient(certs_dirs=[str(tmp_path)]).manifest_info(ref(registry_lab.mtls, "mtls/app:v1"))


def test_unusable_ca_file(registry_lab, tmp_path):
    directory = tmp_path / registry_lab.secure.name
    directory.mkdir()
    (directory / "ca.crt").write_text("not a certificate")
    with pytest.raises(RegistryTLSError, match="cannot load .*ca.crt"):
        RegistryClient(certs_dirs=[str(tmp_path)]).manifest_info(ref(registry_lab.secure, "secure/app:v1"))


# --- connection failures ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("insecure", [False, True])
def test_connection_refused(insecure):
    port = free_port()
    target = parse_image_ref(f"127.0.0.1:{port}/a/b:v1", require_digest=False)
    with pytest.raises(RegistryConnectionError) as info:
        RegistryClient(certs_dirs=[]).manifest_info(target, insecure=insecure)
    assert "connection refused" in str(info.value) and f"127.0.0.1:{port}" in str(info.value)


def test_timeout():
    with silent_port() as port:
        target = parse_image_ref(f"127.0.0.1:{port}/a/b:v1", require_digest=False)
        with pytest.raises(RegistryConnectionError, match=r"timed out after 0.3 s"):
            RegistryClient(certs_dirs=[], timeout=0.3).manifest_info(target, insecure=True)


# --- manifest documents, through a fake transport --------------------------------------------------------------


class _Headers(dict):
    def get_all(self, name):
        return [self[name]] if name in self else None


class FakeClient(RegistryClient):
    """Serves canned responses: {(repository, reference): (status, content_type, body)}."""

    def __init__(self, responses):
        super().__init__(certs_dirs=[])
        self.responses = responses

    def _send(
        self,
        host,
        insecure,
        method,
        path,
        headers,
        limit,
        scheme=None,
        body=None,
        registry=None,
        stream=False,
        endpoint=None,
    ):
        self.request_count += 1
        repository, _sep, reference = path[len("/v2/") :].rpartition("/manifests/")
        status, content_type, payload, *extra = self.responses[(repository, reference)]
        headers = _Headers({"Content-Type": content_type}, **(extra[0] if extra else {}))
        return _transport.Response(status, headers, payload)


DIGEST_A = "sha256:" + "a" * 64


def _manifest(layers=(("sha256:" + "1" * 64, 10),), media_type=OCI_MANIFEST, config_size=5):
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": media_type,
            "config": {"size": config_size},
            "layers": [{"digest": d, "size": s} for d, s in layers],
        }
    ).encode()


def _digest(body):
    return "sha256:" + hashlib.sha256(body).hexdigest()


BAD_DOCUMENTS = [
    (b"not json", "application/json", ManifestFormatError, "is not JSON"),
    (b"[1, 2]", OCI_MANIFEST, ManifestFormatError, "is not a JSON object"),
    (b"\xff\xfe", OCI_MANIFEST, ManifestFormatError, "is not JSON"),
    (b'{"schemaVersion": 1, "fsLayers": []}', "application/json", ManifestFormatError, "schema 1"),
    (b'{"schemaVersion": 2}', "text/html", ManifestFormatError, "unsupported manifest media type"),
    (_manifest(media_type="application/vnd.example+json"), OCI_MANIFEST, ManifestFormatError, "unsupported"),
    (_manifest(layers=(("sha256:" + "1" * 64, -1),)), OCI_MANIFEST, ManifestFormatError, "malformed"),
    (_manifest(layers=(("sha256:" + "1" * 64, True),)), OCI_MANIFEST, ManifestFormatError, "malformed"),
    (_manifest(layers=(("sha256:" + "1" * 64, "10"),)), OCI_MANIFEST, ManifestFormatError, "malformed"),
    (_manifest(layers=(("not a digest", 10),)), OCI_MANIFEST, ManifestFormatError, "malformed"),
    (_manifest(config_size=-5), OCI_MANIFEST, ManifestFormatError, "malformed"),
    (b'{"mediaType": "%s", "layers": [5]}' % OCI_MANIFEST.encode(), OCI_MANIFEST, ManifestFormatError, "malformed"),
    (
        b'{"mediaType": "%s", "manifests": [{"digest": "sha256:short", "platform": {"os": "linux", '
        b'"architecture": "amd64"}}]}' % OCI_INDEX.encode(),
        OCI_INDEX,
        ManifestFormatError,
        "unsupported digest",
    ),
    (
        b'{"mediaType": "%s", "manifests": "x"}' % OCI_INDEX.encode(),
        OCI_INDEX,
        PlatformNotFoundError,
        "available: none",
    ),
]


@pytest.mark.parametrize("body, content_type, error, message", BAD_DOCUMENTS)
def test_bad_documents(body, content_type, error, message):
    client = FakeClient({("a/b", _digest(body)): (200, content_type, body)})
    target = parse_image_ref(f"reg.example.com/a/b@{_digest(body)}")
    with pytest.raises(error, match=message):
        client.manifest_info(target, platform="linux/amd64")


def test_digest_mismatch():
    body = _manifest()
    client = FakeClient({("a/b", DIGEST_A): (200, OCI_MANIFEST, body)})
    with pytest.raises(DigestMismatchError, match=f"sha256 is {_digest(body)}"):
        client.manifest_info(parse_image_ref(f"reg.example.com/a/b@{DIGEST_A}"))


def test_announced_digest_mismatch_by_tag():
    body = _manifest()
    client = FakeClient({("a/b", "v1"): (200, OCI_MANIFEST, body, {"Docker-Content-Digest": DIGEST_A})})
    with pytest.raises(DigestMismatchError, match=f"announced digest {DIGEST_A}"):
        client.manifest_info(parse_image_ref("reg.example.com/a/b:v1", require_digest=False))


def test_manifest_without_media_type_field():
    body = json.dumps({"schemaVersion": 2, "layers": [{"digest": "sha256:" + "2" * 64, "size": 7}]}).encode()
    client = FakeClient({("a/b", _digest(body)): (200, "application/octet-stream", body)})
    info = client.manifest_info(parse_image_ref(f"reg.example.com/a/b@{_digest(body)}"))
    assert info.media_type == OCI_MANIFEST and info.layers == (("sha256:" + "2" * 64, 7),) and info.config_size == 0


def test_nested_index_and_depth_limit():
    leaf = _manifest(layers=(("sha256:" + "3" * 64, 42),), media_type=DOCKER_MANIFEST)

    def index(child):
        return json.dumps(
            {
                "mediaType": DOCKER_LIST,
                "manifests": [{"digest": _digest(child), "platform": {"os": "linux", "architecture": "amd64"}}],
            }
        ).encode()

    inner = index(leaf)
    outer = index(inner)
    responses = {("a/b", _digest(b)): (200, DOCKER_LIST, b) for b in (inner, outer)}
    responses[("a/b", _digest(leaf))] = (200, DOCKER_MANIFEST, leaf)
    info = FakeClient(responses).manifest_info(
        parse_image_ref(f"reg.example.com/a/b@{_digest(outer)}"), platform="linux/amd64"
    )
    assert info.platform_digest == _digest(leaf) and info.layers == (("sha256:" + "3" * 64, 42),)
    deepest = index(index(outer))
    responses.update({("a/b", _digest(b)): (200, DOCKER_LIST, b) for b in (index(outer), deepest)})
    with pytest.raises(ManifestFormatError, match="nested more than"):
        FakeClient(responses).manifest_info(
            parse_image_ref(f"reg.example.com/a/b@{_digest(deepest)}"), platform="linux/amd64"
        )


@pytest.mark.parametrize(
    "status, error, message",
    [
        (403, RegistryAuthRejected, "denied the credentials of user 'alice' for a/b (HTTP 403)"),
        (404, ManifestUnknownError, "manifest unknown"),
        (429, RegistryError, "answered HTTP 429"),
        (500, RegistryError, "answered HTTP 500"),
    ],
)
def test_http_errors(status, error, message):
    body = json.dumps({"errors": [{"code": "DENIED", "message": f"no way {PASSWORD}"}]}).encode()
    client = FakeClient({("a/b", "v1"): (status, "application/json", body)})
    with pytest.raises(error) as info:
        client.manifest_info(parse_image_ref("reg.example.com/a/b:v1", require_digest=False), credentials=ALICE)
    assert message in str(info.value) and "reg.example.com" in str(info.value)
    assert "DENIED: no way ********" in str(info.value) and PASSWORD not in error_text(info.value)


def test_repository_unknown():
    body = json.dumps({"errors": [{"code": "NAME_UNKNOWN", "message": "repository name not known"}]}).encode()
    client = FakeClient({("a/b", "v1"): (404, "application/json", body)})
    with pytest.raises(ManifestUnknownError, match="repository unknown: registry reg.example.com has no"):
        client.manifest_info(parse_image_ref("reg.example.com/a/b:v1", require_digest=False))


# --- helpers ---------------------------------------------------------------------------------------------------

# --- blobs --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, registry_name, credentials",
    [
        ("plain/single", "plain", None),
        ("secure/app", "secure", ALICE),
        ("token/app", "token", ALICE),
    ],
)
def test_blobs_stream_with_the_same_auth_as_manifests(registry_lab, client, key, registry_name, credentials):
    pushed = registry_lab.images[key]
    registry = getattr(registry_lab, registry_name)
    target = ref(registry, pushed.repository, pushed.digest)
    insecure = registry_name == "plain"
    info = client.manifest_info(target, credentials, insecure)
    config = client.read_blob(target, info.config_digest, credentials, insecure)
    assert len(config) == pushed.config_size and json.loads(config)["os"] == "linux"
    digest, size = pushed.layers[-1]
    with client.open_blob(target, digest, credentials, insecure) as blob:
        head = blob.read(100)
        assert blob.bytes_read == 100
        rest = blob.read()
    assert "sha256:" + hashlib.sha256(head + rest).hexdigest() == digest
    assert blob.bytes_read == size
    assert client.blob_bytes_read == pushed.config_size + size


def test_a_small_blob_read_refuses_a_large_one(registry_lab, client):
    pushed = registry_lab.images["plain/single"]
    target = ref(registry_lab.plain, pushed.repository)
    digest, size = pushed.layers[0]
    with pytest.raises(RegistryError, match=f"blob {digest} is larger than 1000 bytes"):
        client.read_blob(target, digest, insecure=True, limit=1000)
    assert client.blob_bytes_read <= 1001 + 65536
    with pytest.raises(ManifestUnknownError, match="blob unknown"):
        client.read_blob(target, "sha256:" + "0" * 64, insecure=True)


def _serve(handler_body):
    """A stdlib HTTP server on 127.0.0.1 answering GET with ``handler_body(handler)``; returns (server, host)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            handler_body(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "127.0.0.1:%d" % server.server_address[1]


@pytest.mark.parametrize("tampered", [False, True])
def test_blob_redirects_are_followed_without_the_registry_credentials(tampered):
    data = os.urandom(5000)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    seen = []

    def storage(handler):
        seen.append(handler.headers.get("Authorization"))
        body = data[:-1] + b"x" if tampered else data
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    cdn, cdn_host = _serve(storage)

    def registry(handler):
        if handler.headers.get("Authorization") != "Basic " + base64.b64encode(b"u:p").decode():
            handler.send_response(401)
            handler.send_header("WWW-Authenticate", 'Basic realm="r"')
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        handler.send_response(307)
        handler.send_header("Location", f"http://{cdn_host}/blobs/x?signature=abc")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    origin, origin_host = _serve(registry)
    client = RegistryClient(certs_dirs=[], timeout=5)
    try:
        target = parse_image_ref(f"{origin_host}/org/app", require_digest=False)
        with client.open_blob(target, digest, RegistryCredentials("u", "p"), insecure=True) as blob:
            if tampered:
                with pytest.raises(DigestMismatchError, match=f"whose sha256 is not {digest}"):
                    blob.read()
            else:
                assert blob.read() == data
        assert seen == [None]
    finally:
        client.close()
        origin.shutdown()
        cdn.shutdown()


def test_close_reaches_the_connections_of_worker_threads():
    """The estimator reads manifests from a thread pool; closing the client closes those threads' connections."""
    closed = []

    class Recorded:
        def close(self):
            closed.append(self)

    with RegistryClient(timeout=1) as client:

        def use():
            connection, reused = client._connection("http", "127.0.0.1:1", "127.0.0.1", False)
            assert not reused
            client._local.pool[("http", "127.0.0.1:1", False)] = Recorded()

        workers = [threading.Thread(target=use) for _index in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert closed == []
    assert len(closed) == 3
