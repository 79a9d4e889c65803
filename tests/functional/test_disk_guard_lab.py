# SPDX-License-Identifier: GPL-3.0-or-later
"""The disk guard of pinned.images.prefetch on real containerd nodes whose root is a small tmpfs (a real full disk)."""

from __future__ import annotations

import itertools
import os

import pytest

from fixtures.ansible_runs import adhoc

MIB = 1024 * 1024
TMPFS = "64M"
# Random content: compressed size ~= layer size. Two images fit on the 64M tmpfs (content + unpacked snapshot), three do not.
LAYER = 12 * MIB
_names = itertools.count(1)


@pytest.fixture(scope="module")
def big_images(lab):
    return [lab.push_image(f"lab/big-{letter}", [LAYER], name=f"big-{letter}") for letter in "abcd"]


@pytest.fixture
def tiny_node(lab):
    """A fresh node whose containerd root is its own 64 MiB tmpfs."""
    entry = lab.add_node(f"tiny-{next(_names)}", tmpfs_size=TMPFS)
    return entry


def content_files(root: str) -> dict:
    found = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if name != "meta.db":
                found[path] = os.path.getsize(path)
    return found


def images_on(socket: str) -> list:
    rc, info, output = adhoc("pinned.images.cri_image_info", dict(cri_socket=socket))
    assert rc == 0, output
    return info["images"]


def prefetch(socket, images, check=False, **args):
    return adhoc("pinned.images.prefetch", dict(images=images, cri_socket=socket, min_free="4Mi", **args), check=check)


@pytest.mark.parametrize("check", [False, True], ids=["run", "check_mode"])
def test_set_that_does_not_fit_is_refused_and_nothing_is_pulled(big_images, tiny_node, check):
    socket = tiny_node["endpoint"]
    before = content_files(tiny_node["root"])
    refs = [record.reference for record in big_images[:3]]
    rc, result, output = prefetch(socket, refs, check=check)
    assert rc != 0
    assert result["msg"].startswith("disk guard refused the prefetch, nothing was pulled: not enough disk space")
    guard = result["disk_guard"]
    assert guard["ok"] is False
    assert guard["required_bytes"] == 2 * sum(record.size for record in big_images[:3])
    assert guard["reserve_bytes"] == 4 * MIB
    assert guard["available_bytes"] <= 64 * MIB
    assert guard["filesystem"].startswith(tiny_node["root"])
    for text in ("72.", "MiB free of", "reserve 4.0 MiB", "largest: "):
        assert text in result["msg"]
    assert [entry["image"] for entry in guard["largest_images"]] == sorted(refs)
    assert images_on(socket) == []
    assert content_files(tiny_node["root"]) == before


def test_set_that_fits_is_pulled(big_images, tiny_node):
    socket = tiny_node["endpoint"]
    record = big_images[0]
    rc, result, output = prefetch(socket, [record.reference])
    assert rc == 0, output
    assert result["images"][0]["status"] == "pulled"
    assert result["disk_guard"]["ok"] is True
    assert result["disk_guard"]["required_bytes"] == 2 * record.size
    assert result["disk_guard"]["registry_requests"] >= 1
    assert [image["id"] for image in images_on(socket)] == [record.image_id]


def test_real_enospc_with_guard_off_stops_the_queue(big_images, tiny_node):
    socket = tiny_node["endpoint"]
    refs = [record.reference for record in big_images]
    rc, result, output = prefetch(socket, refs, disk_guard="off", concurrency=1, retry_delay=5)
    assert rc != 0
    statuses = [image["status"] for image in result["images"]]
    failed = statuses.index("failed")
    assert statuses[:failed] == ["pulled"] * failed and failed >= 1
    assert statuses[failed + 1 :] == ["skipped"] * (len(refs) - failed - 1)
    skipped = len(refs) - failed - 1
    if skipped:
        assert f". {skipped} more were not attempted because the disk ran out of space" in result["msg"]
    image = result["images"][failed]
    assert image["error_kind"] == "no_space"
    assert image["attempts"] == 1
    assert "no space left on device" in image["error"]
    assert image["error"].startswith(f"image filesystem {tiny_node['root']}")
    assert "disk_guard" not in result


def test_multiarch_index_is_estimated_as_its_platform_manifest(lab, empty_node):
    record = lab.images()["plain-multiarch"]
    rc, result, output = prefetch(empty_node, [record.reference], check=True, expansion_factor=1)
    assert rc == 0, output
    guard = result["disk_guard"]
    assert guard["required_bytes"] == record.size == sum(layer.size for layer in record.layers) > 0
    every_platform = sum(layer.size for manifest in record.manifests for layer in manifest.layers)
    assert guard["required_bytes"] < every_platform


def test_mirror_in_registries_conf_redirects_the_estimate(lab, empty_node, tmp_path):
    small = lab.images()["plain-small"]
    plain = lab.status()["registries"]["plain"]["host"]
    # Nothing listens on port 1: only the mirror can answer.
    origin_ref = "127.0.0.1:1/" + small.reference.split("/", 1)[1]
    conf = tmp_path / "registries.conf"
    conf.write_text(
        '[[registry]]\nprefix = "127.0.0.1:1"\nlocation = "127.0.0.1:1"\n'
        f'[[registry.mirror]]\nlocation = "{plain}"\ninsecure = true\n'
    )
    rc, result, output = prefetch(empty_node, [origin_ref], check=True, registries_conf=str(conf), retries=0)
    assert rc == 0, output
    assert result["disk_guard"]["required_bytes"] == 2 * small.size
    assert result["images"][0]["status"] == "would_pull"

    empty_conf = tmp_path / "empty.conf"
    empty_conf.write_text("")
    rc, result, output = prefetch(empty_node, [origin_ref], check=True, registries_conf=str(empty_conf), retries=0)
    assert rc != 0
    assert result["images"][0]["error_kind"] == "unavailable"
    assert "size estimate failed" in result["images"][0]["error"]
