# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pinned_image_set module's run (controller side): build one PinnedImageSet from parameters or a definition,
validate it, apply it to (or delete it from) the cluster and/or write (or remove) ``<dest>/<name>.yaml``.

``SetRequest.from_params(params)``, ``publish_set(request, check_mode, diff, tmpdir) -> Outcome``; every failure is a CollectionError (K8sError
carries ``status`` and ``reason``), raised before anything is applied or written when the input is bad.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import (
    AtomicFileError,
    atomic_write,
    remove_file,
)
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError, join_problems
from ansible_collections.pinned.images.plugins.module_utils._common.rendered_file import refuse_foreign, rendered_text
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import HAS_YAML, YAML_IMPORT_ERROR
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import (
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    K8sClient,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.config import K8sConnection
from ansible_collections.pinned.images.plugins.module_utils._k8s.objects import KubeObject, clean_object
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import k8s_connection
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome, hiding
from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import check_dns_subdomain
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    PINNED_IMAGE_SET_KIND,
    PinnedImageSet,
    PinnedImageSetError,
    validate_set,
)

__all__ = ["SetRequest", "build_object", "dropped_fields", "publish_set", "render", "run"]

_USED_METADATA = ("name", "labels", "annotations")
_USED_SPEC = ("pinnedImages", "machineConfigPoolSelector")


@dataclass(frozen=True)
class SetRequest:
    """The module's options: the set (by parameters or a ``definition``), what to do with it, the connection."""

    name: Optional[str]
    images: Optional[List[str]]
    labels: Optional[Dict[str, str]]
    pool_selector: Optional[Dict[str, Any]]
    definition: Optional[KubeObject]
    state: str
    dest: Optional[str]
    apply: Optional[bool]
    force_conflicts: bool
    connection: K8sConnection

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "SetRequest":
        """The options as the argument spec checked them; the set itself is checked by ``publish_set``."""
        return cls(
            name=params["name"],
            images=params["images"],
            labels=params["labels"],
            pool_selector=params["pool_selector"],
            definition=params["definition"],
            state=params["state"],
            dest=params["dest"],
            apply=params["apply"],
            force_conflicts=params["force_conflicts"],
            connection=k8s_connection(params),
        )


def build_object(request: SetRequest) -> Tuple[KubeObject, str]:
    """(the PinnedImageSet object the request describes, where it came from: ``definition`` or ``parameters``)."""
    if request.definition is not None:
        return copy.deepcopy(request.definition), "definition"
    metadata: Dict[str, Any] = {"name": request.name}
    if request.labels is not None:
        metadata["labels"] = request.labels
    spec: Dict[str, Any] = {"pinnedImages": [{"name": image} for image in request.images or []]}
    if request.pool_selector is not None:
        spec["machineConfigPoolSelector"] = request.pool_selector
    return {"apiVersion": API_VERSION, "kind": PINNED_IMAGE_SET_KIND, "metadata": metadata, "spec": spec}, "parameters"


def _mapping(obj: Mapping[str, Any], key: str) -> Dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def dropped_fields(obj: Mapping[str, Any]) -> List[str]:
    """The fields of a definition a PinnedImageSet does not use (``status``, ``metadata.namespace``, ...)."""
    dropped = [key for key in obj if key not in ("apiVersion", "kind", "metadata", "spec")]
    metadata = _mapping(obj, "metadata")
    dropped.extend("metadata." + key for key in metadata if key not in _USED_METADATA)
    spec = _mapping(obj, "spec")
    dropped.extend("spec." + key for key in spec if key not in _USED_SPEC)
    return dropped


def render(image_set: PinnedImageSet, obj: Mapping[str, Any]) -> KubeObject:
    """The object to apply and write: the validated set plus the definition's annotations."""
    rendered = image_set.to_dict(include_pool_selector=image_set.pool_selector is not None)
    metadata = rendered["metadata"]
    if metadata.get("labels"):
        metadata["labels"] = dict(sorted(metadata["labels"].items()))
    annotations = (obj.get("metadata") or {}).get("annotations")
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return rendered


def _annotation_problems(obj: Mapping[str, Any], source: str) -> List[str]:
    annotations = _mapping(obj, "metadata").get("annotations")
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [f"{source}: metadata.annotations must be a mapping of strings"]
    return [
        f"{source}: metadata.annotations[{key!r}] must be a string"
        for key, value in annotations.items()
        if not isinstance(key, str) or not isinstance(value, str)
    ]


def _validated(obj: KubeObject, source: str) -> Tuple[str, KubeObject]:
    """(name, rendered object) of a set to make present; one error lists every problem."""
    problems = _annotation_problems(obj, source)
    image_set = None
    try:
        image_set = validate_set(obj, source=source)
    except PinnedImageSetError as exc:
        problems = list(exc.problems) + problems
    if problems or image_set is None:
        raise CollectionError(
            problems, message="invalid PinnedImageSet, nothing was applied or written: " + join_problems(problems)
        )
    return image_set.name, render(image_set, obj)


