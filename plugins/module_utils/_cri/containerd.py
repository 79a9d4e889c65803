# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A client for containerd's images API (``containerd.services.images.v1.Images``) next to CRI.

containerd serves its own API and the CRI plugin on one socket, so ``ContainerdClient`` is a ``CriClient``
(``version``, ``image_status``, ``list_images``, ...) whose channel also carries the images API. Every images call
names the namespace in the ``containerd-namespace`` metadata; the CRI plugin keeps its images in ``k8s.io``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional

from ansible_collections.pinned.images.plugins.module_utils._common.errors import NOT_FOUND

# First: _cri_client imports _node_deps, which puts the private grpcio and protobuf on sys.path; the stubs import
# protobuf when they are first imported and stay empty without it.
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient, CriError
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd_proto import containerd_images_pb2 as cpb
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd_proto import (
    containerd_images_pb2_grpc as cpb_grpc,
)

__all__ = ["CRI_NAMESPACE", "NAMESPACE_HEADER", "ContainerdClient"]

CRI_NAMESPACE = "k8s.io"
NAMESPACE_HEADER = "containerd-namespace"


def _record(image: Any) -> Dict[str, Any]:
    """A containerd ``Image`` message as ``{name, labels, target: {media_type, digest, size}}``."""
    target = image.target
    return dict(
        name=image.name,
        labels=dict(image.labels),
        target=dict(media_type=target.media_type, digest=target.digest, size=target.size),
    )


class ContainerdClient(CriClient):
    """CRI plus containerd's images API on one connection. Image records are ``{name, labels, target}``
    (``target``: ``{media_type, digest, size}``); failures raise ``CriError`` (from ``_cri.client``)."""

    def __init__(
        self,
        socket: Optional[str] = None,
        connect_timeout: float = 5.0,
        timeout: float = 60.0,
        namespace: str = CRI_NAMESPACE,
    ) -> None:
        super().__init__(socket, connect_timeout, timeout)
        self.namespace = namespace
        self._records: Any = None

    def _bind(self, channel: Any) -> None:
        super()._bind(channel)
        self._records = cpb_grpc.ImagesStub(channel)

    def _images_call(self, what: str, name: str, request: Any) -> Any:
        self.connect()
        method = getattr(self._records, name)
        return self._call(
            what,
            lambda req, timeout: method(req, timeout=timeout, metadata=((NAMESPACE_HEADER, self.namespace),)),
            request,
        )

    def list_records(self, filters: Iterable[str] = ()) -> List[Dict[str, Any]]:
        """Every image record of the namespace (``filters`` in containerd's syntax, any of them matching)."""
        response = self._images_call("containerd images List", "List", cpb.ListImagesRequest(filters=list(filters)))
        return [_record(image) for image in response.images]

    def get_record(self, name: str) -> Optional[Dict[str, Any]]:
        """The record called ``name``, or None when there is none."""
        try:
            response = self._images_call(f"containerd images Get {name}", "Get", cpb.GetImageRequest(name=name))
        except CriError as exc:
            if exc.kind == NOT_FOUND:
                return None
            raise
        return _record(response.image)

    def update_labels(
        self, record: Mapping[str, Any], labels: Mapping[str, str], keys: Iterable[str]
    ) -> Dict[str, Any]:
        """Set ``keys`` on ``record`` (as listed) to their values in ``labels``; keys ``labels`` lacks are deleted,
        and no other label is touched. Returns the record as stored."""
        name = record["name"]
        request = cpb.UpdateImageRequest(
            # The target goes along although the mask leaves it alone: containerd 1.7.24 dereferences it
            # unconditionally and crashes (SIGSEGV, the whole daemon) on an Update without one.
            image=cpb.Image(
                name=name,
                labels={key: labels[key] for key in keys if key in labels},
                target=cpb.Descriptor(**record["target"]),
            ),
            update_mask=cpb.FieldMask(paths=["labels." + key for key in keys]),
        )
        return _record(self._images_call(f"containerd images Update {name}", "Update", request).image)
