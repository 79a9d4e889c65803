# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a prefetch checks before its first pull (node side, Python 3.8+): where the runtime pulls from (its
registry files), and whether the missing images fit on the image filesystem (the disk guard, its estimate read from
those sources).

``disk_guard`` does the arithmetic and ``estimate`` reads the manifests; this file wires them to the node: the free
space of the image filesystem, a registry client, and the refusal (``DiskGuardRefused``) before anything is pulled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.host_root import host_path, host_view
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef
from ansible_collections.pinned.images.plugins.module_utils._cri.layout import NodeLayout, find_layout
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import (
    check,
    estimate,
    filesystem_stats,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import (
    PullEstimator,
    PullSources,
    RetryPolicy,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import KnownFailure
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig
from ansible_collections.pinned.images.plugins.module_utils._registry.client import RegistryClient
from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import (
    ContainerdHosts,
    RegistryHostsConfig,
    locate,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import ManifestInfo
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import Platform
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    DEFAULT_REGISTRIES_CONF_D,
    RegistriesConf,
    load_registries_conf,
)

__all__ = [
    "DiskGuardRefused",
    "DiskGuardSettings",
    "SourceSettings",
    "guard_disk",
    "layout_report",
    "node_layout",
    "pull_sources",
    "registry_hosts",
]


class DiskGuardRefused(CollectionError):
    """The missing images do not fit; ``disk_guard`` (the guard's report) is in the details."""

    def __init__(self, guard: Dict[str, Any]) -> None:
        super().__init__(
            f"disk guard refused the prefetch, nothing was pulled: {guard['message']}", details={"disk_guard": guard}
        )


@dataclass(frozen=True)
class SourceSettings:
    """Where the runtime's registry files are: registries.conf (CRI-O, and any runtime but containerd), and
    containerd's config file and registry config_path (which overrides the one found in it), under ``host_root``."""

    registries: RegistriesConf
    # On containerd, which never reads registries.conf: only what the options give explicitly.
    overrides: RegistriesConf
    containerd_config: Optional[str] = None
    containerd_config_path: Optional[str] = None
    # Where the host's / is (a pod): the registry directories CRI Status and config files name are under it.
    host_root: Optional[str] = None
    # CRI-O: registries.conf was named by the options (else the file the running CRI-O names wins), and the
    # registry_mirrors option, applied over whichever file is read.
    registries_conf_given: bool = False
    registry_mirrors: Any = None
    # How the socket was chosen, for the layout's report.
    socket_source: str = "the cri_socket option"


@dataclass(frozen=True)
class DiskGuardSettings:
    """The disk guard's options (``mode``: estimate, free_only or off), and how its estimate reads the manifests of
    the missing images: the pull secret, certs.d, the timeout, the retries and the platform."""

    mode: str
    min_free: str
    expansion_factor: float
    # A path on the image filesystem; None: the mountpoint the runtime reports.
    image_store_path: Optional[str]
    docker_config: DockerConfig
    certs_dirs: Tuple[str, ...]
    registry_timeout: float
    retry: RetryPolicy
    platform: Optional[Platform] = None


def node_layout(settings: SourceSettings, runtime: Mapping[str, Any]) -> NodeLayout:
    """The layout of the runtime at ``runtime["endpoint"]`` (a path under ``host_root``): its files and where each
    came from (the options, the flags of the process serving the socket, the defaults)."""
    root = settings.host_root
    given = settings.containerd_config
    return find_layout(
        host_view(root, runtime.get("endpoint", "")),
        root,
        runtime.get("runtime_name", ""),
        host_view(root, given) if given else None,
        settings.socket_source,
    )


def registry_hosts(
    settings: SourceSettings,
    runtime: Mapping[str, Any],
    layout: NodeLayout,
    status_info: Callable[[], Dict[str, str]],
) -> RegistryHostsConfig:
    """containerd's registry hosts (roots under ``host_root``), from the options, CRI Status (1.6/1.7) or the config
    file the layout found, with where they came from and the pull mode."""
    root = settings.host_root
    override = settings.containerd_config_path
    info = status_info() if override is None and not settings.containerd_config else None
    candidates = (host_path(root, layout.config.path),) if layout.config else ()
    found = locate(info, runtime.get("runtime_version", ""), settings.containerd_config, override, candidates, root)
    # Every root is a host path, whichever told it.
    found = replace(found, roots=tuple(host_path(root, path) for path in found.roots))
    if layout.config and found.origin in candidates + (settings.containerd_config,):
        found = replace(found, origin=f"{layout.config.path}, {layout.config.source}")
    return found


def layout_report(
    settings: SourceSettings, runtime: Mapping[str, Any], status_info: Callable[[], Dict[str, str]]
) -> Dict[str, Any]:
    """What ``cri_image_info`` reports as ``layout``: the socket, the runtime's files and where each came from,
    and on containerd its registry hosts directories and pull mode."""
    root = settings.host_root
    layout = node_layout(settings, runtime)
    report = layout.report()
    if runtime.get("runtime_name") == "containerd":
        try:
            found = registry_hosts(settings, runtime, layout, status_info)
        except CollectionError as err:
            # A report, not a prefetch: say what cannot be read and report the rest.
            report["hosts"] = {"error": err.message}
            return report
        report["hosts"] = {
            "config_path": [host_view(root, path) for path in found.roots],
            "source": found.origin,
            "config_files": [host_view(root, path) for path in found.files],
            "pull_mode": found.pull_mode or None,
            "pull_mode_reason": found.pull_mode_reason or None,
            "warnings": list(found.warnings),
        }
    return report


def pull_sources(
    settings: SourceSettings, runtime: Mapping[str, Any], status_info: Callable[[], Dict[str, str]]
) -> Tuple[PullSources, Dict[str, Any], List[str]]:
    """(the runtime's pull sources, which files they come from (``sources_from``; on containerd its
    ``pull_mode`` too), their warnings): registries.conf on CRI-O and any other runtime (the file the running CRI-O
    names with ``--registries-conf``, unless the options name one), hosts.toml on containerd (``status_info()``: its
    CRI Status info, asked only when needed)."""
    root = settings.host_root
    layout = node_layout(settings, runtime)
    if runtime.get("runtime_name") != "containerd":
        registries = settings.registries
        flagged = layout.registries_conf
        if not settings.registries_conf_given and flagged and "flag" in flagged.source:
            conf_d = layout.registries_conf_dir.path if layout.registries_conf_dir else DEFAULT_REGISTRIES_CONF_D
            registries = load_registries_conf(
                host_path(root, flagged.path), settings.registry_mirrors, conf_d=host_path(root, conf_d)
            )
        files = ", ".join(registries.files) or "no registries.conf"
        where = f" ({flagged.source})" if flagged and registries is not settings.registries else ""
        return registries, {"sources_from": f"registries.conf: {files}{where}"}, []
    found = registry_hosts(settings, runtime, layout, status_info)
    hosts = ContainerdHosts(found, settings.overrides, root)
    report: Dict[str, Any] = {"sources_from": hosts.describe()}
    if found.pull_mode:
        report.update(pull_mode=found.pull_mode, pull_mode_reason=found.pull_mode_reason)
    return hosts, report, list(hosts.config.warnings)


def guard_disk(
    settings: DiskGuardSettings, image_fs: Optional[str], missing: List[ImageRef], sources: PullSources
) -> Tuple[Optional[Dict[str, Any]], Dict[str, KnownFailure]]:
    """(the guard's report or None when off, {image: (error, kind)} of unreadable manifests); raise
    DiskGuardRefused before any pull when the missing images do not fit. ``sources``: the runtime's pull sources,
    which the estimate reads."""
    mode = settings.mode
    if mode == "off":
        return None, {}
    path = settings.image_store_path or image_fs
    try:
        total, free = filesystem_stats(path)  # type: ignore[arg-type]  # None is caught as TypeError
    except (OSError, TypeError) as err:
        raise CollectionError(
            f"disk guard cannot read the free space of the image filesystem {path!r} ({err}); "
            "set image_store_path to a path on it, or disk_guard to off"
        ) from err
    manifests: List[Tuple[str, ManifestInfo]] = []
    unreadable: Dict[str, KnownFailure] = {}
    estimator = None
    if mode == "estimate" and missing:
        with RegistryClient(settings.registry_timeout, settings.certs_dirs) as registry_client:
            estimator = PullEstimator(
                registry_client, sources, settings.docker_config, settings.retry, settings.platform
            )
            manifests, unreadable = estimator.read(missing)
    guard = check(
        estimate(manifests, settings.expansion_factor), total, free, settings.min_free, mode, pulls=len(missing)
    )
    guard.update(
        filesystem=path,
        registry_requests=estimator.requests if estimator else 0,
        estimate_seconds=estimator.seconds if estimator else 0.0,
        sources=estimator.sources if estimator else {},
    )
    if not guard["ok"]:
        raise DiskGuardRefused(guard)
    return guard, unreadable
