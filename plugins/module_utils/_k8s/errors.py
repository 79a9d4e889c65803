# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The error of every Kubernetes failure (a leaf of _k8s)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = ["K8sError"]


class K8sError(CollectionError):
    """A Kubernetes API failure.

    ``status`` is the HTTP status (0 when the server never answered), ``reason`` the API ``Status.reason``
    (``Forbidden``, ``Conflict``, ``NotFound``, ``Invalid``, ...) and ``causes`` the ``Status.details.causes`` list.
    """

    def __init__(
        self, message: str, status: int = 0, reason: Optional[str] = None, causes: Optional[List[Dict[str, Any]]] = None
    ) -> None:
        super().__init__(message, details={"status": status, "reason": reason})
        self.status = status
        self.reason = reason
        self.causes = list(causes or [])
