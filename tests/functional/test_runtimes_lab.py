# SPDX-License-Identifier: GPL-3.0-or-later
"""The prefetch's pin on every runtime of the lab (conftest.LAB_RUNTIMES), proven by that runtime's own CRI: pin,
rerun, runtime restart, unpin. containerd 1.7 and 2.1 pin with the image label, CRI-O with its drop-in reloaded by
SIGHUP, and containerd 1.6, which cannot pin, gets the reason and the fix instead of a pin nobody honours."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.ansible_runs import adhoc
from support.node import RUNTIMES, pin_args

GUARD = dict(min_free="64Mi")


def cri_pinned(node) -> dict:
    """Repo digest -> pinned, as the node's CRI ListImages reports it."""
    with CriClient(node["endpoint"]) as client:
        return {digest: image["pinned"] for image in client.list_images() for digest in image["repo_digests"]}


def prefetch(lab, node, images) -> dict:
    args = dict(GUARD, images=list(images), auth_file=lab.state["registries"]["auth"]["docker_config"])
    rc, result, output = adhoc("pinned.images.prefetch", dict(args, **pin_args(node)))
    assert rc == 0, output
    result["output"] = output
    return result


def reported_pins(result, wanted):
    """The result's ``cri_pinned`` of the wanted images. The node is shared with other tests: an image an earlier
    test pinned, which the drop-in no longer lists, is reported too and must not be pinned any more."""
    reported = result["pin"]["cri_pinned"]
    assert not [image for image, pinned in reported.items() if image not in wanted and pinned], reported
    return {image: pinned for image, pinned in reported.items() if image in wanted}


@pytest.mark.lab
def test_pin_rerun_restart_and_unpin_as_cri_reports(lab, runtime_empty_node):
    node, runtime = runtime_empty_node, RUNTIMES[runtime_empty_node["runtime"]]
    images = lab.images()
    small, shared = images["plain-small"].reference, images["auth-small"].reference
    pins = runtime.pins  # whether this runtime reports pins through CRI

    result = prefetch(lab, node, [small, shared])
    method = {"containerd": "label", "cri-o": "dropin"}[runtime.kind] if pins else "none"
    assert result["pin"]["method"] == method
    assert cri_pinned(node) == {small: pins, shared: pins}
    assert reported_pins(result, [small, shared]) == ({small: True, shared: True} if pins else {})
    if not pins:
        # pin=auto on containerd below 1.7.3: the reason and the fix, no pin that nothing honours.
        reason = result["pin"]["reason"]
        assert "will not honour the pin" in reason and "Upgrade containerd to 1.7.3" in reason
        assert "[WARNING]: containerd 1.6." in result["output"]
        return

    reloads = lab.reloads(node["name"])
    again = prefetch(lab, node, [small, shared])
    assert again["changed"] is False and again["pin"]["changed"] is False
    assert reported_pins(again, [small, shared]) == {small: True, shared: True}
    assert lab.reloads(node["name"]) == reloads  # a rerun that changes nothing does not reload CRI-O

    lab.restart_node(node["name"])
    assert cri_pinned(node) == {small: True, shared: True}

    # shared leaves the set: CRI reports it unpinned, small stays pinned.
    unpinned = prefetch(lab, node, [small])
    assert unpinned["pin"]["changed"] is True
    assert cri_pinned(node) == {small: True, shared: False}
