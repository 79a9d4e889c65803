# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The containerd_pinned_images module's run (node side, Python 3.8+): the wanted images (from ``images`` or set
files), then ``_pins/containerd_label.pin_labels``."""

from __future__ import annotations

from typing import Any, Dict, Mapping

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import require_node_deps
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import (
    LabelSettings,
    pin_labels,
    validate_images,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    RuntimeOptions,
    containerd_client,
    node_params,
    selected_images,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["run"]


def run(invocation: Invocation) -> Outcome:
    """The module's run: its result, or the failure with the fields of a run that changed nothing."""
    before: Mapping[str, Any] = dict(
        changed=False,
        images=[],
        pinned=[],
        unchanged=[],
        unpinned=[],
        missing=[],
        records=dict(pinned=[], unpinned=[]),
        set_names=[],
    )
    try:
        params = node_params(invocation.params, ())
        images, set_names = selected_images(params, validate_images, "unpin every image pinned.images pinned")
        settings = LabelSettings(
            force=params["force"], old_containerd=params["old_containerd"], settle_timeout=params["settle_timeout"]
        )
        # After the input is checked, so that bad input is reported as such on a node without grpcio too.
        require_node_deps()
        client = containerd_client(RuntimeOptions.from_params(params))
        with client:
            result: Dict[str, Any] = pin_labels(client, images, settings, invocation.check_mode, params["state"])
    except CollectionError as error:
        return Outcome(before, failure=error)
    warnings = result.pop("warnings")
    return Outcome(dict(result, set_names=set_names), warnings)
