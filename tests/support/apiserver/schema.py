# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The schema and apply logic of the fake API server (see ``support.apiserver``): kinds, CRD schemas, pruning,
managed fields, merges, patches and selectors; no HTTP here."""

from __future__ import annotations

import copy
import datetime
import json
import re
import time
from dataclasses import dataclass, field

import yaml

from fixtures.reference import OPENSHIFT_CRDS_PARTS, REFERENCE_DIR

GROUP = "machineconfiguration.openshift.io"
VERSION = "v1"
MCO_API_VERSION = f"{GROUP}/{VERSION}"
DEFAULT_TOKEN = "fake-token-6c1f0e2a9b7d4c3e"


_METADATA_SCHEMA = {
    "type": "object",
    "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "ownerReferences": {
            "type": "array",
            "items": {"type": "object"},
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
        },
    },
}
# Metadata fields clients may set and field managers own; the others are identity or server-managed.
_MANAGED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")

_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# The CEL rules of PinnedImageSet spec.pinnedImages[].name, written out by hand (CEL matches() is an RE2 search).
_PIS_DIGEST_RE = re.compile(r"^sha256:[a-f0-9]{64}$")
_PIS_NAME_RE = re.compile(r"^([a-zA-Z0-9-]+\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?/([a-zA-Z0-9-_]{0,61}/)?[a-zA-Z0-9-_.]*?$")


# The CEL rules of MachineConfiguration's node disruption policy actions, written out by hand (messages as in the CRD).
_SERVICE_TYPE_RE = re.compile(r"\.(service|socket|device|mount|automount|swap|target|path|timer|snapshot|slice|scope)$")
_SERVICE_NAME_RE = re.compile(r"^[a-zA-Z0-9:._\\-]+\..")
_SERVICE_TYPE_MESSAGE = (
    "Invalid ${SERVICETYPE} in service name. Expected format is ${NAME}${SERVICETYPE}, where "
    '${SERVICETYPE} must be one of ".service", ".socket", ".device", ".mount", ".automount", '
    '".swap", ".target", ".path", ".timer",".snapshot", ".slice" or ".scope".'
)
_SERVICE_NAME_MESSAGE = (
    "Invalid ${NAME} in service name. Expected format is ${NAME}${SERVICETYPE}, where {NAME} "
    'must be atleast 1 character long and can only consist of alphabets, digits, ":", "-", "_", '
    '".", and "\\"'
)


def node_disruption_causes(spec):
    """(field, message) of the CEL rules on ``spec.nodeDisruptionPolicy``'s action lists (files, units, sshkey)."""
    policy = spec.get("nodeDisruptionPolicy") if isinstance(spec, dict) else None
    if not isinstance(policy, dict):
        return []
    lists = []
    for key in ("files", "units"):
        for index, item in enumerate(policy.get(key) or []):
            if isinstance(item, dict):
                lists.append((f"spec.nodeDisruptionPolicy.{key}[{index}].actions", item.get("actions")))
    if isinstance(policy.get("sshkey"), dict):
        lists.append(("spec.nodeDisruptionPolicy.sshkey.actions", policy["sshkey"].get("actions")))
    causes = []
    for where, actions in lists:
        if not isinstance(actions, list):
            continue
        types = [a.get("type") for a in actions if isinstance(a, dict)]
        for alone in ("Reboot", "None"):
            if alone in types and len(actions) != 1:
                causes.append(
                    (
                        where,
                        f'Invalid value: "array": {alone} action can only be specified standalone, '
                        "as it will override any other actions",
                    )
                )
        for index, action in enumerate(actions):
            if not isinstance(action, dict):
                continue
            for word, field_name in (("Reload", "reload"), ("Restart", "restart")):
                if (action.get("type") == word) != (field_name in action):
                    causes.append(
                        (
                            f"{where}[{index}]",
                            f'Invalid value: "object": {field_name} is required when '
                            f"type is {word}, and forbidden otherwise",
                        )
                    )
                service = (
                    (action.get(field_name) or {}).get("serviceName")
                    if isinstance(action.get(field_name), dict)
                    else None
                )
                if isinstance(service, str):
                    at = f"{where}[{index}].{field_name}.serviceName"
                    if not _SERVICE_TYPE_RE.search(service):
                        causes.append((at, f'Invalid value: "string": {_SERVICE_TYPE_MESSAGE}'))
                    if not _SERVICE_NAME_RE.search(service):
                        causes.append((at, f'Invalid value: "string": {_SERVICE_NAME_MESSAGE}'))
    return causes


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Kind:
    kind: str
    plural: str
    group: str
    version: str
    schema: dict | None = None
    status_subresource: bool = False
    short_names: list = field(default_factory=list)

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self):
        """``plural.group`` as RBAC and error messages name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def is_crd(self):
        return bool(self.group)


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict
    content_type: str | None
    body: object
    user: str | None
    status: int = 0
    # When the request arrived (time.time()), to order it against the times a playbook reports.
    received: float = field(default_factory=time.time)
    # pods/exec only: the Upgrade header (websocket, SPDY/3.1), the subprotocols offered and the one chosen, argv.
    upgrade: str | None = None
    subprotocols: list = field(default_factory=list)
    subprotocol: str | None = None
    command: list = field(default_factory=list)


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or []

    def status(self):
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


_KIND_CACHE = {}
_KINDS_WITHOUT_SCHEMA = (
    Kind("MachineConfigNode", "machineconfignodes", GROUP, VERSION, status_subresource=True),
    Kind("MachineConfigPool", "machineconfigpools", GROUP, VERSION, status_subresource=True, short_names=["mcp"]),
    Kind("MachineConfig", "machineconfigs", GROUP, VERSION, short_names=["mc"]),
    Kind("PinnedImageSet", "pinnedimagesets", GROUP, VERSION),
    Kind("MachineConfiguration", "machineconfigurations", "operator.openshift.io", "v1", status_subresource=True),
)


def load_kinds():
    """The kinds the fake serves, with the CRD schemas (loaded once per process)."""
    if not _KIND_CACHE:
        directory = REFERENCE_DIR.joinpath(*OPENSHIFT_CRDS_PARTS)
        if not directory.is_dir():
            # Without the upstream CRDs the same kinds are served unvalidated; schema tests skip instead.
            for kind in _KINDS_WITHOUT_SCHEMA:
                _KIND_CACHE[kind.kind] = kind
        for path in sorted(directory.glob("*.crd.yaml")):
            crd = yaml.safe_load(path.read_text())
            spec = crd["spec"]
            for version in spec["versions"]:
                if not version.get("served"):
                    continue
                names = spec["names"]
                _KIND_CACHE[names["kind"]] = Kind(
                    kind=names["kind"],
                    plural=names["plural"],
                    group=spec["group"],
                    version=version["name"],
                    schema=version["schema"]["openAPIV3Schema"],
                    status_subresource="status" in (version.get("subresources") or {}),
                    short_names=list(names.get("shortNames") or []),
                )
        _KIND_CACHE["Node"] = Kind(kind="Node", plural="nodes", group="", version="v1", status_subresource=True)
    return {name: copy.copy(kind) for name, kind in _KIND_CACHE.items()}


# ---------------------------------------------------------------------- schema helpers


def _json_schema(schema):
    """OpenAPI v3 (structural) schema -> JSON Schema: ``nullable`` becomes a ``null`` type."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key.startswith("x-kubernetes-") or key == "nullable":
                continue
            if key in ("properties",):
                out[key] = {k: _json_schema(v) for k, v in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = _json_schema(value)
            elif key in ("allOf", "anyOf", "oneOf"):
                out[key] = [_json_schema(v) for v in value]
            elif key == "not":
                out[key] = _json_schema(value)
            else:
                out[key] = value
        if schema.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
        return out
    return schema


def _child_schema(schema, key, root=False):
    if root and key == "metadata":
        return _METADATA_SCHEMA
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    if properties and key in properties:
        return properties[key]
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        return additional
    return None


def _preserves_unknown(schema):
    return schema is None or schema.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in schema


def _prune(value, schema, path, unknown):
    """Drop fields the structural schema does not know (kube-apiserver pruning); collect their paths."""
    if isinstance(value, dict):
        if schema is not None and not _preserves_unknown(schema) and "properties" in schema:
            for key in list(value):
                if key not in schema["properties"]:
                    unknown.append(f"{path}.{key}" if path else key)
                    del value[key]
        for key, child in value.items():
            if path == "" and key in ("metadata", "apiVersion", "kind"):
                continue
            _prune(child, _child_schema(schema, key), f"{path}.{key}" if path else key, unknown)
    elif isinstance(value, list) and isinstance(schema, dict):
        for index, item in enumerate(value):
            _prune(item, schema.get("items"), f"{path}[{index}]", unknown)


def _list_type(schema):
    if not isinstance(schema, dict):
        return "atomic", []
    return schema.get("x-kubernetes-list-type", "atomic"), list(schema.get("x-kubernetes-list-map-keys") or [])


def _item_key(item, keys):
    return json.dumps({k: item.get(k) for k in keys}, sort_keys=True, separators=(",", ":"))


def _leaves(value, schema, prefix=(), root=False):
    """Leaf field paths -> values. Path elements: ("f", name), ("k", key-json) for list-map items, ("v", json)."""
    out = {}
    if isinstance(value, dict):
        if not value and prefix:
            out[prefix] = {}
        for key, child in value.items():
            if root:
                if key in ("apiVersion", "kind", "status"):
                    continue
                if key == "metadata":
                    meta = {k: v for k, v in (child or {}).items() if k in _MANAGED_METADATA}
                    if meta:
                        out.update(_leaves(meta, _METADATA_SCHEMA, prefix + (("f", "metadata"),)))
                    continue
            out.update(_leaves(child, _child_schema(schema, key), prefix + (("f", key),)))
    elif isinstance(value, list):
        list_type, keys = _list_type(schema)
        items_schema = schema.get("items") if isinstance(schema, dict) else None
        if list_type == "map" and keys and all(isinstance(i, dict) for i in value):
            for item in value:
                out.update(_leaves(item, items_schema, prefix + (("k", _item_key(item, keys)),)))
        elif list_type == "set":
            for item in value:
                out[prefix + (("v", json.dumps(item, sort_keys=True)),)] = item
        else:
            out[prefix] = value
    else:
        out[prefix] = value
    return out


_MISSING = object()


def _get_at(obj, path):
    current = obj
    for kind, name in path:
        if kind == "f":
            if not isinstance(current, dict) or name not in current:
                return _MISSING
            current = current[name]
        elif kind == "k":
            if not isinstance(current, list):
                return _MISSING
            wanted = json.loads(name)
            for item in current:
                if isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items()):
                    current = item
                    break
            else:
                return _MISSING
        else:  # "v": set member
            item = json.loads(name)
            if not isinstance(current, list) or item not in current:
                return _MISSING
            current = item
    return current


