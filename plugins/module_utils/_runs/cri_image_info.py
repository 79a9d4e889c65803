# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the cri_image_info module reports: the runtime, its images, its image filesystems, its layout (the
socket, config and registry hosts found on the node, and where each came from), and with ``checks`` the doctor's
findings (``_doctor``)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.host_root import host_path
from ansible_collections.pinned.images.plugins.module_utils._cri.client import ImageFsUsage
from ansible_collections.pinned.images.plugins.module_utils._doctor.checks import NodeFacts, diagnose
from ansible_collections.pinned.images.plugins.module_utils._doctor.facts import (
    RunCommand,
    both_pin_labels,
    crio_pins,
    kubelet_version,
    read_containerd_config,
    read_kubelet_config,
)
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import require_node_deps
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import filesystem_stats
from ansible_collections.pinned.images.plugins.module_utils._prefetch.preflight import SourceSettings, layout_report
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import RegistriesConf
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    RuntimeOptions,
    containerd_client,
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


# The doctor's node paths, under host_root.
_DOCTOR_PATHS = ("kubelet_config", "kubelet_binary", "containerd_config", "dropin_path")


def describe_runtime(params: Mapping[str, Any], run_command: Optional[RunCommand] = None) -> Dict[str, Any]:
    """The cri_image_info module's result: the runtime, its images (only the requested ones when ``images`` is set,
    the others in ``missing``) and its image filesystems; with ``checks`` the doctor's ``checks`` and ``notes``.
    Raises CriError."""
    params = node_params(params, _DOCTOR_PATHS)
    requested = params["images"]
    options = RuntimeOptions.from_params(params)
    with cri_client(options) as client:
        runtime = dict(client.version(), endpoint=client.endpoint)
        sources = SourceSettings(
            registries=RegistriesConf(),
            overrides=RegistriesConf(),
            containerd_config=params["containerd_config"],
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
    result: Dict[str, Any] = {
        "changed": False,
        "runtime": runtime,
        "images": images,
        "missing": missing,
        "image_filesystems": filesystems,
        "layout": layout,
    }
    if params.get("checks"):
        result["checks"], result["notes"] = _doctor(params, options, result, run_command)
    return result


def _present_bytes(images: Sequence[Mapping[str, Any]]) -> int:
    """The CRI sizes of ``images``, once per image id: names of one image share its bytes."""
    return sum({image["id"]: int(image["size"]) for image in images}.values())


def _filesystem_use(filesystem: Mapping[str, Any]) -> Optional[int]:
    """The image filesystem's use as the kubelet measures it against its GC thresholds: capacity less available
    (statvfs), not the runtime's ``used_bytes``, which counts only its image store."""
    total, free = filesystem.get("total_bytes"), filesystem.get("free_bytes")
    return None if total is None or free is None else int(total) - int(free)


def _labelled_both(options: RuntimeOptions) -> List[str]:
    client = containerd_client(options)
    with client:
        return both_pin_labels(client.list_records())


def _doctor(
    params: Mapping[str, Any], options: RuntimeOptions, result: Mapping[str, Any], run_command: Optional[RunCommand]
) -> Tuple[List[Dict[str, str]], List[str]]:
    """The doctor's findings on this node, and what it could not read."""
    runtime = result["runtime"]
    notes: List[str] = []
    kubelet = read_kubelet_config(params["kubelet_config"])
    notes += kubelet.notes
    # The config the running containerd reads (its flags, else the defaults), as the layout found it.
    found = (result["layout"] or {}).get("config")
    config_file = params["containerd_config"] or (host_path(options.host_root, found["path"]) if found else None)
    containerd_config, config_notes = read_containerd_config(config_file)
    notes += config_notes
    hosts = (result["layout"] or {}).get("hosts") or {}
    if "error" in hosts:
        notes.append(f"containerd's registry hosts not read: {hosts['error']}")
    both: List[str] = []
    if runtime["runtime_name"] == "containerd":
        try:
            both = _labelled_both(options)
        except CollectionError as exc:
            notes.append(f"containerd's image labels not read: {exc.message}")
    crio = crio_pins(params["dropin_path"])
    wanted = [image for image in result["images"] if image.get("requested")] if params["images"] is not None else []
    filesystem = result["image_filesystems"][0] if result["image_filesystems"] else {}
    version = kubelet_version(params["kubelet_binary"], run_command) if run_command else None
    facts = NodeFacts(
        runtime_name=runtime["runtime_name"],
        runtime_version=runtime["runtime_version"],
        wanted=tuple(params["images"] or ()),
        wanted_present_bytes=_present_bytes(wanted),
        wanted_missing=len(result["missing"]),
        wanted_pinned=bool(wanted) and all(image["pinned"] for image in wanted),
        kubelet=kubelet.settings,
        kubelet_source=kubelet.source,
        kubelet_version=version,
        containerd_config=containerd_config,
        containerd_config_source=config_file or "containerd's defaults (no config file)",
        registry_hosts=hosts,
        both_labels=tuple(both),
        dropin_path=params["dropin_path"],
        dropin_listed=crio.listed,
        dropin_source=crio.source,
        dropin_kept=crio.kept,
        fs_mountpoint=str(filesystem.get("mountpoint", "")),
        fs_total=filesystem.get("total_bytes"),
        fs_used=_filesystem_use(filesystem),
    )
    return diagnose(facts), notes


def run(invocation: Invocation) -> Outcome:
    """The module's run, once grpcio and protobuf are there."""
    require_node_deps()
    return Outcome(describe_runtime(invocation.params, invocation.run_command))