def _apply(
    request: SetRequest,
    name: str,
    rendered: Optional[KubeObject],
    check_mode: bool,
    tmpdir: Optional[str],
    result: Dict[str, Any],
    warnings: List[str],
) -> Dict[str, Any]:
    """Apply or delete the set in the cluster; the diff entry."""
    with K8sClient.connect(request.connection, tmpdir=tmpdir) as client:
        before = client.get(API_VERSION, PINNED_IMAGE_SET_KIND, name)
        after = None
        if rendered is not None:
            after = client.apply(rendered, force_conflicts=request.force_conflicts, dry_run=check_mode)
        elif before is not None:
            client.delete(API_VERSION, PINNED_IMAGE_SET_KIND, name, dry_run=check_mode)
        warnings.extend(f"API server: {warning}" for warning in client.warnings)
        host = client.host
    before_clean, after_clean = clean_object(before), clean_object(after)
    result["changed"] = before_clean != after_clean
    if after_clean is not None:
        result["object"] = after_clean
    where = f"{PINNED_IMAGE_SET_KIND}/{name} on {host}"
    return {
        "before": before_clean or {},
        "after": after_clean or {},
        "before_header": where if before is not None else f"{where} (absent)",
        "after_header": where if after is not None else f"{where} (absent)",
    }


def _write(
    dest: str, path: str, rendered: Optional[KubeObject], check_mode: bool, result: Dict[str, Any]
) -> Dict[str, str]:
    """Write or remove the set's file (with the ownership mark, ``_common/rendered_file``); the diff entry."""
    result["path"] = path
    try:
        if rendered is not None:
            if not os.path.isdir(dest) and not check_mode:
                os.makedirs(dest, mode=0o755, exist_ok=True)
            written = atomic_write(path, rendered_text(rendered), mode=0o644, check_mode=check_mode)
            kind = ("created" if written["created"] else "changed") if written["content_changed"] else None
        else:
            written = remove_file(path, check_mode=check_mode)
            kind = "removed" if written["changed"] else None
    except (AtomicFileError, OSError) as exc:
        raise CollectionError(str(exc), details=result) from exc
    result["file_changes"] = {"created": [], "changed": [], "removed": []}
    if kind:
        result["file_changes"][kind].append(path)
    result["changed"] = result["changed"] or written["changed"]
    diff: Dict[str, str] = written["diff"]
    return diff


def publish_set(
    request: SetRequest, check_mode: bool = False, diff: bool = False, tmpdir: Optional[str] = None
) -> Outcome:
    """Validate the set the request describes, then apply it and/or write it (or remove it for ``absent``)."""
    dest = request.dest
    do_apply = request.apply if request.apply is not None else dest is None
    if not do_apply and dest is None:
        raise CollectionError("nothing to do: set dest to write a file, or apply=true to apply to the cluster")
    if dest is not None and not HAS_YAML:
        raise CollectionError(missing_required_lib("PyYAML"), details={"exception": str(YAML_IMPORT_ERROR)})
    obj, source = build_object(request)
    warnings: List[str] = []
    rendered: Optional[KubeObject] = None
    name: str
    if request.state == "present":
        name, rendered = _validated(obj, source)
        dropped = dropped_fields(obj) if request.definition is not None else []
        if dropped:
            warnings.append("definition fields not used for a PinnedImageSet were dropped: " + ", ".join(dropped))
    else:
        given = _mapping(obj, "metadata").get("name")
        if check_dns_subdomain(given, "metadata.name") is not None:
            raise CollectionError(
                [], message=f"invalid PinnedImageSet name {given!r}: it must be an RFC 1123 subdomain"
            )
        name = str(given)
    if dest is not None and os.path.exists(dest) and not os.path.isdir(dest):
        raise CollectionError(f"dest {dest} is not a directory; nothing was applied or written")
    if dest is not None:
        # A user's file of the same name is never replaced nor removed.
        refuse_foreign([(os.path.join(dest, name + ".yaml"), name, lambda obj: not dropped_fields(obj))])
    result: Dict[str, Any] = {"changed": False, "name": name}
    if rendered is not None:
        result["definition"] = rendered
    diffs = []
    if do_apply:
        if not HAS_KUBERNETES:
            raise CollectionError(
                missing_required_lib("kubernetes"), details={"exception": str(KUBERNETES_IMPORT_ERROR)}
            )
        diffs.append(_apply(request, name, rendered, check_mode, tmpdir, result, warnings))
    if dest is not None:
        diffs.append(_write(dest, os.path.join(dest, name + ".yaml"), rendered, check_mode, result))
    if diff:
        result["diff"] = diffs[0] if len(diffs) == 1 else diffs
    return Outcome(result, warnings)


def run(invocation: Invocation) -> Outcome:
    """The module's run; the connection's secrets are hidden from its result and its failure."""
    request = SetRequest.from_params(invocation.params)
    return hiding(
        request.connection.secrets(),
        lambda: publish_set(request, invocation.check_mode, invocation.diff, invocation.tmpdir),
    )
