# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""PinnedImageSet and MachineConfigPool model: loading, validation, pool and node selection.

Validation follows the ``machineconfiguration.openshift.io/v1`` CRDs (openAPIV3Schema and CEL rules), so
a set that loads here is one the API server accepts; selection follows the machine-config-operator.

Public API
----------
``PinnedImageSetError(ValueError)``
    One error for every problem found; ``.problems`` is a list of strings, each naming the source,
    the set, the field path (with the list index) and why it is wrong.
``PinnedImageSet`` (frozen dataclass)
    ``name``, ``labels`` (dict), ``images`` (tuple of names, as given), ``pool_selector`` (the seed-style
    ``spec.machineConfigPoolSelector`` or None), ``source`` (str or None); ``to_dict()`` renders the
    API object (``include_pool_selector=True`` keeps the seed-only field, which the v1 API prunes).
``MachineConfigPool`` (frozen dataclass)
    ``name``, ``labels``, ``machine_config_selector``, ``node_selector``, ``pinned_image_sets``
    (tuple of explicitly referenced set names), ``source``.
``load_sets(sources) -> (sets, pools)``
    ``sources`` is a list (or one item) of: a PinnedImageSet / MachineConfigPool object dict (or a
    ``kind: List`` of them), a ``PinnedImageSet`` / ``MachineConfigPool`` instance, or a path to a YAML
    file (multi-document; documents of other kinds are ignored) or a directory (``*.yaml``/``*.yml``,
    sorted, not recursive). Validates everything and raises one PinnedImageSetError listing every problem.
    Sets with the same name must be identical (exact repeats are dropped). Bounded: a file above
    ``MAX_SET_FILE_SIZE`` is refused unread, and a file or object holding more than ``MAX_EXPANDED_NODES`` values
    once its YAML aliases are counted out (or containing itself) is refused without expanding it.
``validate_set(obj, source=None) -> PinnedImageSet`` and ``validate_pool(obj, source=None) -> MachineConfigPool``
``check_dns_subdomain(value, what) -> str | None``
    Why ``value`` is not an RFC 1123 subdomain (Kubernetes object names), naming it ``what``; None when it is.
``default_pool(name) -> MachineConfigPool``
    A pool shaped like OpenShift's built-in ones: machineConfigSelector ``role: <name>``, nodeSelector
    ``node-role.kubernetes.io/<name>: ""``, label ``pools.operator.machineconfiguration.openshift.io/<name>: ""``.
``as_pool(value) -> MachineConfigPool``
    A MachineConfigPool, a pool object dict, or a pool name (-> ``default_pool``).
``label_selector_matches(selector, labels) -> bool``
    Kubernetes LabelSelector semantics: matchLabels and matchExpressions (In, NotIn, Exists,
    DoesNotExist) are ANDed; an empty selector matches everything, a missing (None) one nothing.
``set_matches_pool(pool, image_set) -> bool`` and ``sets_for_pool(pool, sets) -> list[PinnedImageSet]``
    As the MCO's pinned-image-set controller: a set belongs to a pool when its labels match the pool's non-empty
    ``spec.machineConfigSelector`` (a missing or empty selector matches nothing), or when its seed-only
    ``spec.machineConfigPoolSelector`` matches the pool's labels. The pool's ``spec.pinnedImageSets`` is the
    controller's output and is not read: the controller replaces it with the selector's result. Result keeps
    the order of ``sets``. ``missing_set_refs(pool, sets)`` lists referenced names that are not among ``sets``.
``pools_for_node(node_labels, pools) -> list[MachineConfigPool]``
    As the MCO does: pools whose non-empty ``spec.nodeSelector`` matches (an empty or missing nodeSelector
    matches no node; Windows nodes are in no pool); then ``master`` wins over a custom pool, a custom pool
    over ``worker``, and ``worker`` is kept next to a custom pool: ``[custom|master, worker]``,
    ``[master]`` or ``[worker]``. More than one custom pool raises PinnedImageSetError.
``unique_sorted_images(names) -> list[str]``
    Blank names dropped, de-duplicated, sorted (the list the MCO writes to the CRI-O drop-in). Blank means
    ``go_trim_space(name) == ""``.
