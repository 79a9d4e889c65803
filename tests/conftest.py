# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pytest set-up: test helpers live in tests/fixtures, the lab in hack/."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "hack", ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

pytest_plugins = ["fixtures.fake_apiserver"]
