# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""MachineConfig objects that deliver the CRI-O pinned-images drop-in through the machine-config-operator.

One MachineConfig per pool::

    apiVersion: machineconfiguration.openshift.io/v1
    kind: MachineConfig
    metadata:
      labels:
        machineconfiguration.openshift.io/role: <pool>
      name: 99-<pool>-pinned-images
    spec:
      config:
        ignition:
          version: 3.2.0
        storage:
          files:
          - contents:
              source: data:;base64,<the drop-in, see _pins.crio_dropin>
            mode: 420
            overwrite: true
            path: /etc/crio/crio.conf.d/50-pinned-images
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import (
    AtomicFileError,
    atomic_write,
    read_bytes,
    remove_file,
)
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import MAX_NAME_LENGTH
from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import Shape, rendered_text
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import (
    HAS_YAML,
    YAMLError,
    dump_yaml,
    load_yaml,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import DEFAULT_FIELD_MANAGER
from ansible_collections.pinned.images.plugins.module_utils._openshift import disruption_policy
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DEFAULT_PATH, render_pinned_images
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import check_dns_subdomain
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    ROLE_LABEL,
    PinnedImageSet,
    as_pool,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.pools import images_for_pool

__all__ = [
    "DATA_URL_PREFIX",
    "DEFAULT_IGNITION_VERSION",
    "DEFAULT_NAME_TEMPLATE",
    "FILE_MODE",
    "MACHINE_CONFIG_KIND",
    "SUPPORTED_IGNITION_VERSIONS",
    "MachineConfigError",
    "check_ignition_version",
    "data_url",
    "file_path",
    "image_changes",
    "images_in_machine_config",
    "machine_config_name",
    "owned_files",
    "render_for_pools",
    "render_machine_config",
    "rendered_shape",
    "sync_cluster",
    "sync_files",
]

MACHINE_CONFIG_KIND = "MachineConfig"
SUPPORTED_IGNITION_VERSIONS = ("3.1.0", "3.2.0", "3.3.0", "3.4.0")
DEFAULT_IGNITION_VERSION = "3.2.0"
DEFAULT_NAME_TEMPLATE = "99-{pool}-pinned-images"
FILE_MODE = 0o644  # 420, as Ignition wants it: a decimal integer
DATA_URL_PREFIX = "data:;base64,"


class MachineConfigError(CollectionError):
    """A MachineConfig cannot be rendered from the given input."""


def check_ignition_version(version: Any) -> str:
    """``version`` when it is a supported Ignition config version; raises MachineConfigError."""
    if not isinstance(version, str) or version not in SUPPORTED_IGNITION_VERSIONS:
        raise MachineConfigError(
            f"ignition_version {version!r} is not supported; choose one of {', '.join(SUPPORTED_IGNITION_VERSIONS)}"
        )
    return version


def machine_config_name(pool_name: str, template: str = DEFAULT_NAME_TEMPLATE) -> str:
    """The MachineConfig name for a pool (``{pool}`` in ``template`` is replaced by its name); the result must be an
    RFC 1123 subdomain."""
    if not isinstance(template, str) or not template:
        raise MachineConfigError("the name template must be a non-empty string")
    name = template.replace("{pool}", pool_name)
    if file_path("", name) == disruption_policy.POLICY_FILE_NAME:
        raise MachineConfigError(
            f"MachineConfig name {name!r} would be the file of the node disruption policy; choose another name template"
        )
    if check_dns_subdomain(name, "MachineConfig name") is not None:
        raise MachineConfigError(
            f"MachineConfig name {name!r} (from template {template!r}) is not a valid RFC 1123 subdomain "
            f"(lower-case letters, digits, '-' and '.', at most {MAX_NAME_LENGTH} characters)"
        )
    return name


def data_url(content: Any) -> str:
    """``content`` (text or bytes) as an Ignition ``data:`` URL."""
    if isinstance(content, str):
        content = content.encode("utf-8")
    return DATA_URL_PREFIX + base64.b64encode(content).decode("ascii")


def render_machine_config(
    pool_name: str,
    images: Iterable[str],
    name_template: str = DEFAULT_NAME_TEMPLATE,
    ignition_version: str = DEFAULT_IGNITION_VERSION,
    path: str = DEFAULT_PATH,
) -> Dict[str, Any]:
    """One MachineConfig that writes the drop-in for ``images`` on the pool's nodes. ``images`` must already be
    validated (``_pins.crio_dropin.validate_pinned_images``) and are rendered in the given order: pass the sorted
    list for the MCO's bytes."""
    check_ignition_version(ignition_version)
    names = list(images)
    if not names:
        raise MachineConfigError(f"pool {pool_name!r}: no images to pin; a MachineConfig would pin nothing")
    return {
        "apiVersion": API_VERSION,
        "kind": MACHINE_CONFIG_KIND,
        "metadata": {
            "name": machine_config_name(pool_name, name_template),
            "labels": {ROLE_LABEL: pool_name},
        },
        "spec": {
            "config": {
                "ignition": {"version": ignition_version},
                "storage": {
                    "files": [
                        {
                            "path": path,
                            "mode": FILE_MODE,
                            "overwrite": True,
                            "contents": {"source": data_url(render_pinned_images(names))},
                        }
                    ]
                },
            }
        },
    }


def render_for_pools(
    pools: Iterable[Any],
    sets: Optional[List[PinnedImageSet]] = None,
    images: Optional[List[str]] = None,
    name_template: str = DEFAULT_NAME_TEMPLATE,
    ignition_version: str = DEFAULT_IGNITION_VERSION,
    path: str = DEFAULT_PATH,
) -> List[Dict[str, Any]]:
    """Render per pool (names, pool dicts or ``MachineConfigPool``): ``{pool, name, images, set_names,
    machine_config}`` each, ``machine_config`` None when the pool has no images. With ``images`` every pool gets
    that list, otherwise the union of its sets (``_sets.pools.images_for_pool``)."""
    check_ignition_version(ignition_version)
    results: List[Dict[str, Any]] = []
    names: Dict[str, str] = {}
    for value in pools:
        pool = as_pool(value)
        set_names: List[str] = []
        if images is not None:
            pool_images = list(images)
        else:
            pool_images, set_names = images_for_pool(pool, sets or [])
        name = machine_config_name(pool.name, name_template)
        if name in names:
            raise MachineConfigError(
                f"pools {names[name]!r} and {pool.name!r} both get the MachineConfig name {name!r}; "
                "put {pool} in the name template"
            )
        names[name] = pool.name
        machine_config = None
        if pool_images:
            machine_config = render_machine_config(pool.name, pool_images, name_template, ignition_version, path)
        results.append(
            {
                "pool": pool.name,
                "name": name,
                "images": pool_images,
                "set_names": set_names,
                "machine_config": machine_config,
            }
        )
    return results


# --------------------------------------------------------------------------- files and cluster


def file_path(dest: str, name: str) -> str:
    """The file of MachineConfig ``name`` in ``dest``."""
    return os.path.join(dest, name + ".yaml")


_PINNED_IMAGES_LINE = re.compile(r"^\s*pinned_images\s*=\s*(\[.*\])\s*$", re.MULTILINE)


def images_in_machine_config(obj: Any) -> List[str]:
    """The images of the drop-in a MachineConfig object carries, sorted; [] for anything else (a hand-edited file
    or object is compared with what is rendered, not rejected)."""
    try:
        files = obj["spec"]["config"]["storage"]["files"]
        source = next(f["contents"]["source"] for f in files if f.get("path") == DEFAULT_PATH)
        text = base64.b64decode(source[len(DATA_URL_PREFIX) :], validate=True).decode("utf-8")
        match = _PINNED_IMAGES_LINE.search(text)
        # The MCO's basic strings hold no escapes JSON reads differently (validated references only).
        images = json.loads(match.group(1)) if match else []
    except (KeyError, TypeError, AttributeError, StopIteration, binascii.Error, UnicodeDecodeError, ValueError):
        return []
    return sorted(i for i in images if isinstance(i, str)) if isinstance(images, list) else []


def _images_in_file(data: Optional[bytes]) -> List[str]:
    """The images a MachineConfig file pins; [] when it is absent or not YAML."""
    if data is None or not HAS_YAML:
        return []
    try:
        return images_in_machine_config(load_yaml(data))
    except YAMLError:
        return []


def image_changes(before: Iterable[str], after: Iterable[str]) -> Dict[str, List[str]]:
    """The images ``after`` adds to and removes from ``before``."""
    before, after = set(before), set(after)
    return {"added": sorted(after - before), "removed": sorted(before - after)}


def sync_files(
    entries: List[Dict[str, Any]], dest: str, state: str = "present", check_mode: bool = False
) -> Dict[str, Any]:
    """Write ``<dest>/<name>.yaml`` for entries with a MachineConfig (with the ownership mark,
    ``_common/rendered_file``); remove it for the others or when absent. The caller refuses files that are not ours
    first (``owned_files``).

    Returns ``{changed, files, diffs, file_changes, previous_images}``; ``files`` lists the paths written or up
    to date (present) or removed (absent and empty pools); ``file_changes`` is ``{created, changed, removed}``
    (paths; "changed" only when the bytes differ), ``previous_images`` the images each MachineConfig file pinned
    before (by name; [] when absent or unreadable). A file system failure is an AtomicFileError naming the path.
    """
    changed, files, diffs = False, [], []
    file_changes: Dict[str, List[str]] = {"created": [], "changed": [], "removed": []}
    previous_images: Dict[str, List[str]] = {}
    if state == "present" and not check_mode and any(e["machine_config"] for e in entries):
        try:
            os.makedirs(dest, mode=0o755, exist_ok=True)
        except OSError as exc:  # e.g. dest, or a parent of it, is a regular file
            raise AtomicFileError(exc.errno, f"cannot create directory {dest}: {exc.strerror or exc}") from exc
    for entry in entries:
        path = file_path(dest, entry["name"])
        try:
            existing = read_bytes(path)
            if state == "present" and entry["machine_config"] is not None:
                text = rendered_text(entry["machine_config"])
                # An unchanged file pins exactly the entry's images: no need to parse it back.
                same = existing is not None and existing == text.encode("utf-8")
                previous_images[entry["name"]] = list(entry["images"]) if same else _images_in_file(existing)
                outcome = atomic_write(path, text, mode=0o644, check_mode=check_mode)
                files.append(path)
                if outcome["content_changed"]:
                    file_changes["created" if outcome["created"] else "changed"].append(path)
            else:
                previous_images[entry["name"]] = _images_in_file(existing)
                outcome = remove_file(path, check_mode=check_mode)
                if outcome["changed"]:
                    files.append(path)
                    file_changes["removed"].append(path)
        except AtomicFileError:
            raise
        except OSError as exc:
            raise AtomicFileError(exc.errno, f"cannot write {path}: {exc.strerror or exc}") from exc
        if outcome["changed"]:
            changed = True
            diffs.append(outcome["diff"])
    return {
        "changed": changed,
        "files": files,
        "diffs": diffs,
        "file_changes": file_changes,
        "previous_images": previous_images,
    }


def rendered_shape(obj: Dict[str, Any]) -> bool:
    """Whether ``obj`` has the shape of what the render writes into the MachineConfig directory: a MachineConfig
    whose config is only the drop-in, or the node disruption policy's object."""
    if obj.get("kind") == disruption_policy.KIND:
        return obj == disruption_policy.policy_file_object()
    config = (obj.get("spec") or {}).get("config")
    if not isinstance(config, dict) or set(config) != {"ignition", "storage"} or set(config["storage"]) != {"files"}:
        return False
    files = config["storage"]["files"]
    return isinstance(files, list) and len(files) == 1 and bool(images_in_machine_config(obj))


def owned_files(entries: List[Dict[str, Any]], dest: str, with_policy: bool) -> List[Tuple[str, str, Shape]]:
    """(path, object name, shape) of every file ``sync_files`` (and, ``with_policy``, ``sync_policy_file``) may write
    or remove in ``dest``, for ``refuse_foreign``."""
    files: List[Tuple[str, str, Shape]] = [(file_path(dest, e["name"]), e["name"], rendered_shape) for e in entries]
    if with_policy:
        policy = os.path.join(dest, disruption_policy.POLICY_FILE_NAME)
        files.append((policy, disruption_policy.NAME, rendered_shape))
    return files


def _managed_view(obj: Dict[str, Any]) -> Dict[str, Any]:
    """The parts of a stored MachineConfig this collection manages."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {"name": metadata.get("name"), "labels": {ROLE_LABEL: labels.get(ROLE_LABEL)}},
        "spec": {"config": (obj.get("spec") or {}).get("config")},
    }


def sync_cluster(
    entries: List[Dict[str, Any]],
    client: Any,
    state: str = "present",
    check_mode: bool = False,
    field_manager: str = DEFAULT_FIELD_MANAGER,
    before_change: Optional[Callable[[List[str]], None]] = None,
) -> Dict[str, Any]:
    """Server-side apply the entries' MachineConfigs (only when they differ); delete those of empty pools or
    all of them when absent. ``client`` has ``get``, ``apply`` and ``delete`` as ``_k8s.client.K8sClient``.
    ``before_change(pools)`` is called with the pools whose MachineConfig would change before any is touched
    (it raises to stop the run).

    Returns ``{changed, applied, deleted, diffs, previous_images}`` (names; ``previous_images`` as in
    ``sync_files``, from the cluster's MachineConfigs); in check mode the server is asked for a dry run.
    """
    changed, applied, deleted, diffs = False, [], [], []
    previous_images: Dict[str, List[str]] = {}
    changes = []
    for entry in entries:
        name = entry["name"]
        desired = entry["machine_config"] if state == "present" else None
        existing = client.get(API_VERSION, MACHINE_CONFIG_KIND, name)
        previous_images[name] = images_in_machine_config(existing) if existing is not None else []
        if desired is not None and existing is not None and _managed_view(existing) == desired:
            continue
        if desired is not None or existing is not None:
            changes.append((entry, desired, existing))
    if changes and before_change is not None:
        before_change([entry["pool"] for entry, _desired, _existing in changes])
    for entry, desired, existing in changes:
        name = entry["name"]
        if desired is not None:
            client.apply(desired, field_manager=field_manager, dry_run=check_mode)
            applied.append(name)
            before = dump_yaml(_managed_view(existing)) if existing is not None else ""
            diffs.append(
                {
                    "before": before,
                    "after": dump_yaml(desired),
                    "before_header": f"MachineConfig/{name}" + ("" if existing else " (absent)"),
                    "after_header": f"MachineConfig/{name}",
                }
            )
            changed = True
        elif client.delete(API_VERSION, MACHINE_CONFIG_KIND, name, dry_run=check_mode):
            deleted.append(name)
            diffs.append(
                {
                    "before": dump_yaml(_managed_view(existing)),
                    "after": "",
                    "before_header": f"MachineConfig/{name}",
                    "after_header": f"MachineConfig/{name} (absent)",
                }
            )
            changed = True
    return {
        "changed": changed,
        "applied": applied,
        "deleted": deleted,
        "diffs": diffs,
        "previous_images": previous_images,
    }
