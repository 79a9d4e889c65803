# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the doctor reads on a node (node side, Python 3.8+): the kubelet's configuration, containerd's, CRI-O's
drop-ins, the image labels, the kubelet's version. Every path is a parameter, taken under ``host_root`` by the
run; a file that cannot be read is a note of the result, never a failure (the doctor reports, it does not stop).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import read_config_text
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import YAMLError, load_yaml
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    dropin_pinned_images,
    effective_pins,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import load_toml

__all__ = [
    "K3S_PIN_LABEL_KEY",
    "KUBELET_CONFIGS",
    "KUBELET_BINARIES",
    "CrioPins",
    "KubeletConfig",
    "RunCommand",
    "both_pin_labels",
    "crio_pins",
    "kubelet_version",
    "read_containerd_config",
    "read_kubelet_config",
]

K3S_PIN_LABEL_KEY = "io.cattle.k3s.pinned"
# The kubelet's configuration file or drop-in directory of each distribution (docs/doctor.md), read in this order,
# a later one's keys over an earlier one's: kubeadm and kind, EKS (and its drop-ins), Bottlerocket, AKS, GKE,
# Talos, OpenShift, k3s and RKE2 (drop-in directories).
KUBELET_CONFIGS = (
    "/var/lib/kubelet/config.yaml",
    "/etc/kubernetes/kubelet/config.json",
    "/etc/kubernetes/kubelet/config.json.d",
    "/etc/kubernetes/kubelet/config",
    "/etc/default/kubeletconfig.json",
    "/home/kubernetes/kubelet-config.yaml",
    "/etc/kubernetes/kubelet.yaml",
    "/etc/kubernetes/kubelet.conf",
    "/var/lib/rancher/k3s/agent/etc/kubelet.conf.d",
    "/var/lib/rancher/rke2/agent/etc/kubelet.conf.d",
)
KUBELET_BINARIES = ("/usr/bin/kubelet", "/usr/local/bin/kubelet")
_MAX_CONFIG = 1024 * 1024
_DROPIN_SUFFIXES = (".conf", ".yaml", ".yml", ".json")


class _Unreadable(CollectionError):
    def __init__(self, message: str) -> None:
        super().__init__(message)


@dataclass
class KubeletConfig:
    """The kubelet's settings merged from the files found (``sources``), and the files that could not be read."""

    settings: Dict[str, Any] = field(default_factory=dict)
    sources: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        """The files, for a finding's detail."""
        return ", ".join(self.sources) or "the kubelet's defaults (no configuration file found)"


def _kubelet_files(path: str) -> List[str]:
    if os.path.isdir(path):
        return [
            os.path.join(path, name)
            for name in sorted(os.listdir(path))
            if name.endswith(_DROPIN_SUFFIXES) and os.path.isfile(os.path.join(path, name))
        ]
    return [path] if os.path.isfile(path) else []


def read_kubelet_config(paths: Sequence[str]) -> KubeletConfig:
    """Every file of ``paths`` that exists (a directory: its drop-ins in name order), a later file's keys over an
    earlier one's, as the kubelet merges its drop-ins. YAML or JSON (a kubeconfig-like file that is neither is a
    note)."""
    config = KubeletConfig()
    for path in paths:
        for name in _kubelet_files(path):
            try:
                document = load_yaml(read_config_text(name, "kubelet config", _MAX_CONFIG, _Unreadable))
            except (CollectionError, YAMLError) as exc:
                config.notes.append(f"kubelet config {name} not read: {exc}")
                continue
            if not isinstance(document, dict):
                config.notes.append(f"kubelet config {name} not read: not a mapping")
                continue
            config.settings.update(document)
            config.sources.append(name)
    return config


def read_containerd_config(path: Optional[str]) -> Tuple[Optional[Dict[str, Any]], List[str]]:
    """(containerd's configuration, notes); None when ``path`` is not given or does not exist."""
    if not path or not os.path.exists(path):
        return None, []
    try:
        text = read_config_text(path, "containerd config file", _MAX_CONFIG, _Unreadable)
        return load_toml(text, f"containerd config file {path}", _Unreadable), []
    except CollectionError as exc:
        return None, [f"containerd config {path} not read: {exc.message}"]


@dataclass(frozen=True)
class CrioPins:
    """Our drop-in's list, the file CRI-O takes ``pinned_images`` from (None: none sets it) and what it keeps."""

    listed: Tuple[str, ...]
    source: Optional[str]
    kept: Tuple[str, ...]


def crio_pins(dropin_path: str) -> CrioPins:
    """What CRI-O pins of our drop-in's images, from the drop-ins of its directory in CRI-O's order."""
    listed: List[str] = []
    try:
        with open(dropin_path, encoding="utf-8", errors="replace") as handle:
            listed = dropin_pinned_images(handle.read(_MAX_CONFIG)) or []
    except OSError:
        pass
    kept, source = effective_pins(dropin_path, listed)
    return CrioPins(tuple(listed), source, tuple(kept))


def both_pin_labels(records: Sequence[Dict[str, Any]]) -> List[str]:
    """The names of the containerd image records that carry k3s's pin label and CRI's."""
    return sorted(
        record["name"]
        for record in records
        if (record.get("labels") or {}).get(K3S_PIN_LABEL_KEY) and (record.get("labels") or {}).get(PIN_LABEL_KEY)
    )


RunCommand = Callable[[List[str]], Tuple[int, str, str]]


def kubelet_version(binaries: Sequence[str], run_command: RunCommand) -> Optional[str]:
    """``v1.31.2`` from ``kubelet --version`` of the first of ``binaries`` that exists, None without one."""
    for binary in binaries:
        if not os.path.isfile(binary):
            continue
        rc, out, _err = run_command([binary, "--version"])
        match = re.search(r"v[0-9]+\.[0-9]+\.[0-9]+\S*", out or "")
        if rc == 0 and match:
            return match.group(0)
    return None
