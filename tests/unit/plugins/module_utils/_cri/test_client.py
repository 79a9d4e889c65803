# SPDX-License-Identifier: GPL-3.0-or-later
"""CRI client: endpoints, socket checks, error classification, deadlines (tests/functional covers real calls)."""

from __future__ import annotations

import os
import socket
import threading

import grpc
import pytest

from ansible_collections.pinned.images.plugins.module_utils._cri import client as cri
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient, CriError


@pytest.mark.parametrize(
    "value, target, path",
    [
        (
            "/run/containerd/containerd.sock",
            "unix:///run/containerd/containerd.sock",
            "/run/containerd/containerd.sock",
        ),
        ("unix:///var/run/crio/crio.sock", "unix:///var/run/crio/crio.sock", "/var/run/crio/crio.sock"),
        ("127.0.0.1:10010", "127.0.0.1:10010", None),
        ("node1.example:3000", "node1.example:3000", None),
    ],
)
def test_resolve_endpoint(value, target, path):
    assert cri.resolve_endpoint(value) == (target, path)


@pytest.mark.parametrize("value", ["crio.sock", "host:", ":1", "host:port", "tcp://x"])
def test_resolve_endpoint_rejects(value):
    with pytest.raises(CriError, match="neither a unix socket path"):
        cri.resolve_endpoint(value)


def test_auto_detection_order(monkeypatch, tmp_path):
    crio, containerd = tmp_path / "crio.sock", tmp_path / "containerd.sock"
    monkeypatch.setattr(cri, "DEFAULT_SOCKETS", (("cri-o", str(crio)), ("containerd", str(containerd))))
    with pytest.raises(CriError, match="no CRI socket found") as info:
        cri.resolve_endpoint(None)
    assert info.value.kind == cri.UNAVAILABLE
    containerd.touch()
    assert cri.resolve_endpoint(None)[1] == str(containerd)
    crio.touch()
    assert cri.resolve_endpoint("")[1] == str(crio)


def test_socket_path_checks(tmp_path):
    missing = tmp_path / "missing.sock"
    with pytest.raises(CriError, match="is crio or containerd running") as info:
        CriClient(str(missing)).connect()
    assert info.value.kind == cri.UNAVAILABLE
    regular = tmp_path / "regular"
    regular.touch()
    with pytest.raises(CriError, match="is not a unix socket") as info:
        CriClient(str(regular)).connect()
    assert info.value.kind == cri.INVALID