``go_trim_space(text) -> str``
    ``text`` without the leading and trailing white space Go's ``strings.TrimSpace`` removes (``GO_SPACE``).
``images_for_sets(sets) -> list[str]`` and ``images_for_pool(pool, sets) -> (images, set_names)``
``images_for_node(node_labels, pools, sets) -> (images, set_names)``
    Union over the node's pools' sets; ``set_names`` in discovery order without repeats.
``wanted_images(images, sets, pools, node_labels, validate) -> (images, set_names)``
    What a pinning module's ``images`` / ``sets`` / ``pools`` / ``node_labels`` options select for this node;
    ``validate(images)`` checks and sorts a plain ``images`` list. ``SELECTION_ARGUMENT_SPEC``,
    ``SELECTION_MUTUALLY_EXCLUSIVE`` and ``SELECTION_REQUIRED_BY`` declare those options.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field

from ansible_collections.pinned.images.plugins.module_utils._config_file import read_config_text, short_value
from ansible_collections.pinned.images.plugins.module_utils._errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._image_ref import ImageReferenceError, parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._yaml import HAS_YAML, YAML_IMPORT_ERROR, YAMLError, load_yaml_all

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
MAX_NAME_LENGTH = 253

YAML_SUFFIXES = (".yaml", ".yml")
# A full set (500 names of at most 447 characters) is about 250 KB; a bigger file is a wrong path or an attack.
MAX_SET_FILE_SIZE = 4 * 1024 * 1024
# Nodes of one file or input object counted as if every alias were written out: refuses alias ("billion laughs")
# bombs, which load cheaply (aliases share one object) but expand without bound wherever they are walked.
MAX_EXPANDED_NODES = 200_000

# Go's unicode.IsSpace, which strings/bytes.TrimSpace use: Python's str.strip() also removes U+001C..U+001F,
# which Go keeps.
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"

_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# spec.pinnedImageSets[].name pattern of the MachineConfigPool CRD (letters of both cases allowed there).
_POOL_SET_REF_RE = re.compile(
    r"([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])(\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9]))*"
)
# The two CEL rules of PinnedImageRef.name (RE2 '$' is end of text, hence fullmatch).
_CEL_DIGEST_RE = re.compile(r"sha256:[a-f0-9]{64}")
_CEL_NAME_RE = re.compile(r"([a-zA-Z0-9-]+\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?/([a-zA-Z0-9_-]{0,61}/)?[a-zA-Z0-9_.-]*")
_LABEL_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class PinnedImageSetError(CollectionError):
    """Invalid pinned image sets or pools; ``problems`` lists every problem found."""


@dataclass(frozen=True)
class PinnedImageSet:
    """A validated PinnedImageSet."""

    name: str
    labels: dict = field(default_factory=dict)
    images: tuple = ()
    pool_selector: dict | None = None
    source: str | None = None

    def to_dict(self, include_pool_selector: bool = False) -> dict:
        """The API object; the seed-style pool selector only when asked (the v1 API prunes it)."""
        metadata = {"name": self.name}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        spec = {"pinnedImages": [{"name": name} for name in self.images]}
        if include_pool_selector and self.pool_selector is not None:
            spec["machineConfigPoolSelector"] = copy.deepcopy(self.pool_selector)
        return {"apiVersion": API_VERSION, "kind": PINNED_IMAGE_SET_KIND, "metadata": metadata, "spec": spec}


@dataclass(frozen=True)
class MachineConfigPool:
    """The parts of a MachineConfigPool that select sets and nodes."""

    name: str
    labels: dict = field(default_factory=dict)
    machine_config_selector: dict | None = None
    node_selector: dict | None = None
    pinned_image_sets: tuple = ()
    source: str | None = None


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _where(source, kind, name) -> str:
    parts = []
    if source:
        parts.append(str(source))
    if name is not None:
        parts.append(f"{kind} {name!r}")
    elif kind:
        parts.append(kind)
    return ": ".join(parts)


