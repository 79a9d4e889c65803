# SPDX-License-Identifier: GPL-3.0-or-later
"""_cri/containerd: image records as dicts and the namespace of the client (the calls run against real
containerd 1.6 and 1.7 in tests/functional/test_containerd_pins_lab.py)."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._cri import containerd
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd_proto import containerd_images_pb2 as cpb


def test_a_record_is_its_name_labels_and_target():
    image = cpb.Image(
        name="quay.io/a/b@sha256:" + "a" * 64,
        labels={"io.cri-containerd.pinned": "pinned"},
        target=cpb.Descriptor(
            media_type="application/vnd.oci.image.index.v1+json", digest="sha256:" + "a" * 64, size=321
        ),
    )
    assert containerd._record(image) == dict(
        name="quay.io/a/b@sha256:" + "a" * 64,
        labels={"io.cri-containerd.pinned": "pinned"},
        target=dict(media_type="application/vnd.oci.image.index.v1+json", digest="sha256:" + "a" * 64, size=321),
    )


def test_the_client_uses_the_cri_namespace_unless_told_otherwise(tmp_path):
    socket = str(tmp_path / "containerd.sock")
    assert containerd.ContainerdClient(socket).namespace == containerd.CRI_NAMESPACE == "k8s.io"
    client = containerd.ContainerdClient(socket, 1.0, 2.0, namespace="other")
    assert (client.namespace, client.timeout) == ("other", 2.0)
