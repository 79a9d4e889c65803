# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Kubernetes names, labels and label selectors: validation and matching, as the API server and the MCO do them."""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import short_value
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = [
    "MAX_NAME_LENGTH",
    "LabelSelectorError",
    "check_dns_subdomain",
    "check_labels",
    "check_selector",
    "label_selector_matches",
    "selector_is_empty",
    "type_name",
]

MAX_NAME_LENGTH = 253


class LabelSelectorError(CollectionError):
    """An invalid label selector; ``problems`` lists every problem found."""


MAX_NAME_LENGTH = 253


_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def type_name(value: Any) -> str:
    """The YAML name of ``value``'s type, for messages."""
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


def check_dns_subdomain(value: Any, what: str) -> Optional[str]:
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


def check_labels(labels: Any, what: str) -> List[str]:
    """Kubernetes label syntax: [prefix/]name = value."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [f"{what} must be a mapping of strings, got {type_name(labels)}"]
    problems = []
    for key, value in labels.items():
        if not isinstance(key, str):
            problems.append(f"{what} key {short_value(key)} must be a string")
            continue
        prefix, slash, name = key.rpartition("/")
        if (
            (slash and check_dns_subdomain(prefix, "prefix"))
            or not name
            or len(name) > 63
            or not _LABEL_NAME_RE.fullmatch(name)
        ):
            problems.append(f"{what} key {short_value(key)} is not a valid label key")
        if not isinstance(value, str):
            problems.append(f"{what}[{key!r}] must be a string, got {type_name(value)} (quote it in YAML)")
        elif value and (len(value) > 63 or not _LABEL_NAME_RE.fullmatch(value)):
            problems.append(f"{what}[{key!r}] value {short_value(value)} is not a valid label value")
    return problems


def check_selector(selector: Any, what: str) -> List[str]:
    """Problems of a metav1.LabelSelector, as LabelSelectorAsSelector reports them."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [f"{what} must be a mapping (matchLabels, matchExpressions), got {type_name(selector)}"]
    problems = []
    unknown = sorted(str(k) for k in selector if k not in ("matchLabels", "matchExpressions"))
    if unknown:
        problems.append(
            f"{what} has unknown field(s) {', '.join(unknown)}; allowed are matchLabels and matchExpressions"
        )
    problems.extend(check_labels(selector.get("matchLabels"), what + ".matchLabels"))
    expressions = selector.get("matchExpressions")
    if expressions is None:
        return problems
    if not isinstance(expressions, list):
        return problems + [f"{what}.matchExpressions must be a list, got {type_name(expressions)}"]
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


def label_selector_matches(selector: Optional[Mapping[str, Any]], labels: Optional[Mapping[str, str]]) -> bool:
    """Kubernetes LabelSelector matching: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) are
    ANDed; None matches nothing, {} matches everything. LabelSelectorError when the selector is invalid."""
    if selector is None:
        return False
    problems = check_selector(selector, "label selector")
    if problems:
        raise LabelSelectorError(problems)
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


def selector_is_empty(selector: Optional[Mapping[str, Any]]) -> bool:
    """Whether the selector has no matchLabels and no matchExpressions (or is None)."""
    return selector is None or (not selector.get("matchLabels") and not selector.get("matchExpressions"))
