# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The machine_config module's run (controller side): its options as a MachineConfigRequest, then
``_openshift/machine_config.run_machine_config``."""

from __future__ import annotations

import math
from typing import Any, Mapping

from ansible_collections.pinned.images.plugins.module_utils._openshift.machine_config import (
    MachineConfigError,
    MachineConfigRequest,
    run_machine_config,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.options import k8s_connection
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome, hiding


def machine_config_request(params: Mapping[str, Any]) -> MachineConfigRequest:
    """The module's options; the sets, pools and images are checked by ``plan``, all before anything changes."""
    if not 0 <= params["disruption_policy_timeout"] < math.inf:
        raise MachineConfigError(
            f"disruption_policy_timeout must be 0 or more seconds (finite), got {params['disruption_policy_timeout']}"
        )
    return MachineConfigRequest(
        params["pools"],
        params["sets"],
        params["images"],
        params["require_digest"],
        params["name"],
        params["ignition_version"],
        params["dest"],
        params["apply"],
        params["state"],
        params["return_images"],
        params["return_objects"],
        k8s_connection(params),
        params["disruption_policy"],
        params["allow_reboot"],
        params["disruption_policy_timeout"],
    )


def run(invocation: Invocation) -> Outcome:
    """The module's run; the connection's secrets are hidden from its result and its failure."""
    request = machine_config_request(invocation.params)
    return hiding(
        request.connection.secrets(),
        lambda: Outcome(run_machine_config(request, invocation.check_mode, invocation.diff, invocation.tmpdir)),
    )
