# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node's record of the images this collection pulled or pinned (node side, Python 3.8+).

A prune removes only images this record names: an image the collection never brought or pinned is never a
candidate. The record is a JSON file in the node's state directory (``_common/node_state``), mode 0600, rewritten atomically
(``_common/atomic_file``); it survives reboots as its directory does::

    {"version": 1, "images": {"quay.io/a/b@sha256:...": {"image_id": "sha256:...", "pulled": true,
     "pinned": true, "first_run": "...", "last_run": "...", "first_seen": 1700000000.0, "last_seen": ...}}}
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Dict, Iterable, Mapping, Optional

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import atomic_write, read_bytes
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "MAX_RECORD_BYTES",
    "RECORD_MODE",
    "RECORD_NAME",
    "RECORD_VERSION",
    "Entry",
    "RecordError",
    "adopt_former",
    "default_record_file",
    "forgotten",
    "noted",
    "read_record",
    "record_next_to",
    "write_record",
]

RECORD_NAME = "pinned-images-record.json"
RECORD_VERSION = 1
RECORD_MODE = 0o600
# Thousands of images fit in far less; a bigger file is not ours.
MAX_RECORD_BYTES = 16 * 1024 * 1024
Entry = Dict[str, Any]


class RecordError(CollectionError):
    """The record at ``path`` cannot be trusted; nothing is pruned."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            f"the prune record {path} {why}; nothing was pruned. Fix or remove the file (without it nothing is "
            "pruned until a prefetch records its images again)",
            details={"record_file": path},
        )


def default_record_file(state_dir: str) -> str:
    """The record in the node's state directory (``_common/node_state``)."""
    return os.path.join(state_dir, RECORD_NAME)


def record_next_to(lock_file: Optional[str]) -> Optional[str]:
    """Where the record was kept before the state directory: next to the lock file (None without one). The role
    names it as the former record, which ``adopt_former`` moves."""
    if not lock_file:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(lock_file)), RECORD_NAME)


def adopt_former(path: str, former: Optional[str], check_mode: bool = False) -> str:
    """The record file to read: ``path``. When it is missing and a ``former`` record exists, that one is read
    (checked as any record), written at ``path`` and removed, once; in check mode it is read where it is (its path
    returned). RecordError when the former record is not a record: it is left as it is."""
    if not former or os.path.abspath(former) == os.path.abspath(path) or os.path.lexists(path):
        return path
    if not os.path.lexists(former):
        return path
    entries = read_record(former)
    if check_mode:
        return former
    write_record(path, entries)
    try:
        os.unlink(former)
    except OSError as exc:
        raise RecordError(former, f"was copied to {path} but cannot be removed ({exc.strerror or exc})") from None
    return path


def _check_owner(path: str) -> None:
    # lstat: a link planted in a world-writable /var/tmp is named, not followed.
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RecordError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(info.st_mode):
        raise RecordError(path, "is not a regular file")
    if info.st_uid != os.geteuid():
        raise RecordError(path, f"belongs to uid {info.st_uid}, not to this user ({os.geteuid()})")
    if stat.S_IMODE(info.st_mode) & (stat.S_IWGRP | stat.S_IWOTH):
        raise RecordError(path, f"is writable by others (mode {stat.S_IMODE(info.st_mode):04o})")


def _check_entry(name: object, entry: object) -> Optional[str]:
    if not isinstance(name, str) or not name:
        return f"an image name {name!r} is not a non-empty string"
    if not isinstance(entry, dict) or not isinstance(entry.get("image_id", ""), str):
        return f"the entry of {name} is not an object with a string image_id"
    for key in ("first_seen", "last_seen"):
        value = entry.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"the {key} of {name} is not a number of seconds"
    for key in ("pulled", "pinned"):
        if not isinstance(entry.get(key, False), bool):
            return f"the {key} of {name} is not true or false"
    return None


def read_record(path: str) -> Dict[str, Entry]:
    """``{image: entry}``; a missing file is an empty record. RecordError for anything else that is not a record."""
    _check_owner(path)
    try:
        data = read_bytes(path, MAX_RECORD_BYTES)
    except CollectionError as exc:
        raise RecordError(path, f"cannot be read ({exc.message})") from exc
    if data is None:
        return {}
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(path, f"is bigger than {MAX_RECORD_BYTES} bytes")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError(path, f"is not JSON ({exc})") from exc
    if not isinstance(document, dict) or document.get("version") != RECORD_VERSION:
        raise RecordError(path, f"is not a version {RECORD_VERSION} record")
    images = document.get("images")
    if not isinstance(images, dict):
        raise RecordError(path, "has no images object")
    for name, entry in images.items():
        problem = _check_entry(name, entry)
        if problem:
            raise RecordError(path, f"is corrupt: {problem}")
    return {name: dict(entry) for name, entry in images.items()}


def noted(
    entries: Mapping[str, Entry],
    ids: Mapping[str, str],
    pulled: Iterable[str],
    pinned: Iterable[str],
    run_id: Optional[str],
    now: float,
) -> Dict[str, Entry]:
    """The entries with the ``pulled`` and ``pinned`` images of run ``run_id`` added (``ids``: their image ids,
    where known); an image keeps its first run and first time, and what it once was (pulled, pinned)."""
    result = {name: dict(entry) for name, entry in entries.items()}
    pulled_names, pinned_names = set(pulled), set(pinned)
    for name in sorted(pulled_names | pinned_names):
        entry = result.setdefault(
            name, dict(image_id="", pulled=False, pinned=False, first_run=run_id or "", first_seen=now)
        )
        entry["image_id"] = ids.get(name) or entry.get("image_id", "")
        entry["pulled"] = bool(entry.get("pulled")) or name in pulled_names
        entry["pinned"] = bool(entry.get("pinned")) or name in pinned_names
        entry.update(last_run=run_id or "", last_seen=now)
    return result


def forgotten(entries: Mapping[str, Entry], images: Iterable[str]) -> Dict[str, Entry]:
    """The entries without ``images``."""
    gone = set(images)
    return {name: dict(entry) for name, entry in entries.items() if name not in gone}


def write_record(path: str, entries: Mapping[str, Entry], check_mode: bool = False) -> bool:
    """Rewrite the record atomically (mode 0600); whether it changed."""
    text = json.dumps({"version": RECORD_VERSION, "images": dict(entries)}, indent=1, sort_keys=True) + "\n"
    return bool(atomic_write(path, text, mode=RECORD_MODE, check_mode=check_mode)["changed"])
