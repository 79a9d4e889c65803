# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pinned_image_status module's run (controller side): its options as a StatusRequest, then
``_openshift/node_status.publish_statuses``."""

from __future__ import annotations

from typing import List

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._openshift.node_status import (
    StatusRequest,
    publish_statuses,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.options import k8s_connection
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome


def run(invocation: Invocation) -> Outcome:
    """The module's run. The warnings are given on failure too: an unreadable annotation seen before the failure is
    still worth one."""
    params = invocation.params
    request = StatusRequest(
        params["nodes"], params["annotation"], params["cluster_generations"], k8s_connection(params)
    )
    secrets = frozenset(request.connection.secrets())
    warnings: List[str] = []
    try:
        result = publish_statuses(request, invocation.check_mode, invocation.tmpdir, warnings)
    except CollectionError as error:
        return Outcome(warnings=warnings, secrets=secrets, failure=error)
    return Outcome(result, warnings, secrets)
