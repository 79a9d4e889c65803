# SPDX-License-Identifier: GPL-3.0-or-later
"""_prune/record: the record of what the collection pulled and pinned; a record that cannot be trusted is an error
naming the file, never an empty record."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.pinned.images.plugins.module_utils._prune.record import (
    RecordError,
    adopt_former,
    default_record_file,
    forgotten,
    noted,
    read_record,
    record_next_to,
    write_record,
)

A = "quay.io/org/a@sha256:" + "a" * 64
B = "quay.io/org/b@sha256:" + "b" * 64


def test_the_default_is_in_the_state_directory_and_the_former_one_next_to_the_lock():
    assert (
        default_record_file("/var/lib/pinned-images/state") == "/var/lib/pinned-images/state/pinned-images-record.json"
    )
    assert record_next_to("/var/tmp/p.json.lock") == "/var/tmp/pinned-images-record.json"
    assert record_next_to(None) is None and record_next_to("") is None


def test_a_former_record_is_moved_once_and_read_in_place_in_check_mode(tmp_path):
    former, path = str(tmp_path / "old.json"), str(tmp_path / "state" / "record.json")
    os.mkdir(tmp_path / "state")
    entries = noted({}, {A: "sha256:1"}, [A], [A], "run-1", 100.0)
    write_record(former, entries)
    assert adopt_former(path, former, check_mode=True) == former
    assert os.path.exists(former) and not os.path.exists(path)
    assert adopt_former(path, former) == path
    assert read_record(path) == entries and not os.path.exists(former)
    # Once: a former record that appears again is not read over the record.
    write_record(former, noted({}, {B: "sha256:2"}, [B], [], "run-0", 50.0))
    assert adopt_former(path, former) == path
    assert read_record(path) == entries and os.path.exists(former)
    # Nothing to adopt.
    assert adopt_former(str(tmp_path / "new.json"), None) == str(tmp_path / "new.json")
    assert adopt_former(str(tmp_path / "new.json"), str(tmp_path / "none.json")) == str(tmp_path / "new.json")


def test_a_former_record_that_is_not_one_is_left_where_it_is(tmp_path):
    former, path = tmp_path / "old.json", tmp_path / "record.json"
    former.write_text("not json")
    former.chmod(0o600)
    with pytest.raises(RecordError, match="old.json is not JSON"):
        adopt_former(str(path), str(former))
    assert former.read_text() == "not json" and not path.exists()


def test_a_missing_record_is_empty_and_a_written_one_reads_back_with_mode_0600(tmp_path):
    path = str(tmp_path / "record.json")
    assert read_record(path) == {}
    entries = noted({}, {A: "sha256:1"}, [A], [A, B], "run-1", 100.0)
    assert write_record(path, entries) is True
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert read_record(path) == entries
    assert write_record(path, entries) is False
    assert not list(tmp_path.glob(".*tmp")), "the atomic write leaves no temporary file"


def test_an_image_keeps_its_first_run_and_what_it_once_was():
    first = noted({}, {A: "sha256:1"}, [A], [], "run-1", 100.0)
    second = noted(first, {}, [], [A, B], "run-2", 200.0)
    assert second[A] == dict(
        image_id="sha256:1",
        pulled=True,
        pinned=True,
        first_run="run-1",
        first_seen=100.0,
        last_run="run-2",
        last_seen=200.0,
    )
    assert (second[B]["pulled"], second[B]["pinned"], second[B]["image_id"]) == (False, True, "")
    assert forgotten(second, [A]) == {B: second[B]}
    assert first[A]["last_run"] == "run-1", "the entries given are not changed"


@pytest.mark.parametrize(
    "content, why",
    [
        ("not json", "is not JSON"),
        ("[]", "is not a version 1 record"),
        ('{"version": 2, "images": {}}', "is not a version 1 record"),
        ('{"version": 1}', "has no images object"),
        ('{"version": 1, "images": {"x": "y"}}', "is corrupt: the entry of x is not an object"),
        ('{"version": 1, "images": {"": {}}}', "is corrupt: an image name '' is not a non-empty string"),
        ('{"version": 1, "images": {"x": {"first_seen": "soon"}}}', "is corrupt: the first_seen of x is not a number"),
        ('{"version": 1, "images": {"x": {"last_seen": true}}}', "is corrupt: the last_seen of x is not a number"),
        ('{"version": 1, "images": {"x": {"pinned": "yes"}}}', "is corrupt: the pinned of x is not true or false"),
    ],
)
def test_a_corrupt_record_is_an_error_naming_the_file(tmp_path, content, why):
    path = tmp_path / "record.json"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(RecordError) as info:
        read_record(str(path))
    assert info.value.message.startswith(f"the prune record {path} {why}")
    assert "nothing was pruned" in info.value.message and info.value.details["record_file"] == str(path)


def test_a_record_others_may_write_is_refused(tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"version": 1, "images": {}}))
    path.chmod(0o666)
    with pytest.raises(RecordError, match=r"is writable by others \(mode 0666\)"):
        read_record(str(path))


def test_a_link_is_refused_not_followed(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"version": 1, "images": {}}))
    target.chmod(0o600)
    link = tmp_path / "record.json"
    link.symlink_to(target)
    with pytest.raises(RecordError, match=r"is not a regular file"):
        read_record(str(link))
