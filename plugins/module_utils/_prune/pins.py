# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's pins of the images a prune may remove (node side, Python 3.8+): who else pins each one, and
unpinning those the collection pinned (the owner-marked containerd labels, or the drop-in's exact entries)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import read_bytes
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import (
    OWNER_LABEL_KEY,
    OWNER_VALUE,
    PIN_KEYS,
    PIN_LABEL_KEY,
    PIN_VALUE,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    MAX_DROPIN_SIZE,
    DropinSettings,
    NotReportedError,
    RunCommand,
    covers,
    dropin_pinned_images,
    effective_pins,
    is_pattern,
    pin_dropin,
    wait_reported,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.method import METHOD_DROPIN, METHOD_LABEL
from ansible_collections.pinned.images.plugins.module_utils._prune.plan import Candidate, all_names

__all__ = ["Pins"]


class Pins:
    """The collection's pins of the candidates on this runtime (``method``): who else pins them, and unpinning."""

    def __init__(self, client: Any, method: str, dropin: DropinSettings, run_command: Optional[RunCommand]) -> None:
        self.client = client
        self.method = method
        self.dropin = dropin
        self.run_command = run_command
        self.records: List[Dict[str, Any]] = client.list_records() if method == METHOD_LABEL else []
        self.listed: List[str] = []
        self.wanted: Tuple[str, ...] = ()
        if method == METHOD_DROPIN:
            text = read_bytes(dropin.path, MAX_DROPIN_SIZE)
            self.listed = (dropin_pinned_images(text.decode("utf-8", "replace")) if text else None) or []

    def _records_of(self, candidate: Candidate) -> List[Dict[str, Any]]:
        names = all_names(candidate)
        return [record for record in self.records if record["name"] in names]

    def own_entries(self, candidate: Candidate) -> List[str]:
        """The drop-in's exact entries that pin the candidate and no wanted image (a pattern pins more than it)."""
        names = all_names(candidate)
        return [
            entry
            for entry in self.listed
            if not is_pattern(entry) and entry in names and not any(covers([entry], w) for w in self.wanted)
        ]

    def _patterns(self, candidate: Candidate) -> List[str]:
        """The drop-in's entries that pin the candidate and stay: patterns, and entries that pin a wanted image."""
        names = all_names(candidate)
        ours = self.own_entries(candidate)
        return [e for e in self.listed if e not in ours and any(covers([e], name) for name in names)]

    def pinned_by_others(self, candidate: Candidate, cri_pinned: bool) -> bool:
        """Whether the candidate stays pinned once the collection's own pin is gone."""
        if self.method == METHOD_LABEL:
            pinned = [r for r in self._records_of(candidate) if r["labels"].get(PIN_LABEL_KEY) == PIN_VALUE]
            return any(r["labels"].get(OWNER_LABEL_KEY) != OWNER_VALUE for r in pinned) or (cri_pinned and not pinned)
        if self.method == METHOD_DROPIN:
            remaining = [entry for entry in self.listed if entry not in self.own_entries(candidate)]
            kept, source = effective_pins(self.dropin.path, remaining)
            by_other_file = source not in (None, self.dropin.path) and any(
                covers(kept, name) for name in all_names(candidate)
            )
            return by_other_file or bool(self._patterns(candidate)) or (cri_pinned and not self.own_entries(candidate))
        return cri_pinned

    def unpin(self, candidates: List[Candidate]) -> Dict[str, Any]:
        """Remove the collection's pin of ``candidates``: the owner-marked labels, or their drop-in entries."""
        if self.method == METHOD_LABEL:
            records = [
                r for c in candidates for r in self._records_of(c) if r["labels"].get(OWNER_LABEL_KEY) == OWNER_VALUE
            ]
            for record in records:
                self.client.update_labels(record, {}, PIN_KEYS)
            unpinned = [c["id"] for c in candidates if any(r in records for r in self._records_of(c))]
            try:
                # containerd applies the label change from its event stream, after the call returns.
                wait_reported(self.client, dict.fromkeys(unpinned, False), self.dropin.settle_timeout, "labels removed")
            except NotReportedError:
                pass  # the read-back after the unpin keeps what is still pinned
            return dict(changed=bool(records), unpinned=sorted(r["name"] for r in records), diff=None)
        if self.method == METHOD_DROPIN:
            drop = {entry for candidate in candidates for entry in self.own_entries(candidate)}
            if not drop:
                return dict(changed=False, unpinned=[], diff=None)
            remaining = [entry for entry in self.listed if entry not in drop]
            done = pin_dropin(remaining, self.dropin, False, None, self.run_command, client=self.client)
            self.listed = remaining
            return dict(changed=done["changed"], unpinned=sorted(drop), diff=done["diff"])
        return dict(changed=False, unpinned=[], diff=None)
