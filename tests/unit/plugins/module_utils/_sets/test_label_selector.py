# SPDX-License-Identifier: GPL-3.0-or-later
"""_sets/label_selector: RFC 1123 names and label selectors as the API evaluates them."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._sets.label_selector import (
    LabelSelectorError,
    check_dns_subdomain,
    label_selector_matches,
)
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    PinnedImageSetError,
    default_pool,
    validate_set,
)
from fixtures.openshift_objects import digest, make_set


@pytest.mark.parametrize("value", ["a", "worker", "99-worker-pinned-images", "a.b-c.d", "0", "x" * 253])
def test_rfc_1123_subdomains(value):
    assert check_dns_subdomain(value, "name") is None


@pytest.mark.parametrize(
    "value, why",
    [
        ("name\n", "not a valid RFC 1123 subdomain"),
        ("\nname", "not a valid RFC 1123 subdomain"),
        ("Name", "not a valid RFC 1123 subdomain"),
        ("-name", "not a valid RFC 1123 subdomain"),
        ("name.", "not a valid RFC 1123 subdomain"),
        ("a..b", "not a valid RFC 1123 subdomain"),
        ("x" * 254, "254 characters long"),
        ("", "required"),
        (None, "required"),
    ],
)
def test_not_rfc_1123_subdomains(value, why):
    problem = check_dns_subdomain(value, "pool name")
    assert problem.startswith("pool name") and why in problem
    with pytest.raises(PinnedImageSetError, match=why):
        default_pool(value)


def test_longest_accepted_name():
    # distribution/reference caps the path (the host not counted) at 255 characters, below the CRD's 447.
    name = "quay.io/org/" + "a" * (255 - len("org/")) + "@" + digest(1)
    assert validate_set(make_set(images=(name,))).images == (name,)
    with pytest.raises(PinnedImageSetError, match="repository path of 256 characters; at most 255"):
        validate_set(make_set(images=("quay.io/org/a" + name[len("quay.io/org/") :],)))


@pytest.mark.parametrize(
    "selector, labels, expected",
    [
        (None, {"a": "1"}, False),
        ({}, {}, True),
        ({"matchLabels": {}}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchLabels": {"a": ""}}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "x"}, False),
        ({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1"}, False),
    ],
)
def test_label_selector_matches(selector, labels, expected):
    assert label_selector_matches(selector, labels) is expected


def test_bad_selector_raises():
    with pytest.raises(LabelSelectorError, match="takes no values"):
        label_selector_matches({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, {})
