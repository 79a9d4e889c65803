# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""API objects as JSON: their types, label selectors as the API takes them, and objects without the fields the
server maintains."""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping, Optional, Union

__all__ = ["SERVER_METADATA_FIELDS", "KubeObject", "LabelSelector", "clean_object", "selector_string"]

# A Kubernetes API object (or a part of one) as JSON.
KubeObject = Dict[str, Any]
# A label selector given as text (``a=b,c``) or as {key: value or None}.
LabelSelector = Union[str, Mapping[str, Optional[str]], None]


def selector_string(label_selector: LabelSelector) -> Optional[str]:
    """A label selector as the API expects it: ``{"a": "b", "c": None}`` -> ``a=b,c``; strings pass through."""
    if label_selector is None:
        return None
    if isinstance(label_selector, str):
        return label_selector or None
    if isinstance(label_selector, dict):
        parts = []
        for key in sorted(label_selector):
            value = label_selector[key]
            parts.append(str(key) if value is None else f"{key}={value}")
        return ",".join(parts) or None
    raise TypeError(f"label_selector must be a string or a dict, got {type(label_selector).__name__}")


SERVER_METADATA_FIELDS = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")


def clean_object(obj: Optional[Mapping[str, Any]], drop_status: bool = False) -> Optional[KubeObject]:
    """A copy without the fields the server maintains (managedFields, resourceVersion, uid, ...), for diffs/results."""
    if obj is None:
        return None
    cleaned = copy.deepcopy(dict(obj))
    metadata = cleaned.get("metadata")
    if isinstance(metadata, dict):
        for key in SERVER_METADATA_FIELDS:
            metadata.pop(key, None)
    if drop_status:
        cleaned.pop("status", None)
    return cleaned
