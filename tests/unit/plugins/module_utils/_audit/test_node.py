# SPDX-License-Identifier: GPL-3.0-or-later
"""_audit/node: present, pinned, missing, unpinned, others' pins and prune candidates, with CRI-O's drop-ins and
containerd's labels, against a scripted runtime. The module against real runtimes: tests/functional/test_audit_lab.py."""

from __future__ import annotations

import json

from ansible_collections.pinned.images.plugins.module_utils._audit.node import AuditSettings, audit_node
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import OWNER_LABEL_KEY, PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import render_pinned_images

A = f"registry.example:5000/a@sha256:{'a' * 64}"
B = f"registry.example:5000/b@sha256:{'b' * 64}"
C = f"registry.example:5000/c@sha256:{'c' * 64}"
OLD = f"registry.example:5000/old@sha256:{'d' * 64}"
HAND = f"registry.example:5000/hand@sha256:{'e' * 64}"
OWN = {PIN_LABEL_KEY: "pinned", OWNER_LABEL_KEY: "pinned.images"}


class Runtime:
    """Images by name with their pin; containerd records with labels (CRI pinned follows them when given)."""

    def __init__(self, pinned, labels=None):
        self.pinned = dict(pinned)
        self.labels = labels
        self.list_calls = 0

    def _image(self, name):
        pinned = self.pinned[name] if self.labels is None else PIN_LABEL_KEY in self.labels.get(name, {})
        return dict(id=f"id-{name[-3:]}", repo_tags=[], repo_digests=[name], size=1, pinned=pinned)

    def list_images(self):
        self.list_calls += 1
        return [self._image(name) for name in self.pinned]

    def image_status(self, name):
        return self._image(name) if name in self.pinned else None

    def list_records(self):
        return [dict(name=name, labels=dict(labels)) for name, labels in (self.labels or {}).items()]


def settings(tmp_path, method, wanted=(A, B, C), record=None):
    return AuditSettings(
        wanted=tuple(parse_image_ref(name) for name in wanted),
        method=method,
        dropin_path=str(tmp_path / "50-pinned-images"),
        record_file=record,
    )


def test_a_node_as_wanted_reports_every_image_present_and_pinned_with_one_list(tmp_path):
    (tmp_path / "50-pinned-images").write_text(render_pinned_images([A, B, C]))
    runtime = Runtime({A: True, B: True, C: True})
    audit = audit_node(runtime, settings(tmp_path, "dropin"))
    assert audit["present"] == audit["pinned"] == audit["wanted"] == [A, B, C]
    assert audit["missing"] == audit["unpinned"] == audit["pinned_by_others"] == audit["prune_candidates"] == []
    assert audit["crio"]["effective_from"] == str(tmp_path / "50-pinned-images")
    assert audit["crio"]["not_listed"] == audit["crio"]["not_effective"] == []
    assert runtime.list_calls == 1


def test_missing_unpinned_and_a_later_drop_in_are_told_apart(tmp_path):
    (tmp_path / "50-pinned-images").write_text(render_pinned_images([A, B, C]))
    (tmp_path / "99-other").write_text(render_pinned_images([HAND]))
    audit = audit_node(Runtime({A: False, B: False, HAND: True}), settings(tmp_path, "dropin"))
    assert (audit["missing"], audit["unpinned"], audit["pinned"]) == ([C], [A, B], [])
    assert audit["crio"]["effective_from"] == str(tmp_path / "99-other")
    assert audit["crio"]["effective"] == [HAND] and audit["crio"]["not_effective"] == [A, B, C]
    # HAND is pinned by the other drop-in, not by the collection's.
    assert audit["pinned_by_others"] == [HAND] and audit["prune_candidates"] == []


def test_a_deleted_drop_in_is_reported_as_absent(tmp_path):
    audit = audit_node(Runtime({A: True, B: True, C: True}), settings(tmp_path, "dropin"))
    assert audit["crio"]["exists"] is False and audit["crio"]["images"] is None
    assert audit["crio"]["not_listed"] == [A, B, C] and audit["crio"]["effective_from"] is None


def test_the_drop_ins_entry_no_set_wants_is_a_prune_candidate(tmp_path):
    (tmp_path / "50-pinned-images").write_text(render_pinned_images([A, B, C, OLD]))
    audit = audit_node(Runtime({A: True, B: True, C: True, OLD: True}), settings(tmp_path, "dropin"))
    assert audit["prune_candidates"] == [OLD] and audit["pinned_by_others"] == []


def test_containerd_records_without_the_label_are_named_and_owners_told_apart(tmp_path):
    labels = {A: OWN, B: {}, C: OWN, OLD: OWN, HAND: {PIN_LABEL_KEY: "pinned"}}
    runtime = Runtime(dict.fromkeys(labels, False), labels)
    audit = audit_node(runtime, settings(tmp_path, "label"))
    assert audit["containerd"]["unlabelled"] == [B] and audit["unpinned"] == [B]
    assert audit["pinned_by_others"] == [HAND] and audit["prune_candidates"] == [OLD]
    assert "crio" not in audit


def test_the_record_names_prune_candidates_an_unreadable_one_warns(tmp_path):
    record = tmp_path / "record.json"
    entry = dict(image_id="", pulled=True, pinned=False, first_run="r", last_run="r", first_seen=1.0, last_seen=1.0)
    record.write_text(json.dumps(dict(version=1, images={OLD: entry})))
    record.chmod(0o600)
    runtime = Runtime({A: True, B: True, C: True, OLD: False})
    assert audit_node(runtime, settings(tmp_path, "none", record=str(record)))["prune_candidates"] == [OLD]
    record.write_text("not json")
    audit = audit_node(runtime, settings(tmp_path, "none", record=str(record)))
    assert audit["prune_candidates"] == [] and "prune candidates not known" in audit["warnings"][0]
