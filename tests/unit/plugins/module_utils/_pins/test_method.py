# SPDX-License-Identifier: GPL-3.0-or-later
"""_pins/method: the method a pin option becomes on each runtime.

The pin itself after a prefetch (pin_images) runs in tests/unit/plugins/module_utils/_runs/test_prefetch.py, through
run_prefetch against a scripted runtime.
"""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._pins.method import pin_method


@pytest.mark.parametrize(
    "wanted, runtime, method",
    [
        ("auto", dict(runtime_name="cri-o", runtime_version="1.31.0"), "dropin"),
        ("auto", dict(runtime_name="containerd", runtime_version="1.7.24~ds1"), "label"),
        ("auto", dict(runtime_name="containerd", runtime_version="v1.7.3"), "label"),
        ("auto", dict(runtime_name="containerd", runtime_version="1.6.20~ds1"), "none"),
        ("auto", dict(runtime_name="other", runtime_version="9.9.9"), "none"),
        ("dropin", dict(runtime_name="containerd", runtime_version="1.6.20"), "dropin"),
        ("label", dict(runtime_name="cri-o", runtime_version="1.31.0"), "label"),
        ("none", dict(runtime_name="cri-o", runtime_version="1.31.0"), "none"),
    ],
)
def test_the_pin_method_follows_the_runtime(wanted, runtime, method):
    assert pin_method(wanted, runtime) == method
