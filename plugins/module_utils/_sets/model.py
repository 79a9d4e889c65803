# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The PinnedImageSet and MachineConfigPool model and its validation.

Validation follows the ``machineconfiguration.openshift.io/v1`` CRDs (openAPIV3Schema and CEL rules), so
a set that validates here is one the API server accepts. Loading from files is in ``_sets.loading``, pool and
node selection in ``_sets.pools``, labels and selectors in ``_sets.label_selector``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import short_value
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import (
    MAX_NAME_LENGTH,
    check_dns_subdomain,
    check_labels,
    check_selector,
    type_name,
)

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "MACHINE_CONFIG_POOL_KIND",
    "MASTER_POOL",
    "MAX_IMAGE_NAME_LENGTH",
    "MAX_PINNED_IMAGES",
    "MAX_POOL_SET_REFS",
    "NODE_ROLE_LABEL_PREFIX",
    "OS_LABEL",
    "PINNED_IMAGE_SET_KIND",
    "POOL_LABEL_PREFIX",
    "ROLE_LABEL",
    "WORKER_POOL",
    "MachineConfigPool",
    "PinnedImageSet",
    "PinnedImageSetError",
    "as_pool",
    "check_pool",
    "check_set",
    "default_pool",
    "validate_pool",
    "validate_set",
]

API_GROUP = "machineconfiguration.openshift.io"
API_VERSION = API_GROUP + "/v1"
PINNED_IMAGE_SET_KIND = "PinnedImageSet"
MACHINE_CONFIG_POOL_KIND = "MachineConfigPool"
ROLE_LABEL = API_GROUP + "/role"
POOL_LABEL_PREFIX = "pools.operator." + API_GROUP + "/"
NODE_ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
OS_LABEL = "kubernetes.io/os"
MASTER_POOL = "master"
WORKER_POOL = "worker"

# Limits of the v1 CRDs.
MAX_PINNED_IMAGES = 500
MAX_IMAGE_NAME_LENGTH = 447
MAX_POOL_SET_REFS = 100


# spec.pinnedImageSets[].name pattern of the MachineConfigPool CRD (letters of both cases allowed there).
_POOL_SET_REF_RE = re.compile(
    r"([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])(\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9]))*"
)
# The two CEL rules of PinnedImageRef.name (RE2 '$' is end of text, hence fullmatch).
_CEL_DIGEST_RE = re.compile(r"sha256:[a-f0-9]{64}")
_CEL_NAME_RE = re.compile(r"([a-zA-Z0-9-]+\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?/([a-zA-Z0-9_-]{0,61}/)?[a-zA-Z0-9_.-]*")


class PinnedImageSetError(CollectionError):
    """Invalid pinned image sets or pools; ``problems`` lists every problem found."""


@dataclass(frozen=True)
class PinnedImageSet:
    """A validated PinnedImageSet: ``images`` as given, ``pool_selector`` the seed-style
    ``spec.machineConfigPoolSelector`` or None, ``source`` where it was read."""

    name: str
    labels: Dict[str, str] = field(default_factory=dict)
    images: Tuple[str, ...] = ()
    pool_selector: Optional[Dict[str, Any]] = None
    source: Optional[str] = None

    def to_dict(self, include_pool_selector: bool = False) -> Dict[str, Any]:
        """The API object; the seed-style pool selector only when asked (the v1 API prunes it)."""
        metadata: Dict[str, Any] = {"name": self.name}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        spec: Dict[str, Any] = {"pinnedImages": [{"name": name} for name in self.images]}
        if include_pool_selector and self.pool_selector is not None:
            spec["machineConfigPoolSelector"] = copy.deepcopy(self.pool_selector)
        return {"apiVersion": API_VERSION, "kind": PINNED_IMAGE_SET_KIND, "metadata": metadata, "spec": spec}


@dataclass(frozen=True)
class MachineConfigPool:
    """The parts of a MachineConfigPool that select sets and nodes."""

    name: str
    labels: Dict[str, str] = field(default_factory=dict)
    machine_config_selector: Optional[Dict[str, Any]] = None
    node_selector: Optional[Dict[str, Any]] = None
    pinned_image_sets: Tuple[str, ...] = ()
    source: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """The API object (missing selectors as empty ones, which select nothing)."""
        spec: Dict[str, Any] = {
            "machineConfigSelector": copy.deepcopy(self.machine_config_selector or {}),
            "nodeSelector": copy.deepcopy(self.node_selector or {}),
        }
        if self.pinned_image_sets:
            spec["pinnedImageSets"] = [{"name": name} for name in self.pinned_image_sets]
        metadata = {"name": self.name, "labels": dict(self.labels)}
        return {"apiVersion": API_VERSION, "kind": MACHINE_CONFIG_POOL_KIND, "metadata": metadata, "spec": spec}


