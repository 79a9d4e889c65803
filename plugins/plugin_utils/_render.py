# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The render entry point of the ``pinned.images.cluster`` role on the controller: the API objects it writes, why it
must not write, the files it wrote, and its result for a pipeline; exposed as filters by ``plugins/filter/render.py``
and ``plugins/filter/cluster.py`` (``render_objects``).

The report says which files would be (or were) created, changed and removed, the images added and removed per pool,
and whether the run failed.

Document (``REPORT_VERSION`` 1)::

    {"version": 1, "status": "clean" | "drift" | "updated" | "error", "check_mode": bool, "dest": "out",
     "counts": {"created": 0, "changed": 1, "removed": 0}, "not_ours": ["out/machineconfigs/99-master-ssh.yaml"],
     "created": [], "changed": ["out/machineconfigs/99-worker-pinned-images.yaml"], "removed": [],
     "pools": [{"pool": "worker", "machine_config": "99-worker-pinned-images", "image_count": 2,
                "set_names": [...], "added": [...], "removed": [...]}],
     "error": null | {"msg": "...", "problems": ["<file>: <problem>", ...], "task": "..."},
     "message": "..."}

``clean``: nothing differs; ``drift`` (check mode) and ``updated`` (a real run): some file differs;
``error``: the render failed, the lists are empty and ``error`` says why. ``not_ours``: the files of the two output
directories that the render did not write and does not own (no ownership mark, ``_common/rendered_file``): left
alone whatever the status, named in the message as "not ours, left". Paths under ``base`` (the directory
``ansible-playbook`` was started in) are given relative to it, as a repository checkout names them.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import read_bytes
from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import FOREIGN, owner
from ansible_collections.pinned.images.plugins.module_utils._openshift import disruption_policy
from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import rendered_shape
from ansible_collections.pinned.images.plugins.module_utils._runs.pinned_image_set import dropped_fields
from ansible_collections.pinned.images.plugins.module_utils._sets.model import MachineConfigPool, PinnedImageSet
from ansible_collections.pinned.images.plugins.plugin_utils._plan import no_sets_message

__all__ = [
    "REPORT_VERSION",
    "display_path",
    "merge_file_changes",
    "render_changes",
    "render_leftovers",
    "render_objects",
    "render_problem",
    "render_report",
    "render_written",
]

REPORT_VERSION = 1
KINDS = ("created", "changed", "removed")
MACHINE_CONFIGS_DIR = "machineconfigs"


def merge_file_changes(changes: Optional[Iterable[Optional[Mapping[str, Any]]]]) -> Dict[str, List[str]]:
    """One ``{created, changed, removed}`` from many (sorted; ``None`` items are skipped); a path listed twice keeps
    its first kind."""
    seen: Set[str] = set()
    merged: Dict[str, List[str]] = {kind: [] for kind in KINDS}
    for item in changes or []:
        if not item:
            continue
        for kind in KINDS:
            for path in item.get(kind) or []:
                if path not in seen:
                    seen.add(path)
                    merged[kind].append(path)
    return {kind: sorted(paths) for kind, paths in merged.items()}


def display_path(path: str, base: Optional[str]) -> str:
    """``path`` relative to ``base`` when it lies below it."""
    if not base or not path or not os.path.isabs(path):
        return path
    relative = os.path.relpath(path, base)
    return path if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _pool(entry: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "pool": entry.get("pool"),
        "machine_config": entry.get("name"),
        "image_count": int(entry.get("image_count") or 0),
        "set_names": list(entry.get("set_names") or []),
        "added": list(entry.get("added") or []),
        "removed": list(entry.get("removed") or []),
    }


def _error(error: Any) -> Dict[str, Any]:
    if isinstance(error, dict):
        problems = error.get("problems") or []
        return {
            "msg": str(error.get("msg") or "the render failed"),
            "problems": [str(p) for p in problems] if isinstance(problems, list) else [str(problems)],
            "task": error.get("task"),
        }
    return {"msg": str(error), "problems": [], "task": None}


