# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ownership mark of the files the collection renders (MachineConfigs, the node disruption policy, PinnedImageSets
in a GitOps directory): a header line and an annotation on the object. A later render changes or removes only a
file it owns: one with the mark, or one an earlier version wrote before there was a mark (the same object name, and
exactly the bytes that version wrote for it). Any other file is the user's, and is left alone.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple, Union

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import read_bytes
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import YAMLError, dump_yaml, load_yaml

__all__ = [
    "FOREIGN",
    "HEADER",
    "NotOursError",
    "OURS",
    "OWNER",
    "OWNER_ANNOTATION",
    "PREVIOUS",
    "RENDERED_KINDS",
    "Shape",
    "marked",
    "owner",
    "refuse_foreign",
    "rendered_text",
]

OWNER_ANNOTATION = "pinned.images/rendered-by"
OWNER = "pinned.images"
HEADER = "# Rendered by pinned.images (annotation pinned.images/rendered-by): a later render changes or removes it.\n"
# The kinds the render writes, for files of an earlier version.
RENDERED_KINDS = ("MachineConfig", "MachineConfiguration", "PinnedImageSet")
OURS = "ours"
PREVIOUS = "previous"
FOREIGN = "foreign"


def marked(obj: Mapping[str, Any]) -> Dict[str, Any]:
    """A copy of ``obj`` with the ownership annotation."""
    copied = copy.deepcopy(dict(obj))
    metadata = copied.setdefault("metadata", {})
    metadata["annotations"] = dict(metadata.get("annotations") or {}, **{OWNER_ANNOTATION: OWNER})
    return copied


def rendered_text(obj: Mapping[str, Any]) -> str:
    """The file of a rendered object: the header line, then ``obj`` with the annotation (byte-stable YAML)."""
    return HEADER + dump_yaml(marked(obj))


# Whether an object has the shape of what an earlier render wrote (the caller knows its kind's content).
Shape = Callable[[Dict[str, Any]], bool]


def owner(data: Optional[Union[bytes, str]], name: str, shape: Optional[Shape] = None) -> Optional[str]:
    """Who owns a file meant for object ``name``: ``OURS`` (it carries the mark), ``PREVIOUS`` (unmarked, but the
    exact bytes an earlier version rendered for an object of that name, of a rendered kind and, with ``shape``, of
    that shape), ``FOREIGN``; None when there is no file."""
    if data is None:
        return None
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if text.startswith(HEADER):
        return OURS
    try:
        obj = load_yaml(text)
    except YAMLError:
        return FOREIGN
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return FOREIGN
    metadata = obj["metadata"]
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict) and annotations.get(OWNER_ANNOTATION) == OWNER:
        return OURS
    rendered = obj.get("kind") in RENDERED_KINDS and metadata.get("name") == name and dump_yaml(obj) == text
    if rendered and (shape is None or shape(obj)):
        return PREVIOUS
    return FOREIGN


class NotOursError(CollectionError):
    """A file the collection would write or remove is the user's (no ownership mark): nothing was written."""


def refuse_foreign(files: Iterable[Tuple[str, str, Optional[Shape]]]) -> None:
    """Raise NotOursError naming every one of ``files`` (path, object name, shape for ``owner``) that exists and is
    not ours, before anything is written."""
    foreign = [path for path, name, shape in files if owner(read_bytes(path), name, shape) == FOREIGN]
    if foreign:
        problems = [
            f"{path} is not ours (it has no {OWNER_ANNOTATION} mark and is not a file an earlier render wrote)"
            for path in foreign
        ]
        raise NotOursError(
            problems,
            message="; ".join(problems) + "; nothing was written: move it away, or give it the mark to let the "
            "render replace it",
        )
