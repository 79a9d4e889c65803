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

Public API
----------
``MachineConfigError(CollectionError)``
``SUPPORTED_IGNITION_VERSIONS`` (3.1.0 .. 3.4.0), ``DEFAULT_IGNITION_VERSION`` (3.2.0),
``DEFAULT_NAME_TEMPLATE`` (``99-{pool}-pinned-images``; ``{pool}`` is replaced by the pool name).
``machine_config_name(pool_name, template=DEFAULT_NAME_TEMPLATE) -> str`` (validated RFC 1123 subdomain)
``data_url(content) -> str`` (``data:;base64,...``)
``render_machine_config(pool_name, images, name_template=..., ignition_version=..., path=DEFAULT_PATH) -> dict``
    ``images`` must already be validated (see ``_pins.crio_dropin.validate_pinned_images``); it is rendered in
    the given order, so pass the sorted list for MCO-identical bytes.
``render_for_pools(pools, sets=None, images=None, ...) -> list[dict]``
    Per pool (names, pool dicts or ``MachineConfigPool``): ``{pool, name, images, set_names, machine_config}``;
    ``machine_config`` is None when the pool has no images. With ``images`` every pool gets that list;
    otherwise each pool gets the union of its sets (``_sets.pools.images_for_pool``).
``file_path(dest, name)``: ``<dest>/<name>.yaml``.
``sync_files(entries, dest, state, check_mode) -> {changed, files, diffs, file_changes, previous_images}``:
    atomic, byte-stable files; any file system failure is raised as ``_common.atomic_file.AtomicFileError`` naming
    the path. ``file_changes`` is ``{created, changed, removed}`` (paths; "changed" only when the bytes differ),
    ``previous_images`` the images each MachineConfig file pinned before (by name; [] when absent or unreadable).
``images_in_machine_config(obj) -> list[str]``: the images a MachineConfig object pins ([] when it carries no
    drop-in this module can read).
``image_changes(before, after) -> {added, removed}``: sorted.
``sync_cluster(entries, client, state, check_mode) -> {changed, applied, deleted, diffs, previous_images}``:
    server-side apply (field manager ``pinned-images``) only when the managed parts differ; deletes MachineConfigs
    of empty pools and, with ``state=absent``, of every pool.