def _remove_at(obj, path):
    """Remove a leaf; drop list-map items and maps it leaves empty (but never the object root or metadata)."""
    if not path:
        return
    parent = _get_at(obj, path[:-1])
    kind, name = path[-1]
    if parent is _MISSING:
        return
    if kind == "f" and isinstance(parent, dict):
        parent.pop(name, None)
    elif kind == "k" and isinstance(parent, list):
        wanted = json.loads(name)
        parent[:] = [i for i in parent if not (isinstance(i, dict) and all(i.get(k) == v for k, v in wanted.items()))]
    elif kind == "v" and isinstance(parent, list):
        item = json.loads(name)
        parent[:] = [i for i in parent if i != item]
    if len(path) < 2 or parent not in ({}, []) or path[:-1] == (("f", "metadata"),):
        return
    if path[-2][0] == "k":
        # The list-map item lost its last field (its key included): drop the item itself.
        grand = _get_at(obj, path[:-2])
        if isinstance(grand, list):
            grand[:] = [i for i in grand if i is not parent]
            if not grand and len(path) > 2:
                _remove_at(obj, path[:-2])
    else:
        _remove_at(obj, path[:-1])


def _merge(live, applied, schema):
    if isinstance(live, dict) and isinstance(applied, dict):
        result = copy.deepcopy(live)
        for key, value in applied.items():
            if key in result:
                result[key] = _merge(result[key], value, _child_schema(schema, key))
            else:
                result[key] = copy.deepcopy(value)
        return result
    if isinstance(live, list) and isinstance(applied, list):
        list_type, keys = _list_type(schema)
        if list_type == "map" and keys:
            result = copy.deepcopy(live)
            items_schema = schema.get("items")
            for item in applied:
                for index, existing in enumerate(result):
                    if isinstance(existing, dict) and _item_key(existing, keys) == _item_key(item, keys):
                        result[index] = _merge(existing, item, items_schema)
                        break
                else:
                    result.append(copy.deepcopy(item))
            return result
        if list_type == "set":
            result = copy.deepcopy(live)
            result.extend(copy.deepcopy(i) for i in applied if i not in result)
            return result
    return copy.deepcopy(applied)