def _where(source: Any, kind: Optional[str], name: Optional[str]) -> str:
    parts = []
    if source:
        parts.append(str(source))
    if name is not None:
        parts.append(f"{kind} {name!r}")
    elif kind:
        parts.append(kind)
    return ": ".join(parts)


def _check_image_name(value: Any) -> Optional[str]:
    """Why ``value`` is not a valid PinnedImageRef.name, or None."""
    if not isinstance(value, str):
        return f"must be a string, got {type_name(value)}"
    if not value:
        return "is empty"
    if len(value) > MAX_IMAGE_NAME_LENGTH:
        return f"{short_value(value)} is {len(value)} characters long; at most {MAX_IMAGE_NAME_LENGTH} are allowed"
    parts = value.split("@")
    if len(parts) != 2 or not _CEL_DIGEST_RE.fullmatch(parts[1]):
        try:
            ref = parse_image_ref(value, require_digest=False)
        except ImageReferenceError:
            ref = None
        if ref is not None and ref.tag and not ref.digest:
            return (
                f"{short_value(value)} is a tag reference; PinnedImageSet takes digests only "
                "(name@sha256:<64 lower-case hex digits>)"
            )
        return f"{short_value(value)} must end with a valid '@sha256:<digest>' suffix, where '<digest>' is 64 lower-case hex digits"
    try:
        parse_image_ref(value, require_digest=True)
    except ImageReferenceError as exc:
        if _CEL_NAME_RE.fullmatch(parts[0]):
            # Upper case in the path, '..', a leading '-', an empty component: the CRD's rules let these through.
            return f"{exc}; the PinnedImageSet API would accept this name, but no node could ever pull it"
        return str(exc)
    if not _CEL_NAME_RE.fullmatch(parts[0]):
        return (
            f"{short_value(value)} does not have the host[:port][/namespace]/name form the PinnedImageSet API requires: "
            "the registry host must be written out and contain a dot, and at most one namespace "
            "(letters, digits, '-', '_') may come between host and name"
        )
    return None


def _check_api_version_kind(obj: Mapping[str, Any], kind: str) -> List[str]:
    problems = []
    if obj.get("apiVersion") != API_VERSION:
        problems.append(f"apiVersion is {short_value(obj.get('apiVersion'))}; it must be {API_VERSION!r}")
    if obj.get("kind") != kind:
        problems.append(f"kind is {short_value(obj.get('kind'))}; it must be {kind!r}")
    return problems


def _metadata(obj: Mapping[str, Any]) -> Tuple[Optional[str], Dict[str, Any], List[str]]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return None, {}, ["metadata must be a mapping with at least a name"]
    name = metadata.get("name")
    problems = []
    problem = check_dns_subdomain(name, "metadata.name")
    if problem:
        problems.append(problem)
    problems.extend(check_labels(metadata.get("labels"), "metadata.labels"))
    labels: Dict[str, Any] = metadata["labels"] if isinstance(metadata.get("labels"), dict) else {}
    return (name if isinstance(name, str) and name else None), labels, problems


def _object_header(obj: Mapping[str, Any], kind: str) -> Tuple[Optional[str], Dict[str, Any], List[str]]:
    """(name, labels, problems) of what every object has: apiVersion, kind and metadata."""
    problems = _check_api_version_kind(obj, kind)
    name, labels, meta_problems = _metadata(obj)
    return name, labels, problems + meta_problems


def _located(source: Any, kind: str, name: Optional[str], problems: List[str]) -> List[str]:
    """``problems``, each prefixed with where the object came from and its kind and name."""
    prefix = _where(source, kind, name)
    return [f"{prefix}: {p}" if prefix else p for p in problems]


def check_set(obj: Any, source: Any) -> Tuple[Optional[PinnedImageSet], List[str]]:
    """(PinnedImageSet or None, problems) for one object."""
    if not isinstance(obj, dict):
        return None, _located(source, PINNED_IMAGE_SET_KIND, None, [f"must be a mapping, got {type_name(obj)}"])
    name, labels, problems = _object_header(obj, PINNED_IMAGE_SET_KIND)
    images = []
    pool_selector = None
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        problems.append("spec must be a mapping with pinnedImages")
    else:
        pinned = spec.get("pinnedImages")
        if not isinstance(pinned, list):
            problems.append(f"spec.pinnedImages is required and must be a list, got {type_name(pinned)}")
        else:
            if not pinned:
                problems.append("spec.pinnedImages must list at least one image")
            if len(pinned) > MAX_PINNED_IMAGES:
                problems.append(f"spec.pinnedImages has {len(pinned)} items; at most {MAX_PINNED_IMAGES} are allowed")
            seen: Dict[str, int] = {}
            for index, entry in enumerate(pinned):
                where = f"spec.pinnedImages[{index}]"
                if not isinstance(entry, dict) or "name" not in entry:
                    problems.append(f"{where} must be a mapping with a name, got {short_value(entry)}")
                    continue
                value = entry["name"]
                problem = _check_image_name(value)
                if problem:
                    problems.append(f"{where}.name {problem}")
                    continue
                if value in seen:
                    problems.append(f"{where}.name {short_value(value)} duplicates spec.pinnedImages[{seen[value]}]")
                    continue
                seen[value] = index
                images.append(value)
        if "machineConfigPoolSelector" in spec:
            pool_selector = spec.get("machineConfigPoolSelector")
            problems.extend(check_selector(pool_selector, "spec.machineConfigPoolSelector"))
    if problems or name is None:  # a missing name is among the problems
        return None, _located(source, PINNED_IMAGE_SET_KIND, name, problems)
    return (
        PinnedImageSet(
            name=name,
            labels=dict(labels),
            images=tuple(images),
            pool_selector=copy.deepcopy(pool_selector),
            source=str(source) if source is not None else None,
        ),
        [],
    )