``MachineConfigRequest``: the module's options. ``plan(request) -> entries``, ``pool_summary(entry, previous, with_images) -> dict`` and
``run_machine_config(request, check_mode, diff, tmpdir) -> dict``: the machine_config module's run (its result). Its
    ``pools`` result is a summary per pool (counts, set names, images added and removed); every image and the
    MachineConfig objects only on request (``return_images``, ``return_objects``).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import (
    AtomicFileError,
    atomic_write,
    read_bytes,
    remove_file,
)
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import MAX_NAME_LENGTH
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import (
    HAS_YAML,
    YAMLError,
    dump_yaml,
    load_yaml,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import (
    DEFAULT_FIELD_MANAGER,
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    K8sClient,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection
from ansible_collections.pinned.images.plugins.module_utils._openshift import disruption_policy
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    DEFAULT_PATH,
    render_pinned_images,
    validate_pinned_images,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import check_dns_subdomain
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    ROLE_LABEL,
    MachineConfigPool,
    PinnedImageSet,
    as_pool,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.pools import images_for_pool, resolve_pools

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
    """The MachineConfig name for a pool; the result must be an RFC 1123 subdomain."""
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
    """One MachineConfig that writes the drop-in for ``images`` on the pool's nodes."""
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
    """Render per pool; see the module docstring."""
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
    """Write ``<dest>/<name>.yaml`` for entries with a MachineConfig; remove it for the others or when absent.

    Returns ``{changed, files, diffs, file_changes, previous_images}``; ``files`` lists the paths written or up
    to date (present) or removed (absent and empty pools); see the module docstring for the others.
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
                text = dump_yaml(entry["machine_config"])
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


# --------------------------------------------------------------------------- the module's run


@dataclass(frozen=True)
class MachineConfigRequest:
    """The machine_config module's options (``_runs/machine_config`` reads them)."""

    pools: Optional[List[Any]]
    sets: Optional[List[Any]]
    images: Optional[List[str]]
    require_digest: bool
    name: str
    ignition_version: str
    dest: Optional[str]
    apply: bool
    state: str
    return_images: bool
    return_objects: bool
    connection: K8sConnection
    # The MachineConfiguration's node disruption policy (``_openshift.disruption_policy``), and whether a change
    # may reboot the pools' nodes (else it waits up to ``disruption_policy_timeout`` seconds for the policy).
    disruption_policy: bool
    allow_reboot: bool
    disruption_policy_timeout: float


def plan(request: MachineConfigRequest) -> List[Dict[str, Any]]:
    """The entries of ``render_for_pools`` for the module's request; raises a CollectionError (bad sets, pools,
    images or names) before anything is written or applied."""
    sets: List[PinnedImageSet] = []
    file_pools: List[MachineConfigPool] = []
    if request.sets is not None:
        sets, file_pools = load_sets(request.sets)
    pools = resolve_pools(request.pools, file_pools) if request.pools is not None else file_pools
    if not pools:
        raise MachineConfigError("no pools: give pools, or MachineConfigPool objects in sets")
    images: Optional[List[str]] = None
    if request.state == "absent":
        images = []
    elif request.sets is None:
        images = validate_pinned_images(request.images or [], require_digest=request.require_digest)
    return render_for_pools(
        pools, sets=sets, images=images, name_template=request.name, ignition_version=request.ignition_version
    )


def pool_summary(entry: Dict[str, Any], previous: Optional[List[str]], with_images: bool) -> Dict[str, Any]:
    """A pool of the module's result: ``pool``, ``name``, ``image_count``, ``set_names``; ``added`` and ``removed``
    against ``previous`` (the images pinned before) when known; ``images`` with ``with_images``."""
    row: Dict[str, Any] = {
        "pool": entry["pool"],
        "name": entry["name"],
        "image_count": len(entry["images"]),
        "set_names": entry["set_names"],
    }
    if previous is not None:
        row.update(image_changes(previous, entry["images"]))
    if with_images:
        row["images"] = entry["images"]
    return row


def run_machine_config(
    request: MachineConfigRequest, check_mode: bool, diff: bool, tmpdir: Optional[str] = None
) -> Dict[str, Any]:
    """The machine_config module's run: render, then write into ``dest`` and/or apply (see the module's docs)."""
    entries = plan(request)
    if request.apply and not HAS_KUBERNETES:
        raise CollectionError(missing_required_lib("kubernetes"), details={"exception": str(KUBERNETES_IMPORT_ERROR)})
    result: Dict[str, Any] = dict(
        changed=False, files=[], applied=[], deleted=[], file_changes=dict(created=[], changed=[], removed=[])
    )
    diffs: List[Dict[str, Any]] = []
    # added/removed: against the files in dest, else against the cluster; unknown with neither.
    previous: Optional[Dict[str, List[str]]] = None
    # The policy goes with the MachineConfigs it makes reboot-free; state=absent leaves it (a removal is a change).
    with_policy = request.disruption_policy and request.state == "present"
    result["disruption_policy"] = dict(file=None, applied=False)
    if request.dest:
        outcome = sync_files(entries, request.dest, state=request.state, check_mode=check_mode)
        result.update(files=outcome["files"], file_changes=outcome["file_changes"])
        result["changed"] |= outcome["changed"]
        diffs.extend(outcome["diffs"])
        previous = outcome["previous_images"]
        if with_policy:
            written = disruption_policy.sync_policy_file(request.dest, check_mode=check_mode)
            result["files"].append(written["path"])
            result["disruption_policy"]["file"] = written["path"]
            if written["content_changed"]:
                result["file_changes"]["created" if written["created"] else "changed"].append(written["path"])
            if written["changed"]:
                result["changed"] = True
                diffs.append(written["diff"])
    if request.apply:
        try:
            with K8sClient.connect(request.connection, tmpdir=tmpdir) as client:
                if with_policy:
                    policy = disruption_policy.sync_policy(client, check_mode=check_mode)
                    result["disruption_policy"]["applied"] = policy["changed"]
                    result["changed"] |= policy["changed"]
                    if policy["changed"]:
                        diffs.append(policy["diff"])

                def no_reboot(pools: List[str]) -> None:
                    disruption_policy.check_no_reboot(
                        client, pools, with_policy, check_mode, request.disruption_policy_timeout
                    )

                outcome = sync_cluster(
                    entries,
                    client,
                    state=request.state,
                    check_mode=check_mode,
                    before_change=None if request.allow_reboot else no_reboot,
                )
        except CollectionError as exc:
            # The files in dest are written by then: the failure says which.
            raise MachineConfigError(exc.problems, message=exc.message, details=dict(result, **exc.details)) from exc
        result.update(applied=outcome["applied"], deleted=outcome["deleted"])
        result["changed"] |= outcome["changed"]
        diffs.extend(outcome["diffs"])
        if previous is None:
            previous = outcome["previous_images"]
    result["pools"] = [
        pool_summary(e, None if previous is None else previous[e["name"]], request.return_images) for e in entries
    ]
    if request.return_objects:
        result["machine_configs"] = [e["machine_config"] for e in entries if e["machine_config"] is not None]
    if diff and diffs:
        result["diff"] = diffs
    return result
