# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the doctor playbook (documented in the .yml files; the logic is in ``plugin_utils/_doctor.py``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from ansible_collections.pinned.images.plugins.plugin_utils import _doctor


def doctor_report(result: Optional[Mapping[str, Any]], host: str, python: str = "") -> List[str]:
    """The node's report lines from cri_image_info's result with checks."""
    return _doctor.report_lines(result, host, python)


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"doctor_report": doctor_report}
