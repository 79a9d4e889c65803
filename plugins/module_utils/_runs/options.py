# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The argument specs several modules share, and their readers: the one place where those options are named.

``CRI_CLIENT_ARGUMENT_SPEC`` -> ``RuntimeOptions.from_params(params)``, for ``cri_client(options)`` and
``containerd_client(options)``;
``REGISTRY_ARGUMENT_SPEC`` -> ``RegistryOptions.from_params(params)``; ``SELECTION_ARGUMENT_SPEC`` (with
``SELECTION_MUTUALLY_EXCLUSIVE``, ``SELECTION_REQUIRED_BY``) -> ``selected_images(params, validate, emptied)``; ``HOST_ROOT_ARGUMENT_SPEC`` (every node
module's) -> ``node_params(params, paths)``, the parameters with their node paths under ``host_root``, and
``cri_socket(options)``, the default sockets looked for under it.
``Problems`` gathers every problem of a request's options, so that one error names them all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar

from ansible.module_utils.basic import env_fallback

from ansible_collections.pinned.images.plugins.module_utils._common.errors import UNAVAILABLE, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.host_root import (
    check_host_root,
    host_path,
    host_path_list,
    host_paths,
    resolved_host_path,
)
from ansible_collections.pinned.images.plugins.module_utils._common.node_state import (
    ENV_STATE_DIR,
    LOCK_NAME,
    STATE_DIR,
    ensure_state_dir,
)
from ansible_collections.pinned.images.plugins.module_utils._prune.record import adopt_former, default_record_file
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import (
    DEFAULT_AUTH_FILE,
    DockerConfig,
    load_docker_config,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.client import DEFAULT_CERTS_DIRS
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    DEFAULT_REGISTRIES_CONF,
    DEFAULT_REGISTRIES_CONF_D,
    RegistriesConf,
    load_registries_conf,
)

# The node paths of the shared options (CRI, registry), which node_params puts under host_root.
_SHARED_NODE_PATHS = (
    "cri_socket",
    "auth_file",
    "registries_conf",
    "registry_certs_dirs",
    "state_dir",
    "former_record_file",
)

if TYPE_CHECKING:  # pragma: no cover
    from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
    from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
    from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DropinSettings

__all__ = [
    "CRI_CLIENT_ARGUMENT_SPEC",
    "DEFAULT_CRI_CONNECT_TIMEOUT",
    "DEFAULT_CRI_TIMEOUT",
    "ENV_CRI_SOCKET",
    "HOST_ROOT_ARGUMENT_SPEC",
    "NODE_STATE_ARGUMENT_SPEC",
    "REGISTRY_ARGUMENT_SPEC",
    "SELECTION_ARGUMENT_SPEC",
    "SELECTION_MUTUALLY_EXCLUSIVE",
    "SELECTION_REQUIRED_BY",
    "NodeStateFiles",
    "Problems",
    "RegistryOptions",
    "RuntimeOptions",
    "containerd_client",
    "cri_client",
    "cri_socket",
    "dropin_settings",
    "node_params",
    "selected_images",
    "socket_source",
]

_T = TypeVar("_T")


class Problems:
    """The problems found in a module's options; ``raise_any()`` raises them as one error (a single error as it
    was raised, so that its class and details stay)."""

    def __init__(self) -> None:
        self.errors: List[CollectionError] = []

    def add(self, message: str) -> None:
        """Record one problem."""
        self.errors.append(CollectionError(message))

    def at_least(self, params: Mapping[str, Any], name: str, low: float) -> None:
        """``params[name]`` must be at least ``low``."""
        if params[name] < low:
            self.add(f"{name} must be at least {low}, got {params[name]}")

    def above_zero(self, params: Mapping[str, Any], name: str) -> None:
        """``params[name]`` must be above 0."""
        if params[name] <= 0:
            self.add(f"{name} must be above 0, got {params[name]}")

    def attempt(self, read: Callable[[], _T]) -> Optional[_T]:
        """``read()``, or None with its CollectionError recorded."""
        try:
            return read()
        except CollectionError as error:
            self.errors.append(error)
            return None

    def raise_any(self) -> None:
        """Raise what was found, if anything."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise CollectionError([problem for error in self.errors for problem in error.problems])


# Every node module's: where the host's / is (a pod with the host's root mounted); its paths go under it.
HOST_ROOT_ARGUMENT_SPEC = dict(host_root=dict(type="path"))
# The prefetch's and the prune's lock and record (doc fragment ``node_state``); both paths are node paths.
NODE_STATE_ARGUMENT_SPEC = dict(
    state_dir=dict(type="path", default=STATE_DIR, fallback=(env_fallback, [ENV_STATE_DIR])),
    former_record_file=dict(type="path"),
)


@dataclass(frozen=True)
class NodeStateFiles:
    """The lock and the record of the prefetch and the prune: given, or in the state directory
    (``NODE_STATE_ARGUMENT_SPEC``), from parameters with their node paths under ``host_root`` (``node_params``)."""

    lock_file: str
    record_file: str
    # A record kept elsewhere before, moved once (``_prune/record.adopt_former``).
    former_record_file: Optional[str] = None
    # The state directory when one of the files is in it (made before use), else None.
    state_dir: Optional[str] = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "NodeStateFiles":
        """The files ``lock_file`` and ``record_file`` name, or those of ``state_dir``."""
        state_dir = params["state_dir"]
        lock_file = params.get("lock_file") or os.path.join(state_dir, LOCK_NAME)
        record_file = params.get("record_file") or default_record_file(state_dir)
        used = not (params.get("lock_file") and params.get("record_file"))
        return cls(
            lock_file=lock_file,
            record_file=record_file,
            former_record_file=params.get("former_record_file") or None,
            state_dir=state_dir if used else None,
        )

    def prepare(self, check_mode: bool) -> None:
        """Make the state directory (not in check mode): NodeStateError when it cannot be used."""
        if self.state_dir and not check_mode:
            ensure_state_dir(self.state_dir)

    def record_to_read(self, check_mode: bool) -> str:
        """The record file, after a former record moved there (``adopt_former``; read where it is in check mode)."""
        return adopt_former(self.record_file, self.former_record_file, check_mode)


def node_params(params: Mapping[str, Any], paths: Tuple[str, ...], joined: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """The module's parameters with its node paths (``paths``, with the shared CRI and registry ones, and the
    ``:``-separated lists ``joined``) under ``host_root``; ``host_root`` itself checked (None: none)."""
    root = check_host_root(params.get("host_root"))
    mapped = dict(params, host_root=root)
    for name in paths + _SHARED_NODE_PATHS:
        if name in params:
            mapped[name] = host_paths(root, params[name])
    for name in joined:
        if name in params:
            mapped[name] = host_path_list(root, params[name])
    return mapped


DEFAULT_CRI_CONNECT_TIMEOUT = 5.0
DEFAULT_CRI_TIMEOUT = 60.0
# crictl's variable: a shell that set it for crictl gives the modules the same runtime.
ENV_CRI_SOCKET = "CONTAINER_RUNTIME_ENDPOINT"
CRI_CLIENT_ARGUMENT_SPEC = dict(
    cri_socket=dict(type="str", fallback=(env_fallback, [ENV_CRI_SOCKET])),
    cri_connect_timeout=dict(type="float", default=DEFAULT_CRI_CONNECT_TIMEOUT),
    cri_timeout=dict(type="float", default=DEFAULT_CRI_TIMEOUT),
)


@dataclass(frozen=True)
class RuntimeOptions:
    """How a run reaches the runtime over CRI: the socket (None: found by ``cri_socket``), the timeouts,
    containerd's namespace (None: the CRI plugin's) and where the host's / is (``host_root``, None: here)."""

    cri_socket: Optional[str] = None
    cri_connect_timeout: float = DEFAULT_CRI_CONNECT_TIMEOUT
    cri_timeout: float = DEFAULT_CRI_TIMEOUT
    containerd_namespace: Optional[str] = None
    host_root: Optional[str] = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "RuntimeOptions":
        """The options of ``CRI_CLIENT_ARGUMENT_SPEC`` (and ``containerd_namespace``, ``host_root`` where the module
        has them), from parameters with their node paths under ``host_root`` (``node_params``)."""
        return cls(
            cri_socket=params.get("cri_socket"),
            cri_connect_timeout=params["cri_connect_timeout"],
            cri_timeout=params["cri_timeout"],
            containerd_namespace=params.get("containerd_namespace"),
            host_root=params.get("host_root"),
        )