def render_report(
    changes: Optional[Iterable[Optional[Mapping[str, Any]]]],
    pools: Optional[List[Mapping[str, Any]]] = None,
    dest: str = "",
    check_mode: bool = False,
    error: Any = None,
    base: Optional[str] = None,
    not_ours: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """The report document (see the module docstring); ``changes`` are ``file_changes`` results, ``not_ours`` the
    user's files the render found in its directories and left."""
    dest_shown = display_path(dest, base)
    left = sorted(display_path(path, base) for path in not_ours or [])
    report = {"version": REPORT_VERSION, "check_mode": bool(check_mode), "dest": dest_shown, "not_ours": left}
    if error is not None:
        err = _error(error)
        lists: Dict[str, List[str]] = {kind: [] for kind in KINDS}
        report.update(status="error", counts={kind: 0 for kind in KINDS}, pools=[], error=err, **lists)
        detail = "".join("\n- " + p for p in err["problems"] if p not in err["msg"])
        report["message"] = (
            f"the render of {dest_shown or 'the sets'} failed (this is an error, not drift): {err['msg']}{detail}"
        )
        return report

    merged = merge_file_changes(changes)
    lists = {kind: [display_path(p, base) for p in merged[kind]] for kind in KINDS}
    counts = {kind: len(lists[kind]) for kind in KINDS}
    differs = any(counts.values())
    status = ("drift" if check_mode else "updated") if differs else "clean"
    summary = ", ".join(f"{counts[kind]} {kind}" for kind in ("changed", "created", "removed"))
    details = "".join(
        f"; {kind}: {', '.join(lists[kind])}" for kind in ("changed", "created", "removed") if lists[kind]
    )
    if status == "drift":
        message = (
            f"{dest_shown} differs from what the render writes (run without --check to update it): {summary}{details}"
        )
    elif status == "updated":
        message = f"{dest_shown} updated: {summary}{details}"
    else:
        message = f"{dest_shown} matches what the render writes: no drift"
    if left:
        message += f"; not ours, left: {', '.join(left)}"
    report.update(
        status=status, counts=counts, pools=[_pool(p) for p in pools or []], error=None, message=message, **lists
    )
    return report


def render_problem(info: Mapping[str, Any], sources: Mapping[str, Any], dest: str, allow_empty: bool = False) -> str:
    """Why the render must not write (it would remove every set file and MachineConfig of ``dest``), or ""."""
    if info.get("sets") or allow_empty:
        return ""
    return (
        f"{no_sets_message(sources)}, so the render would remove every file it wrote in {dest}/pinnedimagesets and "
        f"{dest}/machineconfigs; nothing was changed. Check the paths, or cluster_render_allow_empty=true to "
        "render the empty state"
    )


def render_objects(info: Mapping[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """``{sets, pools}``: the sets (with their pool selector) and pools of a ``pinned_image_set_info`` result as
    ``machineconfiguration.openshift.io/v1`` objects."""
    sets = [
        PinnedImageSet(
            name=s["name"],
            labels=s["labels"] or {},
            images=tuple(s["images"]),
            pool_selector=s.get("pool_selector") or None,
        ).to_dict(include_pool_selector=True)
        for s in info.get("sets", [])
    ]
    pools = [
        MachineConfigPool(
            name=p["name"],
            labels=p["labels"] or {},
            machine_config_selector=p.get("machine_config_selector"),
            node_selector=p.get("node_selector"),
            pinned_image_sets=tuple(p.get("pinned_image_sets") or ()),
        ).to_dict()
        for p in info.get("pools", [])
    ]
    return {"sets": sets, "pools": pools}


def _loop_results(registered: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The items of a registered loop result; [] when the task was skipped or not run."""
    return list((registered or {}).get("results") or [])


def render_written(set_files: Optional[Mapping[str, Any]], machine_configs: Optional[Mapping[str, Any]]) -> List[str]:
    """The paths the render wrote (or found up to date): each set's file and the MachineConfig files."""
    paths = [result["path"] for result in _loop_results(set_files) if result.get("path")]
    return paths + list((machine_configs or {}).get("files") or [])


def _file_owner(path: str) -> Optional[str]:
    """Who owns a file of an output directory (``_common/rendered_file.owner``) by what the render writes there."""
    base = os.path.basename(path)
    if os.path.basename(os.path.dirname(path)) == MACHINE_CONFIGS_DIR:
        name = disruption_policy.NAME if base == disruption_policy.POLICY_FILE_NAME else os.path.splitext(base)[0]
        return owner(read_bytes(path), name, rendered_shape)
    return owner(read_bytes(path), os.path.splitext(base)[0], lambda obj: not dropped_fields(obj))


def render_leftovers(found: Optional[Mapping[str, Any]], written: List[str]) -> Dict[str, List[str]]:
    """The files ``ansible.builtin.find`` found (``found``) that the render did not write, sorted: ``stale``, those
    it owns (they carry the mark, or an earlier version wrote them), which it removes, and ``not_ours``, the user's
    files, which it leaves."""
    keep = set(written)
    leftovers: Dict[str, List[str]] = {"stale": [], "not_ours": []}
    for path in sorted(item["path"] for item in (found or {}).get("files") or [] if item["path"] not in keep):
        leftovers["not_ours" if _file_owner(path) == FOREIGN else "stale"].append(path)
    return leftovers


def render_changes(
    set_files: Optional[Mapping[str, Any]],
    machine_configs: Optional[Mapping[str, Any]],
    removed: Optional[Mapping[str, Any]],
) -> List[Optional[Dict[str, Any]]]:
    """The ``file_changes`` of the set files and the MachineConfigs, and the stale files removed (the ``file``
    loop's changed items), for the ``render_report`` filter."""
    changes: List[Optional[Dict[str, Any]]] = [result.get("file_changes") for result in _loop_results(set_files)]
    changes.append((machine_configs or {}).get("file_changes"))
    changes.append({"removed": [result["item"] for result in _loop_results(removed) if result.get("changed")]})
    return changes