def check_dns_subdomain(value, what: str) -> str | None:
    """Why ``value`` is not an RFC 1123 subdomain (``what`` names it in the text), or None when it is one."""
    if not isinstance(value, str) or not value:
        return f"{what} is required and must be a non-empty string"
    if len(value) > MAX_NAME_LENGTH:
        return f"{what} {short_value(value)} is {len(value)} characters long; at most {MAX_NAME_LENGTH} are allowed"
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        return (
            f"{what} {short_value(value)} is not a valid RFC 1123 subdomain (lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit)"
        )
    return None


def _check_labels(labels, what: str) -> list:
    """Kubernetes label syntax: [prefix/]name = value."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [f"{what} must be a mapping of strings, got {_type_name(labels)}"]
    problems = []
    for key, value in labels.items():
        if not isinstance(key, str):
            problems.append(f"{what} key {short_value(key)} must be a string")
            continue
        prefix, slash, name = key.rpartition("/")
        if (slash and check_dns_subdomain(prefix, "prefix")) or not name or len(name) > 63 or not _LABEL_NAME_RE.fullmatch(name):
            problems.append(f"{what} key {short_value(key)} is not a valid label key")
        if not isinstance(value, str):
            problems.append(f"{what}[{key!r}] must be a string, got {_type_name(value)} (quote it in YAML)")
        elif value and (len(value) > 63 or not _LABEL_NAME_RE.fullmatch(value)):
            problems.append(f"{what}[{key!r}] value {short_value(value)} is not a valid label value")
    return problems


def _check_selector(selector, what: str) -> list:
    """Problems of a metav1.LabelSelector, as LabelSelectorAsSelector reports them."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [f"{what} must be a mapping (matchLabels, matchExpressions), got {_type_name(selector)}"]
    problems = []
    unknown = sorted(str(k) for k in selector if k not in ("matchLabels", "matchExpressions"))
    if unknown:
        problems.append(f"{what} has unknown field(s) {', '.join(unknown)}; allowed are matchLabels and matchExpressions")
    problems.extend(_check_labels(selector.get("matchLabels"), what + ".matchLabels"))
    expressions = selector.get("matchExpressions")
    if expressions is None:
        return problems
    if not isinstance(expressions, list):
        return problems + [f"{what}.matchExpressions must be a list, got {_type_name(expressions)}"]
    for index, expr in enumerate(expressions):
        where = f"{what}.matchExpressions[{index}]"
        if not isinstance(expr, dict):
            problems.append(f"{where} must be a mapping with key, operator and values")
            continue
        key = expr.get("key")
        operator = expr.get("operator")
        values = expr.get("values")
        if not isinstance(key, str) or not key:
            problems.append(f"{where}.key is required and must be a non-empty string")
        if operator not in _SELECTOR_OPERATORS:
            problems.append(f"{where}.operator {short_value(operator)} is not one of {', '.join(_SELECTOR_OPERATORS)}")
            continue
        if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            problems.append(f"{where}.values must be a list of strings")
            continue
        if operator in ("In", "NotIn") and not values:
            problems.append(f"{where}: operator {operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            problems.append(f"{where}: operator {operator} takes no values")
    return problems


def label_selector_matches(selector, labels) -> bool:
    """Kubernetes LabelSelector matching; None matches nothing, {} matches everything."""
    if selector is None:
        return False
    problems = _check_selector(selector, "label selector")
    if problems:
        raise PinnedImageSetError(problems)
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if key not in labels or labels[key] != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key = expr["key"]
        operator = expr["operator"]
        values = expr.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _selector_is_empty(selector) -> bool:
    return selector is None or (not selector.get("matchLabels") and not selector.get("matchExpressions"))


def _check_image_name(value) -> str | None:
    """Why ``value`` is not a valid PinnedImageRef.name, or None."""
    if not isinstance(value, str):
        return f"must be a string, got {_type_name(value)}"
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


def _check_api_version_kind(obj, kind: str) -> list:
    problems = []
    if obj.get("apiVersion") != API_VERSION:
        problems.append(f"apiVersion is {short_value(obj.get('apiVersion'))}; it must be {API_VERSION!r}")
    if obj.get("kind") != kind:
        problems.append(f"kind is {short_value(obj.get('kind'))}; it must be {kind!r}")
    return problems


def _metadata(obj) -> tuple:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return None, {}, ["metadata must be a mapping with at least a name"]
    name = metadata.get("name")
    problems = []
    problem = check_dns_subdomain(name, "metadata.name")
    if problem:
        problems.append(problem)
    problems.extend(_check_labels(metadata.get("labels"), "metadata.labels"))
    labels = metadata.get("labels") if isinstance(metadata.get("labels"), dict) else {}
    return (name if isinstance(name, str) and name else None), labels, problems


def _check_set(obj, source) -> tuple:
    """(PinnedImageSet or None, problems) for one object."""
    if not isinstance(obj, dict):
        return None, [_where(source, PINNED_IMAGE_SET_KIND, None) + f": must be a mapping, got {_type_name(obj)}"]
    problems = _check_api_version_kind(obj, PINNED_IMAGE_SET_KIND)
    name, labels, meta_problems = _metadata(obj)
    problems.extend(meta_problems)
    images = []
    pool_selector = None
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        problems.append("spec must be a mapping with pinnedImages")
    else:
        pinned = spec.get("pinnedImages")
        if not isinstance(pinned, list):
            problems.append(f"spec.pinnedImages is required and must be a list, got {_type_name(pinned)}")
        else:
            if not pinned:
                problems.append("spec.pinnedImages must list at least one image")
            if len(pinned) > MAX_PINNED_IMAGES:
                problems.append(f"spec.pinnedImages has {len(pinned)} items; at most {MAX_PINNED_IMAGES} are allowed")
            seen = {}
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
            problems.extend(_check_selector(pool_selector, "spec.machineConfigPoolSelector"))
    if problems:
        prefix = _where(source, PINNED_IMAGE_SET_KIND, name)
        return None, [f"{prefix}: {p}" if prefix else p for p in problems]
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


def _check_pool(obj, source) -> tuple:
    if not isinstance(obj, dict):
        return None, [_where(source, MACHINE_CONFIG_POOL_KIND, None) + f": must be a mapping, got {_type_name(obj)}"]
    problems = _check_api_version_kind(obj, MACHINE_CONFIG_POOL_KIND)
    name, labels, meta_problems = _metadata(obj)
    problems.extend(meta_problems)
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        problems.append(f"spec must be a mapping, got {_type_name(spec)}")
        spec = {}
    mc_selector = spec.get("machineConfigSelector")
    node_selector = spec.get("nodeSelector")
    problems.extend(_check_selector(mc_selector, "spec.machineConfigSelector"))
    problems.extend(_check_selector(node_selector, "spec.nodeSelector"))
    refs = []
    raw_refs = spec.get("pinnedImageSets")
    if raw_refs is not None:
        if not isinstance(raw_refs, list):
            problems.append(f"spec.pinnedImageSets must be a list, got {_type_name(raw_refs)}")
        else:
            if len(raw_refs) > MAX_POOL_SET_REFS:
                problems.append(f"spec.pinnedImageSets has {len(raw_refs)} items; at most {MAX_POOL_SET_REFS} are allowed")
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
    if problems:
        prefix = _where(source, MACHINE_CONFIG_POOL_KIND, name)
        return None, [f"{prefix}: {p}" if prefix else p for p in problems]
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


def validate_set(obj, source=None) -> PinnedImageSet:
    """Validate one PinnedImageSet object; raise PinnedImageSetError listing every problem."""
    result, problems = _check_set(obj, source)
    if problems:
        raise PinnedImageSetError(problems)
    return result


def validate_pool(obj, source=None) -> MachineConfigPool:
    """Validate one MachineConfigPool object; raise PinnedImageSetError listing every problem."""
    result, problems = _check_pool(obj, source)
    if problems:
        raise PinnedImageSetError(problems)
    return result


def default_pool(name: str) -> MachineConfigPool:
    """A pool shaped like OpenShift's built-in ``master`` and ``worker`` pools."""
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


def as_pool(value) -> MachineConfigPool:
    """A MachineConfigPool from an instance, an object dict or a bare pool name."""
    if isinstance(value, MachineConfigPool):
        return value
    if isinstance(value, str):
        return default_pool(value)
    return validate_pool(value)


_END = object()


def _frame(node) -> list:
    """[container, iterator over its values, its count so far (itself and its keys)]."""
    if isinstance(node, dict):
        return [node, iter(node.values()), 1 + len(node)]
    return [node, iter(node), 1]


def _expanded_size(root, limit: int) -> int:
    """How many values ``root`` holds with every shared part counted each time it occurs; stops above ``limit``.

    Walks each distinct container once (sizes of finished ones are remembered), so the cost follows the
    size of the input, not of its expansion. A structure that contains itself counts as ``limit + 1``.
    """
    if not isinstance(root, (dict, list)):
        return 1
    done = {}
    active = {id(root)}
    stack = [_frame(root)]
    while stack:
        frame = stack[-1]
        child = next(frame[1], _END)
        if child is _END:
            stack.pop()
            active.discard(id(frame[0]))
            done[id(frame[0])] = frame[2]
            if not stack:
                break
            stack[-1][2] += frame[2]
        elif not isinstance(child, (dict, list)):
            frame[2] += 1
        elif id(child) in done:
            frame[2] += done[id(child)]
        elif id(child) in active:
            return limit + 1
        else:
            active.add(id(child))
            stack.append(_frame(child))
            continue
        if stack and stack[-1][2] > limit:
            return stack[-1][2]
    return done[id(root)]


def _too_big(value, source) -> str | None:
    """The problem of an input that expands beyond :data:`MAX_EXPANDED_NODES`, else None."""
    if _expanded_size(value, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
        return (
            f"{source}: expands to more than {MAX_EXPANDED_NODES} values once its YAML aliases (*name) are written "
            "out, or refers to itself; write the objects without anchors and aliases"
        )
    return None


def _yaml_documents(path: str) -> tuple:
    """(documents, problems) of a YAML file no bigger than :data:`MAX_SET_FILE_SIZE`."""
    if not HAS_YAML:  # pragma: no cover
        return [], [f"{path}: PyYAML is needed to read YAML files ({YAML_IMPORT_ERROR})"]
    try:
        text = read_config_text(path, "set file", MAX_SET_FILE_SIZE, PinnedImageSetError)
    except PinnedImageSetError as exc:
        return [], exc.problems
    try:
        documents = load_yaml_all(text)
    except YAMLError as exc:
        return [], [f"{path}: not valid YAML: {exc}".replace("\n", " ")]
    except RecursionError:  # the pure-Python loader on deep nesting (libyaml stops at 1000 levels)
        return [], [f"{path}: not valid YAML: nested too deeply"]
    problem = _too_big(documents, path)
    return ([], [problem]) if problem else (documents, [])


def _expand(obj, source, from_file: bool, sets: list, pools: list, problems: list) -> None:
    """Sort one object into sets or pools; files ignore other kinds, direct input does not."""
    if obj is None and from_file:
        return
    if isinstance(obj, PinnedImageSet):
        sets.append(obj)
        return
    if isinstance(obj, MachineConfigPool):
        pools.append(obj)
        return
    if not isinstance(obj, dict):
        problems.append(f"{source}: expected a Kubernetes object (mapping), got {_type_name(obj)}")
        return
    kind = obj.get("kind")
    if kind == "List" or (kind is None and isinstance(obj.get("items"), list) and "spec" not in obj):
        items = obj.get("items")
        if not isinstance(items, list):
            problems.append(f"{source}: List has no items list")
            return
        for index, item in enumerate(items):
            _expand(item, f"{source} items[{index}]", from_file, sets, pools, problems)
        return
    if kind == PINNED_IMAGE_SET_KIND:
        result, found = _check_set(obj, source)
        problems.extend(found)
        if result is not None:
            sets.append(result)
    elif kind == MACHINE_CONFIG_POOL_KIND:
        result, found = _check_pool(obj, source)
        problems.extend(found)
        if result is not None:
            pools.append(result)
    elif not from_file:
        problems.append(
            f"{source}: kind is {short_value(kind)}; expected {PINNED_IMAGE_SET_KIND} or {MACHINE_CONFIG_POOL_KIND}"
        )


def _load_file(path: str, sets: list, pools: list, problems: list) -> None:
    documents, found = _yaml_documents(path)
    problems.extend(found)
    many = len(documents) > 1
    for index, document in enumerate(documents):
        source = f"{path} (document {index + 1})" if many else path
        _expand(document, source, True, sets, pools, problems)


def _pool_fields(pool) -> tuple:
    return (pool.labels, pool.machine_config_selector, pool.node_selector, pool.pinned_image_sets)


def load_sets(sources) -> tuple:
    """Load and validate sets and pools from dicts, instances, YAML files and directories.

    Returns ``(sets, pools)``; raises PinnedImageSetError naming every problem found in any source.
    """
    if sources is None:
        sources = []
    elif isinstance(sources, (str, bytes, os.PathLike, dict, PinnedImageSet, MachineConfigPool)):
        sources = [sources]
    sets, pools, problems = [], [], []
    for position, item in enumerate(sources):
        if isinstance(item, (str, bytes, os.PathLike)):
            path = os.fsdecode(item)
            if os.path.isdir(path):
                try:
                    names = sorted(n for n in os.listdir(path) if n.endswith(YAML_SUFFIXES))
                except OSError as exc:
                    problems.append(f"{path}: cannot list directory: {exc.strerror or exc}")
                    continue
                for name in names:
                    full = os.path.join(path, name)
                    if os.path.isfile(full):
                        _load_file(full, sets, pools, problems)
            elif os.path.exists(path):
                _load_file(path, sets, pools, problems)
            else:
                problems.append(f"{path}: no such file or directory")
        else:
            problem = _too_big(item, f"sets[{position}]")
            if problem:
                problems.append(problem)
            else:
                _expand(item, f"sets[{position}]", False, sets, pools, problems)

    unique_sets = []
    by_name = {}
    for item in sets:
        first = by_name.get(item.name)
        if first is None:
            by_name[item.name] = item
            unique_sets.append(item)
        elif (first.labels, first.images, first.pool_selector) != (item.labels, item.images, item.pool_selector):
            problems.append(
                f"{item.source or 'input'}: {PINNED_IMAGE_SET_KIND} {item.name!r} is also defined, differently, "
                f"in {first.source or 'input'}; set names are cluster-wide and must be unique"
            )
    unique_pools = []
    pools_by_name = {}
    for pool in pools:
        first = pools_by_name.get(pool.name)
        if first is None:
            pools_by_name[pool.name] = pool
            unique_pools.append(pool)
        elif _pool_fields(first) != _pool_fields(pool):
            problems.append(
                f"{pool.source or 'input'}: {MACHINE_CONFIG_POOL_KIND} {pool.name!r} is also defined, differently, "
                f"in {first.source or 'input'}"
            )
    if problems:
        raise PinnedImageSetError(problems)
    return unique_sets, unique_pools


def set_matches_pool(pool, image_set: PinnedImageSet) -> bool:
    """True when the pool's non-empty machineConfigSelector selects the set's labels, or the set selects the pool.

    The MCO's controller skips a pool whose selector is missing or empty and overwrites spec.pinnedImageSets
    with what the selector matches, so the pool's own list decides nothing.
    """
    pool = as_pool(pool)
    selector = pool.machine_config_selector
    if not _selector_is_empty(selector) and label_selector_matches(selector, image_set.labels):
        return True
    if image_set.pool_selector is not None and label_selector_matches(image_set.pool_selector, pool.labels):
        return True
    return False


def sets_for_pool(pool, sets) -> list:
    """The sets that belong to ``pool``, in the order of ``sets``."""
    pool = as_pool(pool)
    result, seen = [], set()
    for image_set in sets:
        if image_set.name not in seen and set_matches_pool(pool, image_set):
            seen.add(image_set.name)
            result.append(image_set)
    return result


def missing_set_refs(pool, sets) -> list:
    """Names the pool references in spec.pinnedImageSets that are not among ``sets``."""
    pool = as_pool(pool)
    known = {s.name for s in sets}
    return [name for name in pool.pinned_image_sets if name not in known]


def pools_for_node(node_labels, pools) -> list:
    """The pools a node belongs to, with the MCO's master > custom > worker rule."""
    node_labels = node_labels or {}
    if node_labels.get(OS_LABEL) == "windows":
        return []
    master = worker = None
    custom = []
    for pool in (as_pool(p) for p in pools):
        selector = pool.node_selector
        if _selector_is_empty(selector) or not label_selector_matches(selector, node_labels):
            continue
        if pool.name == MASTER_POOL:
            master = pool
        elif pool.name == WORKER_POOL:
            worker = pool
        else:
            custom.append(pool)
    if len(custom) > 1:
        raise PinnedImageSetError(
            f"the node belongs to {len(custom)} custom pools ({', '.join(p.name for p in custom)}); "
            "the machine-config-operator allows at most one"
        )
    if custom:
        return [master or custom[0]] + ([worker] if worker else [])
    if master:
        return [master]
    return [worker] if worker else []


def go_trim_space(text: str) -> str:
    """``text`` trimmed as Go's ``strings.TrimSpace`` does (see GO_SPACE)."""
    return text.strip(GO_SPACE)


def unique_sorted_images(names) -> list:
    """Blank names dropped, de-duplicated, sorted: the list the MCO writes (``uniqueSortedImageNames``)."""
    unique = set()
    for name in names:
        if isinstance(name, str) and go_trim_space(name):
            unique.add(name)
    # Code-point order is UTF-8 byte order, which Go's sort.Strings uses.
    return sorted(unique)


def images_for_sets(sets) -> list:
    """The union of the sets' images, blank names dropped, de-duplicated, sorted."""
    return unique_sorted_images(name for image_set in sets for name in image_set.images)


def images_for_pool(pool, sets) -> tuple:
    """(images, set_names) of one pool."""
    chosen = sets_for_pool(pool, sets)
    return images_for_sets(chosen), [s.name for s in chosen]


def images_for_node(node_labels, pools, sets) -> tuple:
    """(images, set_names): the union over the sets of every pool the node belongs to."""
    chosen, seen = [], set()
    for pool in pools_for_node(node_labels, pools):
        for image_set in sets_for_pool(pool, sets):
            if image_set.name not in seen:
                seen.add(image_set.name)
                chosen.append(image_set)
    return images_for_sets(chosen), [s.name for s in chosen]


# The options of the pinning modules that select the images (wanted_images), and their rules.
SELECTION_ARGUMENT_SPEC = dict(
    images=dict(type="list", elements="str"),
    sets=dict(type="list", elements="raw"),
    pools=dict(type="list", elements="raw", aliases=["pool"]),
    node_labels=dict(type="dict"),
)
SELECTION_MUTUALLY_EXCLUSIVE = [("images", "sets")]
SELECTION_REQUIRED_BY = {"pools": "sets", "node_labels": "sets"}


def _given_pools(values, known) -> list:
    """Pools from names or objects; a name defined in the set files means that definition."""
    by_name = {pool.name: pool for pool in known}
    return [by_name[value] if isinstance(value, str) and value in by_name else as_pool(value) for value in values]


def wanted_images(images, sets, pools, node_labels, validate) -> tuple:
    """(images, set_names) selected by a pinning module's options; raises PinnedImageSetError.

    Without ``sets``: ``validate(images or [])`` and no set names. With ``node_labels``: the sets of the node's
    pools among the pools found in the set files plus ``pools`` (OpenShift's ``master`` and ``worker`` when
    there are none). With ``pools`` only: the sets of those pools. Otherwise every set.
    """
    if sets is None:
        return validate(images or []), []
    loaded, file_pools = load_sets(sets)
    given = _given_pools(pools or [], file_pools)
    if node_labels is not None:
        names = {pool.name for pool in file_pools}
        candidates = file_pools + [pool for pool in given if pool.name not in names]
        if not candidates:
            candidates = [default_pool("master"), default_pool("worker")]
        return images_for_node(node_labels, candidates, loaded)
    if pools is not None:
        chosen, seen = [], set()
        for pool in given:
            for image_set in sets_for_pool(pool, loaded):
                if image_set.name not in seen:
                    seen.add(image_set.name)
                    chosen.append(image_set)
        return images_for_sets(chosen), [s.name for s in chosen]
    return images_for_sets(loaded), [s.name for s in loaded]
