# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pin_audit module's run (node side, Python 3.8+): check the options, open the runtime once, read what
``_audit/node.audit_node`` reports. Nothing is pulled, written or reloaded, in check mode or not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, cast

from ansible_collections.pinned.images.plugins.module_utils._audit.node import AuditSettings, audit_node
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageRef,
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import require_node_deps
from ansible_collections.pinned.images.plugins.module_utils._pins.method import (
    METHOD_LABEL,
    PIN_AUTO,
    mco_pin_method,
    pin_method,
)
from ansible_collections.pinned.images.plugins.module_utils._prune.record import default_record_file
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    Problems,
    RuntimeOptions,
    containerd_client,
    cri_client,
    node_params,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = ["AuditRequest", "run", "run_audit"]

_NODE_PATHS = ("dropin_path", "record_file", "mco_dir", "state_dir")


@dataclass(frozen=True)
class AuditRequest:
    """Every option of one audit, checked."""

    refs: Tuple[ImageRef, ...]
    pin: str
    dropin_path: str
    record_file: Optional[str]
    mco_dir: str
    runtime: RuntimeOptions

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "AuditRequest":
        """One CollectionError names every bad option. Node paths (``_NODE_PATHS``) are taken under ``host_root``."""
        problems = Problems()
        mapped = problems.attempt(lambda: node_params(params, _NODE_PATHS))
        problems.raise_any()
        params = cast(Dict[str, Any], mapped)
        refs: List[ImageRef] = []
        for index, image in enumerate(params["images"]):
            try:
                ref = parse_image_ref(image, require_digest=False)
            except ImageReferenceError as err:
                problems.add(f"images[{index}]: {err}")
                continue
            if ref not in refs:
                refs.append(ref)
        problems.raise_any()
        return cls(
            refs=tuple(refs),
            pin=params["pin"],
            dropin_path=params["dropin_path"],
            # The record a prefetch keeps by default; read only, so a missing one is no record.
            record_file=params["record_file"] or default_record_file(params["state_dir"]),
            mco_dir=params["mco_dir"],
            runtime=RuntimeOptions.from_params(params),
        )


def run_audit(
    request: AuditRequest, client_factory: Optional[Callable[[RuntimeOptions], Any]] = None
) -> Dict[str, Any]:
    """The module's result: the runtime, the pin method in force and the audit (``_audit/node``)."""
    if client_factory is None:
        # The label's records are read through containerd's images API, on the same socket.
        client_factory = containerd_client if request.pin in (PIN_AUTO, METHOD_LABEL) else cri_client
    with client_factory(request.runtime) as client:
        runtime = dict(client.version(), endpoint=client.endpoint)
        method, mco_sign, warnings = mco_pin_method(request.pin, pin_method(request.pin, runtime), request.mco_dir)
        settings = AuditSettings(
            wanted=request.refs, method=method, dropin_path=request.dropin_path, record_file=request.record_file
        )
        audit = audit_node(client, settings)
    warnings = warnings + audit.pop("warnings")
    return dict(
        changed=False, runtime=runtime, pin=request.pin, method=method, mco_managed=mco_sign, warnings=warnings, **audit
    )


def run(invocation: Invocation) -> Outcome:
    """The module's run, once grpcio and protobuf are there; the same in check mode (it only reads)."""
    require_node_deps()
    request = AuditRequest.from_params(invocation.params)
    result = run_audit(request)
    return Outcome(result, result.pop("warnings"))