def cri_socket(options: RuntimeOptions) -> Optional[str]:
    """The CRI socket option; when it is empty under a ``host_root``, the first of the runtimes' default sockets
    found under it (None: the client looks for them and reports what it looked for)."""
    # Here, not at the top, as below: controller-side modules share this file and must not import grpc or the
    # set files' loader.
    from ansible_collections.pinned.images.plugins.module_utils._cri.client import DEFAULT_SOCKETS, CriError

    socket = options.cri_socket
    root = options.host_root
    if socket or not root:
        return socket
    # Resolved inside the root: Debian's /var/run is a link to /run, which the pod would follow to its own.
    candidates = [resolved_host_path(root, path) for _runtime, path in DEFAULT_SOCKETS]
    found = next((path for path in candidates if os.path.exists(path)), None)
    if found is None:
        raise CriError(
            f"no CRI socket found under host_root {root} (looked for {', '.join(candidates)}): is the host's / "
            "mounted there, and crio or containerd running? Set cri_socket.",
            UNAVAILABLE,
        )
    return found


def socket_source(params: Mapping[str, Any]) -> str:
    """Where the CRI socket of a run comes from, for the layout's report."""
    if params.get("cri_socket"):
        return "the cri_socket option"
    return "the first of the known sockets that exists (docs/nodes.md)"


def cri_client(options: RuntimeOptions) -> CriClient:
    """A CRI client on the socket and timeouts of ``options``."""
    from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient

    return CriClient(cri_socket(options), options.cri_connect_timeout, options.cri_timeout)


