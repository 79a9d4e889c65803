# SPDX-License-Identifier: GPL-3.0-or-later
"""_prune/pins: who else pins a candidate, and unpinning only what the collection pinned, for the label and the
drop-in. Whole prunes against a scripted runtime: tests/unit/plugins/module_utils/_runs/test_prune.py."""

from __future__ import annotations

from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import OWNER_LABEL_KEY, PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    DropinSettings,
    dropin_pinned_images,
    render_pinned_images,
)
from ansible_collections.pinned.images.plugins.module_utils._prune.pins import Pins

OURS = f"registry.example:5000/ours@sha256:{'a' * 64}"
HAND = f"registry.example:5000/hand@sha256:{'b' * 64}"
WANTED = f"registry.example:5000/wanted@sha256:{'c' * 64}"
OWN_LABELS = {PIN_LABEL_KEY: "pinned", OWNER_LABEL_KEY: "pinned.images"}


class Containerd:
    """Image records with labels; CRI reports an image pinned while its record has the pin label."""

    def __init__(self, labels):
        self.labels = {name: dict(value) for name, value in labels.items()}

    def list_records(self):
        return [dict(name=name, labels=dict(labels)) for name, labels in self.labels.items()]

    def update_labels(self, record, labels, keys):
        kept = {key: value for key, value in self.labels[record["name"]].items() if key not in keys}
        self.labels[record["name"]] = dict(kept, **labels)

    def image_status(self, image):
        name = next((n for n in self.labels if image in (n, f"id-{n}")), None)
        if name is None:
            return None
        pinned = PIN_LABEL_KEY in self.labels[name]
        return dict(id=f"id-{name}", repo_tags=[], repo_digests=[name], size=1, pinned=pinned)


def candidate(name, pinned=True):
    return dict(names=[name], id=f"id-{name}", repo_tags=[], repo_digests=[name], size=1, pinned=pinned, unsure=[])


def test_the_label_pin_of_someone_else_stays_and_only_the_collections_goes(tmp_path):
    runtime = Containerd({OURS: OWN_LABELS, HAND: {PIN_LABEL_KEY: "pinned"}})
    pins = Pins(runtime, "label", DropinSettings(str(tmp_path / "dropin"), settle_timeout=1.0), None)
    assert not pins.pinned_by_others(candidate(OURS), True)
    assert pins.pinned_by_others(candidate(HAND), True)
    done = pins.unpin([candidate(OURS), candidate(HAND)])
    assert (done["changed"], done["unpinned"]) == (True, [OURS])
    assert runtime.labels == {OURS: {}, HAND: {PIN_LABEL_KEY: "pinned"}}


def test_a_pin_cri_reports_without_a_label_counts_as_someone_elses(tmp_path):
    pins = Pins(Containerd({OURS: {}}), "label", DropinSettings(str(tmp_path / "dropin")), None)
    assert pins.pinned_by_others(candidate(OURS), True) and not pins.pinned_by_others(candidate(OURS), False)


def test_the_drop_in_loses_only_the_exact_entries_no_wanted_image_needs(tmp_path):
    dropin = tmp_path / "50-pinned-images"
    dropin.write_text(render_pinned_images([OURS, WANTED, "registry.example:5000/hand*"]))
    pins = Pins(Containerd({}), "dropin", DropinSettings(str(dropin)), None)
    pins.wanted = (WANTED,)
    # A pattern still pins HAND once its own entry is gone; OURS has only its exact entry.
    assert pins.pinned_by_others(candidate(HAND), True) and not pins.pinned_by_others(candidate(OURS), True)
    done = pins.unpin([candidate(OURS), candidate(WANTED)])
    assert (done["changed"], done["unpinned"]) == (True, [OURS])
    assert sorted(dropin_pinned_images(dropin.read_text())) == sorted([WANTED, "registry.example:5000/hand*"])
    assert pins.unpin([candidate(OURS)]) == dict(changed=False, unpinned=[], diff=None)


def test_without_a_pin_method_only_cri_tells_and_nothing_is_unpinned(tmp_path):
    pins = Pins(Containerd({OURS: OWN_LABELS}), "none", DropinSettings(str(tmp_path / "dropin")), None)
    assert pins.pinned_by_others(candidate(OURS), True) and not pins.pinned_by_others(candidate(OURS), False)
    assert pins.unpin([candidate(OURS)]) == dict(changed=False, unpinned=[], diff=None)
