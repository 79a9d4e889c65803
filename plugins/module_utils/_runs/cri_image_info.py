# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the cri_image_info module reports: the runtime, its images, its image filesystems, and its layout (the
socket, config and registry hosts found on the node, and where each came from)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.pinned.images.plugins.module_utils._common.host_root import host_path
from ansible_collections.pinned.images.plugins.module_utils._cri.client import ImageFsUsage
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import require_node_deps
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import filesystem_stats
from ansible_collections.pinned.images.plugins.module_utils._prefetch.preflight import SourceSettings, layout_report
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import RegistriesConf
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    RuntimeOptions,
    cri_client,
    node_params,
    socket_source,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["describe_runtime", "run"]


def _with_local_usage(filesystem: ImageFsUsage, host_root: Optional[str] = None) -> Dict[str, Any]:
    """The runtime's image filesystem with the size and free space of the filesystem holding its mountpoint (a host
    path, read under ``host_root``)."""
    try:
        total, free = filesystem_stats(host_path(host_root, filesystem["mountpoint"]))
    except OSError:
        return dict(filesystem, total_bytes=None, free_bytes=None)
    return dict(filesystem, total_bytes=total, free_bytes=free)


def describe_runtime(params: Mapping[str, Any]) -> Dict[str, Any]:
    """The cri_image_info module's result: the runtime, its images (only the requested ones when ``images`` is set,
    the others in ``missing``) and its image filesystems. Raises CriError."""
    params = node_params(params, ())
    requested = params["images"]
    options = RuntimeOptions.from_params(params)
    with cri_client(options) as client:
        runtime = dict(client.version(), endpoint=client.endpoint)
        sources = SourceSettings(
            registries=RegistriesConf(),
            overrides=RegistriesConf(),
            host_root=options.host_root,
            socket_source=socket_source(params),
        )
        layout = layout_report(sources, runtime, client.status_info)
        filesystems = [_with_local_usage(fs, options.host_root) for fs in client.image_fs_info()]
        missing: List[str] = []
        if requested is None:
            images: List[Dict[str, Any]] = [dict(image) for image in client.list_images()]
        else:
            # ImageStatus resolves each name exactly as a pull or the kubelet would.
            by_id: Dict[str, Dict[str, Any]] = {}
            for name in requested:
                image = client.image_status(name)
                if image is None:
                    missing.append(name)
                else:
                    by_id.setdefault(image["id"], dict(image, requested=[]))["requested"].append(name)
            images = list(by_id.values())
    return {
        "changed": False,
        "runtime": runtime,
        "images": images,
        "missing": missing,
        "image_filesystems": filesystems,
        "layout": layout,
    }


def run(invocation: Invocation) -> Outcome:
    """The module's run, once grpcio and protobuf are there."""
    require_node_deps()
    return Outcome(describe_runtime(invocation.params))