def _merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


def _reason_of(message):
    """The ``details.causes[].reason`` kube-apiserver gives a field error with this message."""
    for prefix, reason in (
        ("Required value", "FieldValueRequired"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too many", "FieldValueTooMany"),
        ("Too long", "FieldValueTooLong"),
        ("Unsupported value", "FieldValueNotSupported"),
    ):
        if message.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def _schema_cause(error, path):
    """(field, message, reason) of a jsonschema error, worded as the API server's OpenAPI validation words it.

    Never the whole instance: a list of 501 items would otherwise be written out in the message.
    """
    where = path or "<root>"
    instance = error.instance
    shown = json.dumps(instance)[:80] if not isinstance(instance, (dict, list)) else _type_word(instance)
    if error.validator == "required":
        missing = re.search(r"'([^']+)' is a required property", error.message)
        return (f"{path}.{missing.group(1)}" if path else missing.group(1)), "Required value", "FieldValueRequired"
    if error.validator == "maxItems":
        return path, f"Too many: {len(instance)}: must have at most {error.validator_value} items", "FieldValueTooMany"
    if error.validator == "maxLength":
        return path, f"Too long: may not be more than {error.validator_value} bytes", "FieldValueTooLong"
    if error.validator == "minItems":
        return (
            path,
            f"Invalid value: {len(instance)}: {where} in body should have at least {error.validator_value} items",
            "FieldValueInvalid",
        )
    if error.validator == "minLength":
        return (
            path,
            f"Invalid value: {shown}: {where} in body should be at least {error.validator_value} chars long",
            "FieldValueInvalid",
        )
    if error.validator == "type":
        word = _type_word(instance)
        message = f'Invalid value: "{word}": {where} in body must be of type {error.validator_value}: "{word}"'
        return path, message, "FieldValueTypeInvalid"
    if error.validator == "enum":
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        return path, f"Unsupported value: {shown}: supported values: {allowed}", "FieldValueNotSupported"
    if error.validator == "pattern":
        return (
            path,
            f"Invalid value: {shown}: {where} in body should match '{error.validator_value}'",
            "FieldValueInvalid",
        )
    return path, f"Invalid value: {shown}: {error.message[:200]}", "FieldValueInvalid"


def _type_word(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else "string"


def _pointer(path):
    """RFC 6901 JSON pointer -> list of tokens."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError(f"JSON pointer {path!r} does not start with /")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _json_patch(target, operations):
    """RFC 6902 on a copy of ``target``; ValueError naming the failing operation."""
    doc = copy.deepcopy(target)
    if not isinstance(operations, list):
        raise ValueError("a JSON patch is a list of operations")

    def parent_of(tokens):
        node = doc
        for token in tokens[:-1]:
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def get(tokens):
        node = doc
        for token in tokens:
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def add(tokens, value):
        nonlocal doc
        if not tokens:
            doc = value
            return
        parent, last = parent_of(tokens), tokens[-1]
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), value)
        else:
            parent[last] = value

    def remove(tokens):
        parent, last = parent_of(tokens), tokens[-1]
        if isinstance(parent, list):
            return parent.pop(int(last))
        return parent.pop(last)

    for index, op in enumerate(operations):
        try:
            kind = op["op"]
            tokens = _pointer(op["path"])
            if kind == "add":
                add(tokens, copy.deepcopy(op["value"]))
            elif kind == "remove":
                remove(tokens)
            elif kind == "replace":
                remove(tokens)
                add(tokens, copy.deepcopy(op["value"]))
            elif kind == "move":
                add(tokens, remove(_pointer(op["from"])))
            elif kind == "copy":
                add(tokens, copy.deepcopy(get(_pointer(op["from"]))))
            elif kind == "test":
                if get(tokens) != op["value"]:
                    raise ValueError(f"testing value {op['path']} failed")
            else:
                raise ValueError(f"Unexpected kind: {kind}")
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ValueError(f"operation {index} ({json.dumps(op)[:200]}): {exc}") from None
    return doc


def _parse_field_selector(text):
    """Predicates on an object for ``metadata.name`` and ``metadata.namespace`` (=, ==, !=), as every kind has;
    other fields raise ApiError 400 as kube-apiserver does."""
    predicates = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        match = re.fullmatch(r"([^=!]+?)\s*(!=|==|=)\s*(.*)", term)
        if not match:
            raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{term}'")
        label, operator, value = match.groups()
        if label not in ("metadata.name", "metadata.namespace"):
            raise ApiError(400, "BadRequest", f"field label not supported: {label}")

        def predicate(obj, label=label, operator=operator, value=value):
            actual = (obj.get("metadata") or {}).get(label.split(".", 1)[1]) or ""
            return (actual != value) if operator == "!=" else (actual == value)

        predicates.append(predicate)
    return predicates


def _format_path(path):
    text = ""
    for kind, name in path:
        if kind == "f":
            text += "." + name
        elif kind == "k":
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(name).items()) + "]"
        else:
            text += f"[{name}]"
    return text


def _fields_v1(paths):
    tree = {}
    for path in sorted(paths, key=json.dumps):
        node = tree
        for kind, name in path:
            node = node.setdefault(f"{kind}:{name}", {})
            if kind == "k":
                node.setdefault(".", {})
    return tree


def _parse_selector(text):
    """labelSelector query -> list of predicates over a labels dict."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    predicates = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        match = re.match(r"^([^\s!=]+)\s+(in|notin)\s+\((.*)\)$", part)
        if match:
            key, op, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",")}
            if op == "in":
                predicates.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                predicates.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
            continue
        match = re.match(r"^([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)$", part)
        if match:
            key, op, value = match.groups()
            if op == "!=":
                predicates.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                predicates.append(lambda labels, k=key, v=value: k in labels and labels[k] == v)
            continue
        if part.startswith("!") and re.match(r"^![^\s!=,]+$", part):
            predicates.append(lambda labels, k=part[1:]: k not in labels)
            continue
        if re.match(r"^[^\s!=,()]+$", part):
            predicates.append(lambda labels, k=part: k in labels)
            continue
        raise ApiError(
            400, "BadRequest", f"unable to parse requirement: found '{part}', expected: in, notin, =, ==, !="
        )
    return predicates


# ---------------------------------------------------------------------- the server state
