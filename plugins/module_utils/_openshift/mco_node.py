# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Whether a node is managed by OpenShift's machine-config-operator (MCO), read on the node (Python 3.8+).

On such a node the MCO's daemon writes ``/etc/crio/crio.conf.d/50-pinned-images`` from the PinnedImageSets (and a
MachineConfig may deliver it): another writer of that file would fight it, the last one winning until the next
reconcile. The signs, from the MCO's source (MCO 7ff337a), both in the daemon's directory
``/etc/machine-config-daemon``:

* ``currentconfig``: the machine-config-daemon stores the MachineConfig it applied there, as JSON, after every
  update (``storeCurrentConfigOnDisk``, ``pkg/daemon/daemon.go``) and reads it back at each start to check the node
  against its ``machineconfiguration.openshift.io/currentConfig`` annotation. A sign when it holds a JSON object with
  a ``spec`` object and ``metadata.name`` (HyperShift nodes keep it empty: no sign).
* ``node-annotations.json`` (renamed ``node-annotation.json.bak`` once the node joined: ``InitialNodeAnnotations*``
  in ``pkg/daemon/constants``): the Machine Config Server puts the node's first annotations into its Ignition
  config (``pkg/server/server.go``), a JSON object with a non-empty
  ``machineconfiguration.openshift.io/currentConfig``. A sign from the first boot on, before the daemon ran.

Nothing but the MCO writes these paths, and each sign is the document's shape, not the file's existence: an empty
or stray file is no sign. The node's annotation itself is not read: the node side has no API access.
"""

from __future__ import annotations

import json
import os
from typing import Any, List, Optional, Tuple

__all__ = [
    "CURRENT_CONFIG",
    "CURRENT_CONFIG_ANNOTATION",
    "DEFAULT_DIRECTORY",
    "MAX_SIZE",
    "NODE_ANNOTATIONS",
    "dropin_decision",
    "mco_sign",
]

DEFAULT_DIRECTORY = "/etc/machine-config-daemon"
CURRENT_CONFIG = "currentconfig"
NODE_ANNOTATIONS = ("node-annotations.json", "node-annotation.json.bak")
CURRENT_CONFIG_ANNOTATION = "machineconfiguration.openshift.io/currentConfig"
# A rendered MachineConfig carries every file of the pool: a few MiB. Bigger is read as no sign.
MAX_SIZE = 32 * 1024 * 1024


def _json_object(path: str) -> Optional[Any]:
    """The JSON object in ``path``; None when it is missing, unreadable, too big or anything else."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SIZE + 1)
    except OSError:
        return None
    if len(data) > MAX_SIZE:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def mco_sign(directory: str = DEFAULT_DIRECTORY) -> Optional[str]:
    """What shows that the MCO manages this node, or None (see the module docstring)."""
    path = os.path.join(directory, CURRENT_CONFIG)
    config = _json_object(path)
    if config is not None and isinstance(config.get("spec"), dict):
        name = (config.get("metadata") or {}).get("name") if isinstance(config.get("metadata"), dict) else None
        if isinstance(name, str) and name:
            return f"{path} holds MachineConfig {name}, applied by the machine-config-daemon"
    for file_name in NODE_ANNOTATIONS:
        path = os.path.join(directory, file_name)
        annotations = _json_object(path)
        value = annotations.get(CURRENT_CONFIG_ANNOTATION) if annotations is not None else None
        if isinstance(value, str) and value:
            return f"{path} holds the node annotations of the Machine Config Server (currentConfig {value})"
    return None


def dropin_decision(auto: bool, directory: str = DEFAULT_DIRECTORY) -> Tuple[bool, Optional[str], List[str]]:
    """For a drop-in pin: (write it, the MCO sign or None, warnings). ``auto`` (the pin method was chosen, not
    asked for) leaves the drop-in to the MCO on its nodes; an explicit drop-in goes ahead with a warning."""
    sign = mco_sign(directory)
    if sign is None:
        return True, None, []
    if auto:
        return False, sign, []
    return (
        True,
        sign,
        [
            f"pin=dropin on a node managed by the machine-config-operator ({sign}): the MCO writes the same drop-in "
            "from the PinnedImageSets and the last writer wins until its next reconcile; pin through PinnedImageSets "
            "or MachineConfigs (pin=auto prefetches and leaves the drop-in to the MCO)"
        ],
    )
