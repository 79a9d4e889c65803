# SPDX-License-Identifier: GPL-3.0-or-later
"""Sizes, the layer-deduplicating estimate and the disk check of _disk_guard."""

from __future__ import annotations

import os

import pytest

from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import (
    DiskGuardError,
    check,
    estimate,
    filesystem_stats,
    human_size,
    parse_size,
    unitless_size_warning,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import ManifestInfo

GI = 2**30
MI = 2**20

SIZES = [
    ("16Gi", None, 16 * GI),
    ("500Mi", None, 500 * MI),
    ("1G", None, 10**9),
    ("1.5Gi", None, 3 * GI // 2),
    ("0.1Ki", None, 102),
    ("1073741824", None, GI),
    ("0", None, 0),
    (" 16Gi ", None, 16 * GI),
    ("16 Gi", None, 16 * GI),
    ("16GiB", None, 16 * GI),
    ("2GB", None, 2 * 10**9),
    ("1k", None, 1000),
    ("1K", None, 1000),
    ("1Ki", None, 1024),
    ("3Ti", None, 3 * 2**40),
    ("1Ei", None, 2**60),
    ("1P", None, 10**15),
    (12345, None, 12345),
    (0, None, 0),
    ("10%", 1000, 100),
    ("12.5%", 1000, 125),
    ("0%", 1000, 0),
    ("100%", 1000, 1000),
    ("10 %", 999, 99),
    ("10%", 0, 0),
]


@pytest.mark.parametrize("value, total, expected", SIZES)
def test_parse_size(value, total, expected):
    assert parse_size(value, total) == expected


BAD_SIZES = [
    ("", "not understood"),
    ("   ", "not understood"),
    ("Gi", "not understood"),
    ("16Xi", "not understood"),
    ("16gi", "not understood"),
    ("-1Gi", "not understood"),
    ("1e9", "not understood"),
    ("1,5Gi", "not understood"),
    (".5Gi", "not understood"),
    ("5.Gi", "not understood"),
    ("nan", "not understood"),
    ("inf", "not understood"),
    ("16Gi\n16Gi", "not understood"),
    ("1" * 10000, "not understood"),
    ("1" * 10000 + "%", "not understood"),
    ("101%", "more than 100%"),
    ("10%", "filesystem size is needed"),
    (-5, "is negative"),
    (True, "not a string or integer"),
    (1.5, "not a string or integer"),
    (None, "not a string or integer"),
    (["1Gi"], "not a string or integer"),
]


@pytest.mark.parametrize("value, message", BAD_SIZES)
def test_parse_size_errors(value, message):
    with pytest.raises(DiskGuardError) as info:
        parse_size(value)
    text = str(info.value)
    assert message in text
    assert len(text) < 300
    if "not understood" in message:
        # Names the value and the allowed forms.
        assert "allowed are" in text and "16Gi" in text and "10%" in text


@pytest.mark.parametrize(
    "size, expected",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (3 * GI // 2, "1.5 GiB"),
        (16 * GI, "16.0 GiB"),
        (5 * 2**40, "5.0 TiB"),
        (2**60, "1024.0 PiB"),
    ],
)
def test_human_size(size, expected):
    assert human_size(size) == expected


def test_filesystem_stats(tmp_path):
    total, free = filesystem_stats(str(tmp_path))
    stats = os.statvfs(str(tmp_path))
    assert total == stats.f_blocks * stats.f_frsize
    assert 0 <= free <= total
    with pytest.raises(FileNotFoundError) as info:
        filesystem_stats(str(tmp_path / "missing"))
    assert "missing" in str(info.value)


def info(*layers, digest="sha256:" + "f" * 64):
    return ManifestInfo(digest, "application/vnd.oci.image.manifest.v1+json", digest, tuple(layers), 100)


A, B, C, D = ("sha256:" + ch * 64 for ch in "abcd")

ESTIMATES = [
    # (manifests, factor, compressed, layers, per-image (compressed, new))
    ({}, 2, 0, 0, []),
    ({"x": info((A, 100))}, 2, 100, 1, [(100, 100)]),
    ({"x": info((A, 100), (B, 50))}, 2, 150, 2, [(150, 150)]),
    # Shared layers count once across the set.
    ({"x": info((A, 100), (B, 50)), "y": info((A, 100), (C, 10))}, 2, 160, 3, [(150, 150), (110, 10)]),
    # A layer repeated inside one manifest counts once.
    ({"x": info((A, 100), (A, 100))}, 2, 100, 1, [(100, 100)]),
    ({"x": info()}, 2, 0, 0, [(0, 0)]),
    ([("x", info((A, 7))), ("y", info((A, 7)))], 1, 7, 1, [(7, 7), (7, 0)]),
    ({"x": info((A, 3))}, 2.5, 3, 1, [(3, 3)]),
]


@pytest.mark.parametrize("manifests, factor, compressed, layers, per_image", ESTIMATES)
def test_estimate(manifests, factor, compressed, layers, per_image):
    result = estimate(manifests, factor)
    assert result["compressed_bytes"] == compressed
    assert result["required_bytes"] == int(compressed * factor)
    assert result["layers"] == layers
    assert result["images"] == len(per_image)
    assert [(i["compressed_bytes"], i["new_bytes"]) for i in result["per_image"]] == per_image
    assert [i["required_bytes"] for i in result["per_image"]] == [int(c * factor) for c, _new in per_image]


def test_estimate_default_factor_is_two():
    assert estimate({"x": info((A, 10))})["required_bytes"] == 20


@pytest.mark.parametrize("factor", [0, -1, "2", None, True, float("nan"), float("inf")])
def test_estimate_bad_factor(factor):
    with pytest.raises(DiskGuardError, match="expansion_factor"):
        estimate({}, factor)


def big_estimate():
    manifests = {f"quay.io/app/img{i}@sha256:{i:064x}": info((f"sha256:{i:064x}", i * GI)) for i in range(1, 8)}
    return estimate(manifests)


CHECKS = [
    # (mode, total, free, min_free, ok)
    ("estimate", 100 * GI, 20 * GI, "16Gi", False),  # needs 56 GiB
    ("estimate", 200 * GI, 73 * GI, "16Gi", True),  # 73 - 16 >= 56
    ("estimate", 200 * GI, 72 * GI - 1, "16Gi", False),
    ("estimate", 200 * GI, 56 * GI, 0, True),
    ("estimate", 1000 * GI, 100 * GI, "10%", False),  # reserve 100 GiB
    ("estimate", 1000 * GI, 157 * GI, "10%", True),
    ("free_only", 100 * GI, 20 * GI, "16Gi", True),
    ("free_only", 100 * GI, 15 * GI, "16Gi", False),
    ("free_only", 100 * GI, 16 * GI, 16 * GI, True),
    ("off", 100 * GI, 0, "16Gi", True),
]


@pytest.mark.parametrize("mode, total, free, min_free, ok", CHECKS)
def test_check(mode, total, free, min_free, ok):
    result = check(big_estimate(), total, free, min_free, mode)
    assert result["ok"] is ok
    assert result["mode"] == mode
    assert result["available_bytes"] == free
    assert result["total_bytes"] == total
    assert result["reserve_bytes"] == parse_size(min_free, total)
    assert result["required_bytes"] == (56 * GI if mode == "estimate" else 0)
    assert result["headroom_bytes"] == free - result["reserve_bytes"] - result["required_bytes"]
    assert ("not enough" in result["message"]) is (not ok)


def test_check_failure_message_names_figures_and_largest_images():
    result = check(big_estimate(), 100 * GI, 20 * GI, "16Gi", "estimate")
    message = result["message"]
    assert "not enough disk space, 52.0 GiB short" in message
    assert "7 image(s) need 56.0 GiB (28.0 GiB compressed x2)" in message
    assert "20.0 GiB free of 100.0 GiB, reserve 16.0 GiB" in message
    largest = [i["image"] for i in result["largest_images"]]
    assert largest == [f"quay.io/app/img{i}@sha256:{i:064x}" for i in (7, 6, 5, 4, 3)]
    assert result["largest_images"][0]["required"] == "14.0 GiB"
    assert "img7" in message and "img2" not in message
    assert (result["required"], result["available"], result["reserve"]) == ("56.0 GiB", "20.0 GiB", "16.0 GiB")


def test_check_free_only_message():
    result = check(big_estimate(), 100 * GI, 15 * GI, "16Gi", "free_only")
    assert result["message"] == "not enough free disk space: 15.0 GiB free of 100.0 GiB, reserve 16.0 GiB"
    assert result["largest_images"] == []


def test_check_defaults_and_empty_estimate():
    result = check(estimate({}), 100 * GI, 17 * GI)
    assert result["ok"] and result["reserve_bytes"] == 16 * GI and result["mode"] == "estimate"


@pytest.mark.parametrize(
    "mode, min_free, message",
    [
        ("fast", "16Gi", "not one of estimate, free_only, off"),
        ("estimate", "sixteen", "not understood"),
        ("estimate", "200%", "more than 100%"),
    ],
)
def test_check_errors(mode, min_free, message):
    with pytest.raises(DiskGuardError, match=message):
        check(big_estimate(), 100 * GI, 20 * GI, min_free, mode)


def test_a_reserve_under_a_mebibyte_without_its_unit_gets_a_warning_suggesting_the_unit():
    assert unitless_size_warning(16) == (
        "min_free: 16 has no unit, so it means 16 bytes, which keeps almost nothing free; did you mean 16Gi? Give "
        "the unit (16Gi, 500Mi), or 0 for no reserve"
    )
    assert unitless_size_warning(" 500 ", "node_prefetch_options.min_free").startswith(
        "node_prefetch_options.min_free:  500  has no unit, so it means 500 bytes"
    )
    # No reserve on purpose, a reserve of a mebibyte or more, any unit or percent, and what parse_size refuses.
    for value in (0, "0", 2**20, str(2**30), "16Gi", "16M", "10%", "-1", True, None, 1.5):
        assert unitless_size_warning(value) is None, value
