# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A small client for the CRI ``runtime.v1`` ImageService and RuntimeService over gRPC.

Runtime differences are explicit here: CRI-O listens on /var/run/crio/crio.sock, containerd on
/run/containerd/containerd.sock (or a distribution's path, ``_cri/layout``); both speak the same ``runtime.v1`` API, so nothing else in the client differs.
"""

from __future__ import annotations

import os
import socket as _socket
import stat
from typing import Any, Callable, Dict, List, Mapping, Optional, TypedDict, Union, cast

# First (isort keeps it there): it puts the role's private copy of grpcio and protobuf on sys.path, which the stubs
# below import (see _node_python/deps).
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import HAS_NODE_DEPS as HAS_GRPC
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import require_node_deps

# isort: split
from ansible_collections.pinned.images.plugins.module_utils._common.errors import (
    AUTH,
    DEADLINE,
    INVALID,
    NO_SPACE,
    NOT_FOUND,
    PERMANENT_ERROR_KINDS,
    PERMISSION,
    UNAVAILABLE,
    UNKNOWN,
    CollectionError,
)
from ansible_collections.pinned.images.plugins.module_utils._cri.cri_proto import cri_image_pb2 as pb
from ansible_collections.pinned.images.plugins.module_utils._cri.cri_proto import cri_image_pb2_grpc as pb_grpc
from ansible_collections.pinned.images.plugins.module_utils._cri.layout import SOCKET_LAYOUTS

if HAS_GRPC:
    import grpc

__all__ = [
    "CRI_API_VERSION",
    "DEFAULT_SOCKETS",
    "MAX_MESSAGE_BYTES",
    "CriClient",
    "CriContainer",
    "CriError",
    "CriImage",
    "ImageFsUsage",
    "RuntimeVersion",
    "classify_message",
    "describe_listener",
    "resolve_endpoint",
]

# Tried in this order when no socket is given: CRI-O's, containerd's, then the distributions' (_cri/layout).
DEFAULT_SOCKETS = tuple((layout.runtime, layout.socket) for layout in SOCKET_LAYOUTS)
# The kubelet's limit: ListImages on a node with thousands of images exceeds grpc's 4 MiB default.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
CRI_API_VERSION = "v1"
# Marks "use the client's per-call timeout", since None already means "no deadline".
_CALL_TIMEOUT = object()

# Lower-case fragments of runtime error messages, most specific first. containerd and CRI-O both
# pass registry errors through as UNKNOWN with the text of the underlying Go error.
_MESSAGE_KINDS = (
    (NO_SPACE, ("no space left on device", "enospc")),
    (
        AUTH,
        (
            "401 unauthorized",
            "unauthorized",
            "authentication required",
            "403 forbidden",
            "access to the requested resource is not authorized",
            "denied:",
        ),
    ),
    (NOT_FOUND, ("manifest unknown", "not found", "name unknown", "404 not found")),
    (INVALID, ("invalid reference format", "failed to parse image", "invalid image name")),
)


class CriError(CollectionError):
    """A CRI failure with a user-facing message and a ``kind`` (``error_kind``) saying whether a retry may help."""

    def __init__(self, message: str, kind: str = UNKNOWN) -> None:
        super().__init__(message, details={"error_kind": kind})
        self.kind = kind

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed (the kind is not one a retry cannot fix)."""
        return self.kind not in PERMANENT_ERROR_KINDS


def classify_message(message: str) -> str:
    """The error kind a runtime's error text names (no space, auth, not found, ...), else UNKNOWN."""
    lowered = message.lower()
    for kind, fragments in _MESSAGE_KINDS:
        if any(fragment in lowered for fragment in fragments):
            return kind
    return UNKNOWN


def resolve_endpoint(socket: str | None) -> tuple[str, str | None]:
    """Return (grpc target, unix socket path or None) for ``socket``; auto-detect when it is empty."""
    if not socket:
        for _runtime, path in DEFAULT_SOCKETS:
            if os.path.exists(path):
                return "unix://" + path, path
        looked = ", ".join(path for _runtime, path in DEFAULT_SOCKETS)
        raise CriError(
            f"no CRI socket found (looked for {looked}): is crio or containerd running? Set cri_socket.", UNAVAILABLE
        )
    if socket.startswith("unix://"):
        path = socket[len("unix://") :]
        return "unix://" + path, path
    if socket.startswith("/"):
        return "unix://" + socket, socket
    host, sep, port = socket.rpartition(":")
    if sep and host and port.isdigit():
        return socket, None
    raise CriError(f"cri_socket {socket!r} is neither a unix socket path (/path, unix:///path) nor host:port", INVALID)


def _check_socket_path(path: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CriError(
            f"nothing is listening at {path} (no such file): is crio or containerd running?", UNAVAILABLE
        ) from None
    except PermissionError:
        raise CriError(f"permission denied reading {path}: run as root (become: true)", PERMISSION) from None
    if not stat.S_ISSOCK(mode):
        raise CriError(f"{path} is not a unix socket", INVALID)
    if not os.access(path, os.R_OK | os.W_OK):
        raise CriError(f"permission denied on {path}: run as root (become: true)", PERMISSION)


# What a gRPC client sends first: the HTTP/2 preface and an empty SETTINGS frame.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_PROBE_SECONDS = 1.0


def describe_listener(path: str, timeout: float = _PROBE_SECONDS) -> Optional[str]:
    """Why a gRPC channel to the unix socket ``path`` did not become ready, from what answers there; None when
    something accepts connections there but gives no answer (a hung or overloaded runtime)."""
    not_cri = "not a CRI socket"
    ttrpc = path.endswith(".ttrpc")
    if ttrpc:
        not_cri += " (a .ttrpc socket is containerd's ttrpc API; its CRI socket is the same path without .ttrpc)"
    try:
        with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(_HTTP2_PREFACE)
            answer = sock.recv(64)
    except ConnectionRefusedError:
        return "nothing is listening there (connection refused; a socket file left by a stopped runtime?)"
    except _socket.timeout:
        # containerd's ttrpc socket waits for a frame of its own; a CRI socket that is silent is a runtime that hangs.
        if ttrpc:
            return f"something there accepts connections but does not answer gRPC (HTTP/2): {not_cri}"
        return None
    except OSError as exc:
        return f"cannot talk to it: {exc.strerror or exc}"
    if not answer:
        return f"something there closed the connection without a gRPC (HTTP/2) answer: {not_cri}"
    # An HTTP/2 server answers with a SETTINGS frame (type 4 at offset 3): a gRPC server whose Version did not
    # come back in time.
    if len(answer) >= 9 and answer[3] == 4:
        return None
    shown = answer[:40].decode("latin-1")
    return f"something there answered {shown!r}, which is not gRPC (HTTP/2): {not_cri}"


class RuntimeVersion(TypedDict):
    """The runtime's Version answer."""

    runtime_name: str
    runtime_version: str
    runtime_api_version: str


class CriImage(TypedDict):
    """An image as the runtime lists it."""

    id: str
    repo_tags: List[str]
    repo_digests: List[str]
    size: int
    pinned: bool


class ImageFsUsage(TypedDict):
    """One image filesystem of the runtime's ImageFsInfo answer."""

    mountpoint: str
    used_bytes: int
    inodes_used: int


class CriContainer(TypedDict):
    """A container as the runtime lists it: the image names it was created from, and its state."""

    id: str
    name: str
    pod_sandbox_id: str
    # The image as the kubelet asked for it (ImageSpec.image), the runtime's reference, and its image id (newer
    # runtimes; empty otherwise).
    image: str
    image_ref: str
    image_id: str
    # created, running, exited or unknown.
    state: str


# ContainerState's numbers in runtime.v1.
_CONTAINER_STATES = {0: "created", 1: "running", 2: "exited", 3: "unknown"}


def _container_to_dict(container: Any) -> CriContainer:
    return CriContainer(
        id=container.id,
        name=container.metadata.name,
        pod_sandbox_id=container.pod_sandbox_id,
        image=container.image.image,
        image_ref=container.image_ref,
        image_id=container.image_id,
        state=_CONTAINER_STATES.get(container.state, "unknown"),
    )


def _image_to_dict(image: Any) -> CriImage:
    return CriImage(
        id=image.id,
        repo_tags=list(image.repo_tags),
        repo_digests=list(image.repo_digests),
        size=image.size,
        pinned=image.pinned,
    )


class CriClient:
    """Connects lazily; usable from several threads at once (a gRPC channel is thread-safe)."""

    def __init__(self, socket: Optional[str] = None, connect_timeout: float = 5.0, timeout: float = 60.0) -> None:
        # Without grpc every call would fail obscurely: say what is missing and how to provide it.
        require_node_deps()
        self.target, self.socket_path = resolve_endpoint(socket)
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._channel: Any = None
        self._images: Any = None
        self._runtime: Any = None

    @property
    def endpoint(self) -> str:
        """The socket path, or the gRPC target when it is not a unix socket."""
        return self.socket_path or self.target

    def connect(self) -> CriClient:
        """Open the channel once and prove it with a Version call; CriError (UNAVAILABLE) when nothing answers."""
        if self._channel is not None:
            return self
        if self.socket_path:
            _check_socket_path(self.socket_path)
        channel = grpc.insecure_channel(
            self.target,
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 3000),
            ],
        )
        self._bind(channel)
        # A first call that waits for the connection, not channel_ready_future: its connectivity watch makes
        # close() wait up to 0.2 s, longer than a whole run with nothing to do.
        try:
            self._runtime.Version(
                pb.VersionRequest(version=CRI_API_VERSION), timeout=self.connect_timeout, wait_for_ready=True
            )
        except grpc.RpcError as err:
            # Any other answer, an error included, proves the connection; the call that follows reports it.
            if err.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
                channel.close()
                raise self._unreachable() from None
        self._channel = channel
        return self

    def _unreachable(self) -> CriError:
        why: Optional[str] = "is crio or containerd running?"
        if self.socket_path:
            why = describe_listener(self.socket_path)
        if why is None:
            return CriError(
                f"the runtime at {self.endpoint} accepts connections but does not answer within "
                f"{self.connect_timeout:g} s (hung or overloaded?)",
                UNAVAILABLE,
            )
        return CriError(
            f"could not connect to the CRI runtime at {self.endpoint} within {self.connect_timeout:g}s: {why}",
            UNAVAILABLE,
        )

    def _bind(self, channel: Any) -> None:
        """Create the stubs on the channel; subclasses add the services of their runtime."""
        self._images = pb_grpc.ImageServiceStub(channel)
        self._runtime = pb_grpc.RuntimeServiceStub(channel)

    def close(self) -> None:
        """Close the channel; the next call connects again."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def __enter__(self) -> CriClient:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(
        self, what: str, method: Callable[..., Any], request: Any, timeout: Union[float, None, object] = _CALL_TIMEOUT
    ) -> Any:
        """``timeout``: seconds, None for no deadline, default ``self.timeout``."""
        deadline = self.timeout if timeout is _CALL_TIMEOUT else cast(Optional[float], timeout)
        self.connect()
        try:
            return method(request, timeout=deadline)
        except grpc.RpcError as err:
            raise self._translate(what, err, deadline) from None

    def _translate(self, what: str, err: Any, deadline: Optional[float]) -> CriError:
        code = err.code()
        details = err.details() or str(code)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return CriError(f"{what}: deadline of {deadline:g}s exceeded", DEADLINE)
        if code == grpc.StatusCode.UNAVAILABLE:
            return CriError(f"{what}: CRI runtime at {self.endpoint} unavailable: {details}", UNAVAILABLE)
        if code == grpc.StatusCode.NOT_FOUND:
            return CriError(f"{what}: {details}", NOT_FOUND)
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            return CriError(f"{what}: {details}", AUTH)
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            return CriError(f"{what}: {details}", INVALID)
        if code == grpc.StatusCode.UNIMPLEMENTED:
            return CriError(
                f"{what}: the runtime at {self.endpoint} does not implement CRI runtime.v1: {details}", INVALID
            )
        return CriError(f"{what}: {details}", classify_message(details))

    def version(self) -> RuntimeVersion:
        """The runtime's name and versions."""
        response = self._call("Version", self._runtime_stub().Version, pb.VersionRequest(version=CRI_API_VERSION))
        return RuntimeVersion(
            runtime_name=response.runtime_name,
            runtime_version=response.runtime_version,
            runtime_api_version=response.runtime_api_version,
        )

    def status_info(self) -> Dict[str, str]:
        """The runtime's verbose ``Status`` info: JSON documents by key (containerd: ``config``, its CRI config)."""
        response = self._call("Status", self._runtime_stub().Status, pb.StatusRequest(verbose=True))
        return dict(response.info)

    def list_images(self) -> List[CriImage]:
        """Every image the runtime has."""
        response = self._call("ListImages", self._image_stub().ListImages, pb.ListImagesRequest())
        return [_image_to_dict(image) for image in response.images]

    def image_status(self, image: str) -> Optional[CriImage]:
        """The image, or None when the runtime does not have it."""
        response = self._call(
            f"ImageStatus {image}",
            self._image_stub().ImageStatus,
            pb.ImageStatusRequest(image=pb.ImageSpec(image=image)),
        )
        return _image_to_dict(response.image) if response.HasField("image") and response.image.id else None

    def pull_image(self, image: str, auth: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> str:
        """Pull ``image``; ``timeout`` None means no deadline (big images take as long as they take)."""
        request = pb.PullImageRequest(image=pb.ImageSpec(image=image))
        if auth:
            request.auth.CopyFrom(pb.AuthConfig(**auth))
        reply = self._call(f"PullImage {image}", self._image_stub().PullImage, request, timeout)
        return str(reply.image_ref)

    def remove_image(self, image: str) -> None:
        """Remove the image from the runtime."""
        self._call(
            f"RemoveImage {image}",
            self._image_stub().RemoveImage,
            pb.RemoveImageRequest(image=pb.ImageSpec(image=image)),
        )

    def list_containers(self) -> List[CriContainer]:
        """Every container of the runtime, in any state (no filter)."""
        response = self._call("ListContainers", self._runtime_stub().ListContainers, pb.ListContainersRequest())
        return [_container_to_dict(container) for container in response.containers]

    def image_fs_info(self) -> List[ImageFsUsage]:
        """The image filesystems and what images use on them."""
        response = self._call("ImageFsInfo", self._image_stub().ImageFsInfo, pb.ImageFsInfoRequest())
        return [
            ImageFsUsage(
                mountpoint=usage.fs_id.mountpoint,
                used_bytes=usage.used_bytes.value,
                inodes_used=usage.inodes_used.value,
            )
            for usage in response.image_filesystems
        ]

    def _image_stub(self) -> Any:
        self.connect()
        return self._images

    def _runtime_stub(self) -> Any:
        self.connect()
        return self._runtime
