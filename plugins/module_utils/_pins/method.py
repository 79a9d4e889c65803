# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Which method a run pins with, and the pin after a prefetch (node side, Python 3.8+).

The ``pin`` option of ``prefetch`` and ``prune`` names a method or ``auto``; ``pin_method`` turns ``auto`` into the
runtime's (the drop-in on CRI-O, the label on containerd 1.7.3 and later), ``mco_pin_method`` leaves the drop-in to
the machine-config-operator on a node it manages, and ``pin_images`` pins the prefetched images with the method
(the same step as ``crio_pinned_images`` / ``containerd_pinned_images``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriImage
from ansible_collections.pinned.images.plugins.module_utils._openshift.mco_node import dropin_decision
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import (
    LabelSettings,
    auto_pin_problem,
    pin_labels,
    runtime_problem,
    validate_images,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    DropinSettings,
    RunCommand,
    missing_images,
    pin_dropin,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import PRESENT, PULLED, ImageResult

__all__ = [
    "METHOD_DROPIN",
    "METHOD_LABEL",
    "METHOD_NONE",
    "PIN_AUTO",
    "PIN_CHOICES",
    "PinSettings",
    "mco_pin_method",
    "pin_images",
    "pin_method",
]

# The methods a run pins with, and the values of the pin option: a method, or ``auto`` (the runtime's method).
METHOD_NONE, METHOD_DROPIN, METHOD_LABEL = "none", "dropin", "label"
PIN_AUTO = "auto"
PIN_CHOICES = (METHOD_NONE, PIN_AUTO, METHOD_DROPIN, METHOD_LABEL)
# The statuses of images a pin covers: the node has them.
_ON_NODE = (PRESENT, PULLED)


@dataclass(frozen=True)
class PinSettings:
    """The pin of a prefetch: the ``pin`` option as given, how each method pins, and whether to change nothing."""

    wanted: str
    require_digest: bool
    dropin: DropinSettings
    label: LabelSettings
    check_mode: bool


def pin_method(wanted: str, runtime: Mapping[str, Any]) -> str:
    """The method a run pins with: ``auto`` is the drop-in on CRI-O, the image label on containerd 1.7.3 and
    later, none on anything else (older containerd stores the label but does not honour it)."""
    if wanted != PIN_AUTO:
        return wanted
    if runtime.get("runtime_name") == "cri-o":
        return METHOD_DROPIN
    if runtime.get("runtime_name") == "containerd" and runtime_problem(dict(runtime)) is None:
        return METHOD_LABEL
    return METHOD_NONE


def mco_pin_method(wanted: str, method: str, mco_dir: str) -> Tuple[str, Optional[str], List[str]]:
    """(method, the MCO sign or None, warnings): on a node the machine-config-operator manages, ``auto`` leaves the
    drop-in to it (no pin) and an explicit ``dropin`` warns (``_openshift.mco_node``)."""
    if method != METHOD_DROPIN:
        return method, None, []
    write, sign, warnings = dropin_decision(wanted == PIN_AUTO, mco_dir)
    return (method if write else METHOD_NONE), sign, warnings


def pin_images(
    client: Any,
    settings: PinSettings,
    method: str,
    images: List[ImageResult],
    run_command: Optional[RunCommand],
    present: Optional[Mapping[str, CriImage]] = None,
    runtime: Optional[Mapping[str, Any]] = None,
) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]], List[str]]:
    """Pin the requested images (``images``: the prefetch's result of each) with ``method`` once every one is on
    the node (the same step as ``crio_pinned_images`` / ``containerd_pinned_images``), else leave the pins as they
    are. ``present`` (the run's present check) spares the label pin an ImageStatus call for each image that was
    already there.

    Returns (the result's ``pin``: ``method``, ``ran``, ``changed``, ``images``, ``path``, ``reloaded``,
    ``records``, ``cri_pinned`` (what CRI reports per image after the pin), and ``reason`` when ``auto`` found a
    runtime that cannot pin; the pin's diff or None; warnings). Raises the pin step's CollectionError.
    """
    pin: Dict[str, Any] = dict(
        method=method, ran=False, changed=False, images=[], path=None, reloaded=False, records=None, cri_pinned={}
    )
    if method == METHOD_NONE:
        reason = auto_pin_problem(settings.wanted, runtime or {})
        if reason:
            pin["reason"] = reason
        return pin, None, [reason] if reason else []
    if any(entry["status"] not in _ON_NODE for entry in images):
        return pin, None, []
    names = [entry["image"] for entry in images]
    if method == METHOD_DROPIN:
        done = pin_dropin(
            validate_images(names, settings.require_digest),
            settings.dropin,
            settings.check_mode,
            lambda wanted: missing_images(client, wanted),
            run_command,
            client=client,
            known=present,
        )
        pin.update(
            ran=True,
            changed=done["changed"],
            images=done["images"],
            path=done["path"],
            reloaded=done["reloaded"],
            cri_pinned=done["cri_pinned"],
        )
        return pin, done["diff"], done["warnings"]
    done = pin_labels(
        client, validate_images(names, settings.require_digest), settings.label, settings.check_mode, known=present
    )
    pin.update(
        ran=True, changed=done["changed"], images=done["images"], records=done["records"], cri_pinned=done["cri_pinned"]
    )
    return pin, done["diff"], done["warnings"]