def check_pool(obj: Any, source: Any) -> Tuple[Optional[MachineConfigPool], List[str]]:
    """(MachineConfigPool or None, problems) for one object."""
    if not isinstance(obj, dict):
        return None, _located(source, MACHINE_CONFIG_POOL_KIND, None, [f"must be a mapping, got {type_name(obj)}"])
    name, labels, problems = _object_header(obj, MACHINE_CONFIG_POOL_KIND)
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        problems.append(f"spec must be a mapping, got {type_name(spec)}")
        spec = {}
    mc_selector = spec.get("machineConfigSelector")
    node_selector = spec.get("nodeSelector")
    problems.extend(check_selector(mc_selector, "spec.machineConfigSelector"))
    problems.extend(check_selector(node_selector, "spec.nodeSelector"))
    refs = []
    raw_refs = spec.get("pinnedImageSets")
    if raw_refs is not None:
        if not isinstance(raw_refs, list):
            problems.append(f"spec.pinnedImageSets must be a list, got {type_name(raw_refs)}")
        else:
            if len(raw_refs) > MAX_POOL_SET_REFS:
                problems.append(
                    f"spec.pinnedImageSets has {len(raw_refs)} items; at most {MAX_POOL_SET_REFS} are allowed"
                )
            for index, ref in enumerate(raw_refs):
                where = f"spec.pinnedImageSets[{index}]"
                ref_name = ref.get("name") if isinstance(ref, dict) else None
                if not isinstance(ref_name, str) or not ref_name:
                    problems.append(f"{where} must be a mapping with a non-empty name")
                elif len(ref_name) > MAX_NAME_LENGTH or not _POOL_SET_REF_RE.fullmatch(ref_name):
                    problems.append(f"{where}.name {short_value(ref_name)} is not a valid RFC 1123 subdomain")
                elif ref_name in refs:
                    problems.append(f"{where}.name {ref_name!r} is listed twice")
                else:
                    refs.append(ref_name)
    if problems or name is None:  # a missing name is among the problems
        return None, _located(source, MACHINE_CONFIG_POOL_KIND, name, problems)
    return (
        MachineConfigPool(
            name=name,
            labels=dict(labels),
            machine_config_selector=copy.deepcopy(mc_selector),
            node_selector=copy.deepcopy(node_selector),
            pinned_image_sets=tuple(refs),
            source=str(source) if source is not None else None,
        ),
        [],
    )


def validate_set(obj: Any, source: Any = None) -> PinnedImageSet:
    """Validate one PinnedImageSet object; raise PinnedImageSetError listing every problem."""
    result, problems = check_set(obj, source)
    if result is None:
        raise PinnedImageSetError(problems)
    return result


def validate_pool(obj: Any, source: Any = None) -> MachineConfigPool:
    """Validate one MachineConfigPool object; raise PinnedImageSetError listing every problem."""
    result, problems = check_pool(obj, source)
    if result is None:
        raise PinnedImageSetError(problems)
    return result


def default_pool(name: str) -> MachineConfigPool:
    """A pool shaped like OpenShift's built-in ``master`` and ``worker`` pools: machineConfigSelector ``role:
    <name>``, nodeSelector ``node-role.kubernetes.io/<name>: ""``, label
    ``pools.operator.machineconfiguration.openshift.io/<name>: ""``."""
    problem = check_dns_subdomain(name, "pool name")
    if problem:
        raise PinnedImageSetError(problem)
    return MachineConfigPool(
        name=name,
        labels={POOL_LABEL_PREFIX + name: ""},
        machine_config_selector={"matchLabels": {ROLE_LABEL: name}},
        node_selector={"matchLabels": {NODE_ROLE_LABEL_PREFIX + name: ""}},
        pinned_image_sets=(),
        source=None,
    )


def as_pool(value: Any) -> MachineConfigPool:
    """A MachineConfigPool from an instance, an object dict or a bare pool name."""
    if isinstance(value, MachineConfigPool):
        return value
    if isinstance(value, str):
        return default_pool(value)
    return validate_pool(value)
