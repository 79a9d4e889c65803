# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The crio_pinned_images module's run (node side, Python 3.8+): the wanted images (from ``images`` or set files),
then ``_pins/crio_dropin.pin_dropin`` with its presence check and CRI read-back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.errors import UNAVAILABLE, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.host_root import chrooted
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import NodeDepsMissing, require_node_deps
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    LazyStatusClient,
    missing_images,
    pin_dropin,
    validate_pinned_images,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    RuntimeOptions,
    cri_client,
    dropin_settings,
    node_params,
    selected_images,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

if TYPE_CHECKING:  # grpc is imported only once require_node_deps found it
    from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient

__all__ = ["run"]


def run(invocation: Invocation) -> Outcome:
    """The module's run: its result (``changed``, ``path``, ``images``, ``set_names``, ``reloaded``,
    ``cri_pinned``, ``diff``) and warnings, or the failure with those fields as they were before the run."""
    try:
        params = node_params(invocation.params, ("dropin_path", "crio_pid_file"))
    except CollectionError as error:
        return Outcome(
            dict(changed=False, path=invocation.params["dropin_path"], images=[], set_names=[]), failure=error
        )
    before: Mapping[str, Any] = dict(changed=False, path=params["dropin_path"], images=[], set_names=[], reloaded=False)
    runtime = RuntimeOptions.from_params(params)

    def connect() -> CriClient:
        # grpcio is needed only for a CRI call: removing a drop-in that is already gone makes none.
        require_node_deps()
        return cri_client(runtime)

    client = LazyStatusClient(connect)
    warnings: List[str] = []
    try:
        images, set_names = selected_images(
            params, validate_pinned_images, f"remove the drop-in {params['dropin_path']}"
        )
        settings = dropin_settings(params, force=params["force"])
        read_back: Optional[LazyStatusClient] = client
        if params["state"] == "present" and settings.force and settings.reload == "none":
            read_back, warnings = _runtime_if_any(client, settings.path)

        def check_presence(wanted: List[str]) -> List[str]:
            return missing_images(client, wanted)

        result: Dict[str, Any] = pin_dropin(
            images,
            settings,
            invocation.check_mode,
            check_presence,
            # systemctl of the host's own systemd, from a pod.
            chrooted(runtime.host_root, invocation.run_command),
            params["state"],
            read_back,
        )
    except CollectionError as error:
        return Outcome(before, failure=error)
    finally:
        client.close()
    warnings += result.pop("warnings", [])
    return Outcome(dict(result, set_names=set_names), warnings=warnings)


def _runtime_if_any(client: LazyStatusClient, path: str) -> Tuple[Optional[LazyStatusClient], List[str]]:
    """The client when a runtime answers, else None and a warning: with force and no reload the drop-in is written
    where no runtime runs yet (an image build, a bootc step, a node before CRI-O starts), unread through CRI."""
    try:
        client.open()
    except CollectionError as error:
        if not isinstance(error, NodeDepsMissing) and error.details.get("error_kind") != UNAVAILABLE:
            raise
        return None, [
            f"no runtime answers here ({error.message}); {path} is written without reading the pins back through "
            "CRI: CRI-O reads it when it starts"
        ]
    return client, []