def containerd_client(options: RuntimeOptions) -> ContainerdClient:
    """A containerd client on the socket, timeouts and containerd namespace of ``options``."""
    from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import CRI_NAMESPACE, ContainerdClient

    return ContainerdClient(
        cri_socket(options),
        options.cri_connect_timeout,
        options.cri_timeout,
        options.containerd_namespace or CRI_NAMESPACE,
    )


def dropin_settings(params: Mapping[str, Any], force: bool = False) -> DropinSettings:
    """The CRI-O drop-in options every module that writes it names alike (``dropin_path``, ``crio_reload``,
    ``crio_pid_file``, ``settle_timeout``), with their node paths under ``host_root`` (``node_params``)."""
    from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DropinSettings

    return DropinSettings(
        path=params["dropin_path"],
        reload=params["crio_reload"],
        pid_file=params["crio_pid_file"],
        force=force,
        settle_timeout=params["settle_timeout"],
    )


REGISTRY_ARGUMENT_SPEC = dict(
    auth_file=dict(type="path"),
    registries_conf=dict(type="path"),
    registry_mirrors=dict(
        type="list",
        elements="dict",
        options=dict(
            prefix=dict(type="str", required=True),
            location=dict(type="str"),
            insecure=dict(type="bool", default=False),
            blocked=dict(type="bool", default=False),
            mirror_by_digest_only=dict(type="bool", default=False),
            mirrors=dict(
                type="list",
                elements="dict",
                options=dict(
                    location=dict(type="str", required=True),
                    insecure=dict(type="bool", default=False),
                    pull_from_mirror=dict(type="str", choices=["all", "digest-only", "tag-only"]),
                ),
            ),
        ),
    ),
    registry_certs_dirs=dict(type="list", elements="path", default=list(DEFAULT_CERTS_DIRS)),
    registry_timeout=dict(type="float", default=30.0),
)


@dataclass(frozen=True)
class RegistryOptions:
    """The registry options, read: the pull secret, registries.conf with the mirrors, certs.d and the timeout."""

    docker_config: DockerConfig
    registries: RegistriesConf
    certs_dirs: Tuple[str, ...]
    timeout: float

    @classmethod
    def from_params(cls, params: Mapping[str, Any], problems: Problems) -> Optional["RegistryOptions"]:
        """The options, or None with their problems recorded."""
        problems.above_zero(params, "registry_timeout")
        root = params.get("host_root")
        docker_config = problems.attempt(
            lambda: load_docker_config(params["auth_file"], host_path(root, DEFAULT_AUTH_FILE))
        )
        registries = problems.attempt(
            lambda: load_registries_conf(
                params["registries_conf"],
                params["registry_mirrors"],
                default_path=host_path(root, DEFAULT_REGISTRIES_CONF),
                default_conf_d=host_path(root, DEFAULT_REGISTRIES_CONF_D),
            )
        )
        if docker_config is None or registries is None:
            return None
        return cls(
            docker_config=docker_config,
            registries=registries,
            certs_dirs=tuple(params["registry_certs_dirs"] or ()),
            timeout=params["registry_timeout"],
        )


SELECTION_ARGUMENT_SPEC = dict(
    images=dict(type="list", elements="str"),
    sets=dict(type="list", elements="raw"),
    pools=dict(type="list", elements="raw", aliases=["pool"]),
    node_labels=dict(type="dict"),
    allow_empty=dict(type="bool", default=False),
)
SELECTION_MUTUALLY_EXCLUSIVE = [("images", "sets")]
SELECTION_REQUIRED_BY = {"pools": "sets", "node_labels": "sets"}


def selected_images(
    params: Mapping[str, Any], validate: Callable[..., List[str]], emptied: str
) -> Tuple[List[str], List[str]]:
    """(images, set_names) that a pinning module's options select (``images``, or ``sets`` with ``pools`` /
    ``node_labels``), each checked by ``validate(names, require_digest=...)``; none with ``state=absent``.

    A selection of no image would empty the pins (``emptied`` says what that removes): a CollectionError naming
    what was looked at, before anything is touched, unless ``allow_empty``."""
    if params["state"] != "present":
        return [], []
    # Here, not at the top: the prefetch's pin reads no set files and need not import their loader.
    from ansible_collections.pinned.images.plugins.module_utils._sets.pools import (
        empty_selection_message,
        wanted_images,
    )

    images, set_names = wanted_images(
        params["images"],
        params["sets"],
        params["pools"],
        params["node_labels"],
        lambda names: validate(names, require_digest=params["require_digest"]),
    )
    if not images and not params["allow_empty"]:
        looked = empty_selection_message(
            params["images"], params["sets"], params["pools"], params["node_labels"], set_names
        )
        raise CollectionError(
            f"{looked}: that would {emptied}; nothing was changed. Give the images to pin, "
            "allow_empty=true to empty the pins, or state=absent to remove them"
        )
    return images, set_names