def test_nobody_listening_times_out_with_a_clear_error(tmp_path):
    path = str(tmp_path / "idle.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)  # bound, never accepting: the connection is refused
    try:
        with pytest.raises(CriError, match=r"could not connect to the CRI runtime at .*idle.sock within 0.2s") as info:
            CriClient(path, connect_timeout=0.2).connect()
        assert info.value.kind == cri.UNAVAILABLE
        assert str(info.value).endswith(
            ": nothing is listening there (connection refused; a socket file left by a stopped runtime?)"
        )
    finally:
        server.close()
        os.unlink(path)


def serve_once(path, answer):
    """A unix socket server that reads what the client sends first, then answers ``answer`` (None: stays silent)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    stop = threading.Event()

    def run():
        while not stop.is_set():
            try:
                conn, _address = server.accept()
            except OSError:
                return
            conn.recv(1024)
            if answer is not None:
                conn.sendall(answer)
                conn.close()
            else:
                stop.wait()
                conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def close():
        stop.set()
        server.close()

    return close


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(None, id="silent"),
        # An HTTP/2 server's SETTINGS frame, then nothing: a gRPC server whose Version never comes back.
        pytest.param(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00", id="settings-only"),
    ],
)
def test_a_runtime_that_accepts_but_never_answers_is_named_hung(tmp_path, answer):
    path = str(tmp_path / "containerd.sock")
    close = serve_once(path, answer)
    try:
        with pytest.raises(CriError) as info:
            CriClient(path, connect_timeout=0.3).connect()
    finally:
        close()
    assert str(info.value) == (
        f"the runtime at {path} accepts connections but does not answer within 0.3 s (hung or overloaded?)"
    )
    assert info.value.kind == cri.UNAVAILABLE
    assert "not a CRI socket" not in str(info.value)


def test_an_http2_server_that_answers_only_settings_is_a_runtime_not_answering(tmp_path):
    path = str(tmp_path / "crio.sock")
    close = serve_once(path, b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    try:
        assert cri.describe_listener(path, timeout=0.3) is None
    finally:
        close()


@pytest.mark.parametrize(
    "name, answer, why",
    [
        (
            "api.sock.ttrpc",
            None,
            "something there accepts connections but does not answer gRPC (HTTP/2): not a CRI socket "
            "(a .ttrpc socket is containerd's ttrpc API; its CRI socket is the same path without .ttrpc)",
        ),
        (
            "http.sock",
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            "something there answered 'HTTP/1.1 400 Bad Request\\r\\n\\r\\n', which is not gRPC (HTTP/2): not a CRI socket",
        ),
        ("closer.sock", b"", "something there closed the connection without a gRPC (HTTP/2) answer: not a CRI socket"),
    ],
)
def test_a_socket_that_is_not_cri_says_what_answered(tmp_path, name, answer, why):
    path = str(tmp_path / name)
    close = serve_once(path, answer)
    try:
        with pytest.raises(CriError) as info:
            CriClient(path, connect_timeout=0.3).connect()
    finally:
        close()
    assert str(info.value) == f"could not connect to the CRI runtime at {path} within 0.3s: {why}"
    assert "is crio or containerd running" not in str(info.value)


@pytest.mark.parametrize(
    "message, kind",
    [
        ("failed to pull: write /var/lib/x: no space left on device", cri.NO_SPACE),
        ("pulling from host q.io failed with status code [manifests sha256:1]: 401 Unauthorized", cri.AUTH),
        ("unexpected status from HEAD request: 403 Forbidden", cri.AUTH),
        ('failed to resolve reference "q.io/a@sha256:0": q.io/a@sha256:0: not found', cri.NOT_FOUND),
        ("reading manifest sha256:0 in q.io/a: manifest unknown", cri.NOT_FOUND),
        ("dial tcp 127.0.0.1:1: connect: connection refused", cri.UNKNOWN),
    ],
)
def test_classify_message(message, kind):
    assert cri.classify_message(message) == kind
    assert CriError(message, kind).retryable is (kind == cri.UNKNOWN)


class _RpcError(grpc.RpcError):
    def __init__(self, code, details):
        super().__init__()
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


def connected_client():
    client = CriClient("127.0.0.1:1", timeout=7)
    client._channel = object()  # pylint: disable=protected-access
    return client


def test_deadlines_default_explicit_and_none():
    seen = []

    def method(request, timeout):
        seen.append(timeout)
        return request

    client = connected_client()
    client._call("X", method, "req")  # pylint: disable=protected-access
    client._call("X", method, "req", timeout=3)  # pylint: disable=protected-access
    client._call("X", method, "req", timeout=None)  # pylint: disable=protected-access
    assert seen == [7, 3, None]


@pytest.mark.parametrize(
    "code, details, kind",
    [
        (grpc.StatusCode.DEADLINE_EXCEEDED, "", cri.DEADLINE),
        (grpc.StatusCode.UNAVAILABLE, "connection reset", cri.UNAVAILABLE),
        (grpc.StatusCode.NOT_FOUND, "image not found", cri.NOT_FOUND),
        (grpc.StatusCode.PERMISSION_DENIED, "denied", cri.AUTH),
        (grpc.StatusCode.INVALID_ARGUMENT, "bad ref", cri.INVALID),
        (grpc.StatusCode.UNIMPLEMENTED, "unknown service runtime.v1.ImageService", cri.INVALID),
        (grpc.StatusCode.UNKNOWN, "failed to extract layer: no space left on device", cri.NO_SPACE),
    ],
)
def test_grpc_errors_become_clear_cri_errors(code, details, kind):
    def method(request, timeout):
        raise _RpcError(code, details)

    with pytest.raises(CriError) as info:
        connected_client()._call("PullImage q.io/a", method, "req", timeout=5)  # pylint: disable=protected-access
    assert info.value.kind == kind
    assert str(info.value).startswith("PullImage q.io/a: ")
    if kind == cri.DEADLINE:
        assert "deadline of 5s exceeded" in str(info.value)


@pytest.mark.parametrize("status", [None, grpc.StatusCode.UNIMPLEMENTED])
def test_connect_answers_without_a_connectivity_watch(tmp_path, status):
    """A gRPC server that answers Version (or refuses it): connected, and no connectivity watch is left running,
    whose 0.2 s polling close() would wait for."""
    from concurrent import futures  # pylint: disable=import-outside-toplevel

    from ansible_collections.pinned.images.plugins.module_utils._cri.cri_proto import cri_image_pb2 as pb  # noqa: E501  pylint: disable=import-outside-toplevel

    def version(_request, context):
        if status is not None:
            context.abort(status, "not here")
        return pb.VersionResponse(runtime_name="fake", runtime_version="1")

    handler = grpc.method_handlers_generic_handler(
        "runtime.v1.RuntimeService",
        {
            "Version": grpc.unary_unary_rpc_method_handler(
                version,
                request_deserializer=pb.VersionRequest.FromString,
                response_serializer=pb.VersionResponse.SerializeToString,
            ),
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1), handlers=[handler])
    path = str(tmp_path / "cri.sock")
    server.add_insecure_port(f"unix://{path}")
    server.start()
    try:
        client = CriClient(path, connect_timeout=5).connect()
        channel = client._channel  # pylint: disable=protected-access
        assert channel is not None
        assert not channel._connectivity_state.polling  # pylint: disable=protected-access
        client.close()
        assert client._channel is None  # pylint: disable=protected-access
    finally:
        server.stop(None)


def test_a_listed_container_names_its_image_three_ways_and_its_state():
    from ansible_collections.pinned.images.plugins.module_utils._cri.client import _container_to_dict
    from ansible_collections.pinned.images.plugins.module_utils._cri.cri_proto import cri_image_pb2 as pb

    message = pb.Container(
        id="c1",
        pod_sandbox_id="p1",
        metadata=pb.ContainerMetadata(name="web"),
        image=pb.ImageSpec(image="sha256:1"),
        image_ref="quay.io/a@sha256:" + "a" * 64,
        state=pb.CONTAINER_EXITED,
        image_id="sha256:1",
    )
    assert _container_to_dict(message) == dict(
        id="c1",
        name="web",
        pod_sandbox_id="p1",
        image="sha256:1",
        image_ref="quay.io/a@sha256:" + "a" * 64,
        image_id="sha256:1",
        state="exited",
    )
