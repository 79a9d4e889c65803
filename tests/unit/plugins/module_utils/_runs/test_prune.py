# SPDX-License-Identifier: GPL-3.0-or-later
"""_runs/prune: the checks before the runtime, and whole runs against a scripted runtime (unpin, decide again,
remove, the record). The same on real containerd and CRI-O: tests/functional/test_prune_lab.py."""

from __future__ import annotations

import json

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import NOT_FOUND, UNKNOWN, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock, NodeLockError
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import OWNER_LABEL_KEY, PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    covers,
    dropin_pinned_images,
    effective_pins,
    render_pinned_images,
)
from ansible_collections.pinned.images.plugins.module_utils._prune.record import noted, write_record
from ansible_collections.pinned.images.plugins.module_utils._runs import prune as prune_run
from ansible_collections.pinned.images.plugins.module_utils._runs.prune import PruneRequest, PruneStopped, run_prune
from fixtures.scripted_runtime import ScriptedRuntime

WANTED = "registry.example:5000/wanted@sha256:" + "a" * 64
DROPPED = "registry.example:5000/dropped@sha256:" + "b" * 64
HAND = "registry.example:5000/hand@sha256:" + "c" * 64
OUTSIDE = "registry.example:5000/outside@sha256:" + "d" * 64
OURS = {PIN_LABEL_KEY: "pinned", OWNER_LABEL_KEY: "pinned.images"}


class Runtime(ScriptedRuntime):
    """containerd 1.7 with CRI images by id, their records' labels, containers, and removals."""

    endpoint = "unix:///scripted.sock"
    runtime_name, runtime_version = "containerd", "1.7.24"

    def __init__(self, labels=None, containers=(), fail_remove=None, sandbox_image=None, aliases=None):
        self.images = {f"sha256:{name.split('/')[1][:3]}": name for name in (WANTED, DROPPED, HAND, OUTSIDE)}
        self.sandbox_image = sandbox_image
        # Other names (a tag) of an image, by image id.
        self.aliases = dict(aliases or {})
        self.labels = dict(labels or {})
        self.containers = list(containers)
        self.fail_remove = fail_remove
        self.removed = []

    def _id(self, name):
        found = next((i for i, n in self.images.items() if name in (i, n)), None)
        return found or next((i for i, tag in self.aliases.items() if tag == name and i in self.images), None)

    def image_status(self, name):
        image_id = self._id(name)
        if image_id is None:
            return None
        pinned = PIN_LABEL_KEY in self.labels.get(self.images[image_id], {})
        tags = [self.aliases[image_id]] if image_id in self.aliases else []
        return dict(id=image_id, repo_tags=tags, repo_digests=[self.images[image_id]], size=1000, pinned=pinned)

    def status_info(self):
        return {"config": json.dumps(dict(sandboxImage=self.sandbox_image) if self.sandbox_image else {})}

    def list_records(self):
        return [dict(name=n, labels=dict(self.labels.get(n, {})), target={}) for n in self.images.values()]

    def update_labels(self, record, labels, keys):
        self.labels[record["name"]] = dict(labels)

    def list_containers(self):
        return self.containers

    def remove_image(self, image_id):
        if self.fail_remove:
            raise CriError("RemoveImage: scripted", self.fail_remove)
        self.removed.append(self.images.pop(image_id))


def params(tmp_path, **overrides):
    base = dict(
        images=[WANTED],
        allow_empty=False,
        keep=[],
        min_age="0",
        record_file=str(tmp_path / "record.json"),
        lock_file=str(tmp_path / "lock"),
        state_dir=str(tmp_path / "state"),
        former_record_file=None,
        run_id="prune-1",
        pin="auto",
        mco_dir=str(tmp_path / "mcd"),
        dropin_path=str(tmp_path / "50-pinned-images"),
        crio_reload="none",
        crio_pid_file=None,
        settle_timeout=1.0,
        cri_socket=None,
        cri_connect_timeout=1.0,
        cri_timeout=1.0,
    )
    base.update(overrides)
    return base


def recorded(tmp_path, *names):
    write_record(str(tmp_path / "record.json"), noted({}, {}, names, names, "r0", 0.0))


def prune(tmp_path, runtime, check_mode=False, **overrides):
    request = PruneRequest.from_params(params(tmp_path, **overrides), check_mode)
    result, _warnings = run_prune(request, diff=True, client_factory=lambda _p: runtime)
    return result


def record_names(tmp_path):
    return sorted(json.loads((tmp_path / "record.json").read_text())["images"])


def test_an_empty_wanted_list_is_refused_before_the_runtime(tmp_path):
    with pytest.raises(CollectionError) as info:
        PruneRequest.from_params(params(tmp_path, images=[]), False)
    assert info.value.message.startswith("images is empty: the prune would remove every image the record")
    PruneRequest.from_params(params(tmp_path, images=[], allow_empty=True), False)


def test_under_host_root_the_prune_s_node_paths_are_the_host_s(tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    request = PruneRequest.from_params(
        params(
            tmp_path,
            host_root=str(host),
            record_file="/var/tmp/record.json",
            lock_file="/var/tmp/p.json.lock",
            mco_dir="/etc/machine-config-daemon",
            dropin_path="/etc/crio/crio.conf.d/50-pinned-images",
            crio_pid_file="/run/crio/crio.pid",
            cri_socket="/run/containerd/containerd.sock",
        ),
        False,
    )
    assert (request.state.record_file, request.state.lock_file, request.mco_dir) == (
        f"{host}/var/tmp/record.json",
        f"{host}/var/tmp/p.json.lock",
        f"{host}/etc/machine-config-daemon",
    )
    assert (request.dropin.path, request.dropin.pid_file) == (
        f"{host}/etc/crio/crio.conf.d/50-pinned-images",
        f"{host}/run/crio/crio.pid",
    )
    assert request.runtime.cri_socket == f"{host}/run/containerd/containerd.sock"
    assert request.runtime.host_root == str(host)


def test_every_bad_option_is_named(tmp_path):
    with pytest.raises(CollectionError) as info:
        PruneRequest.from_params(params(tmp_path, images=["x y"], keep=[""], min_age="soon"), False)
    assert len(info.value.problems) == 3


def test_without_a_record_nothing_is_removed_and_nothing_written(tmp_path):
    runtime = Runtime()
    result = prune(tmp_path, runtime, record_file=str(tmp_path / "absent-dir" / "record.json"))
    assert (runtime.removed, result["images"], result["changed"], result["record_changed"]) == ([], [], False, False)
    assert not (tmp_path / "absent-dir").exists()


def test_the_dropped_image_is_unpinned_then_removed_and_forgotten(tmp_path):
    recorded(tmp_path, WANTED, DROPPED)
    runtime = Runtime(labels={WANTED: OURS, DROPPED: OURS})
    check = prune(tmp_path, Runtime(labels={WANTED: OURS, DROPPED: OURS}), check_mode=True)
    result = prune(tmp_path, runtime)
    assert runtime.removed == [DROPPED] and runtime.labels[WANTED] == OURS
    assert result["removed"] == check["removed"] == [DROPPED]
    assert result["freed_bytes"] == check["freed_bytes"] == 1000
    assert result["pin"] == dict(method="label", changed=True, unpinned=[DROPPED])
    assert result["diff"]["before"] == f"{DROPPED}\n" and result["diff"]["after"] == ""
    assert record_names(tmp_path) == [WANTED]
    assert prune(tmp_path, runtime)["removed"] == [], "a rerun removes nothing"


def test_a_hand_pin_an_outside_image_and_a_container_keep_theirs(tmp_path):
    recorded(tmp_path, DROPPED, HAND)
    using = dict(id="c1", name="web", state="exited", image="sha256:dro", image_ref="", image_id="")
    runtime = Runtime(labels={HAND: {PIN_LABEL_KEY: "pinned"}}, containers=[using])
    result = prune(tmp_path, runtime)
    assert runtime.removed == [] and OUTSIDE in runtime.images.values()
    assert {d["image"]: d["reason"] for d in result["images"]} == {DROPPED: "in_use", HAND: "pinned"}
    assert runtime.labels[HAND] == {PIN_LABEL_KEY: "pinned"}, "a pin of someone else is not touched"


def test_an_image_gone_already_is_forgotten(tmp_path):
    recorded(tmp_path, DROPPED, "registry.example:5000/long-gone:1")
    runtime = Runtime()
    result = prune(tmp_path, runtime)
    assert result["gone"] == ["registry.example:5000/long-gone:1"] and record_names(tmp_path) == []


def test_a_runtime_error_stops_the_prune_and_not_found_does_not(tmp_path):
    recorded(tmp_path, DROPPED)
    assert prune(tmp_path, Runtime(fail_remove=NOT_FOUND))["gone"] == [DROPPED]
    recorded(tmp_path, DROPPED)
    with pytest.raises(PruneStopped) as info:
        prune(tmp_path, Runtime(fail_remove=UNKNOWN))
    assert info.value.message.startswith(f"prune stopped at {DROPPED}: RemoveImage: scripted")
    assert info.value.details["removed"] == [] and record_names(tmp_path) == [DROPPED]


def test_a_young_image_stays(tmp_path):
    write_record(str(tmp_path / "record.json"), noted({}, {}, [DROPPED], [], "r0", 1000.0))
    request = PruneRequest.from_params(params(tmp_path, min_age="1h"), False)
    result, _warnings = run_prune(request, client_factory=lambda _p: Runtime(), now=lambda: 1060.0)
    assert result["images"][0]["reason"] == "young" and result["removed"] == []


class Crio(Runtime):
    """CRI-O: an image is pinned when the drop-in CRI-O keeps (the last file that sets pinned_images) covers it."""

    runtime_name, runtime_version = "cri-o", "1.33.13"

    def __init__(self, dropin_dir, **kwargs):
        super().__init__(**kwargs)
        self.dropin_dir = dropin_dir

    def image_status(self, name):
        status = super().image_status(name)
        if status is not None:
            kept, _source = effective_pins(str(self.dropin_dir / "50-pinned-images"), [])
            own = dropin_pinned_images((self.dropin_dir / "50-pinned-images").read_text()) or []
            kept = kept or own
            status["pinned"] = covers(kept, status["repo_digests"][0])
        return status


def test_on_crio_the_dropped_entries_leave_the_drop_in_and_a_later_drop_in_keeps_its_image(tmp_path):
    recorded(tmp_path, WANTED, DROPPED, HAND)
    dropin = tmp_path / "50-pinned-images"
    dropin.write_text(render_pinned_images(sorted([WANTED, DROPPED, HAND])))
    (tmp_path / "60-by-hand").write_text(render_pinned_images(sorted([WANTED, HAND])))
    runtime = Crio(tmp_path)
    result = prune(tmp_path, runtime, pin="dropin")
    assert runtime.removed == [DROPPED]
    assert {d["image"]: d["reason"] for d in result["images"]} == {DROPPED: None, HAND: "pinned"}
    assert dropin_pinned_images(dropin.read_text()) == sorted([WANTED, HAND])
    assert result["pin"] == dict(method="dropin", changed=True, unpinned=[DROPPED])


TAG = "registry.example:5000/dropped:v1"


def test_a_recorded_tag_that_moved_removes_the_recorded_image_not_the_one_it_names_now(tmp_path):
    write_record(str(tmp_path / "record.json"), noted({}, {TAG: "sha256:dro"}, [TAG], [], "r0", 0.0))
    # The tag was pulled again and names HAND's image now; the collection's image is DROPPED's.
    runtime = Runtime(aliases={"sha256:han": TAG})
    result = prune(tmp_path, runtime)
    assert runtime.removed == [DROPPED] and HAND in runtime.images.values()
    write_record(str(tmp_path / "record.json"), noted({}, {TAG: "sha256:dro"}, [TAG], [], "r0", 0.0))
    result = prune(tmp_path, runtime)
    assert runtime.removed == [DROPPED] and result["gone"] == [TAG], "the recorded image is gone: forgotten"
    assert HAND in runtime.images.values() and record_names(tmp_path) == []


def test_a_recorded_tag_without_an_image_id_is_kept(tmp_path):
    write_record(str(tmp_path / "record.json"), noted({}, {}, [TAG], [], "r0", 0.0))
    runtime = Runtime(aliases={"sha256:dro": TAG})
    result = prune(tmp_path, runtime)
    assert runtime.removed == [] and result["images"][0]["reason"] == "other_names"
    assert "the record has no image id for " + TAG in result["images"][0]["detail"]


def test_an_image_that_has_a_name_the_record_does_not_is_kept(tmp_path):
    recorded(tmp_path, DROPPED)
    runtime = Runtime(aliases={"sha256:dro": "registry.example:5000/dropped:by-hand"})
    result = prune(tmp_path, runtime)
    assert runtime.removed == [] and result["images"][0]["reason"] == "other_names"
    assert result["images"][0]["detail"].endswith("registry.example:5000/dropped:by-hand")


def test_the_runtimes_pause_image_is_kept(tmp_path):
    recorded(tmp_path, DROPPED)
    runtime = Runtime(sandbox_image=DROPPED)
    result = prune(tmp_path, runtime)
    assert runtime.removed == [] and result["images"][0]["reason"] == "in_use"
    assert result["images"][0]["detail"] == "the runtime's pause image (sandboxImage of its CRI config)"


class OldContainerd(Runtime):
    runtime_version = "1.6.20"


def test_a_runtime_that_names_no_pause_image_and_reports_no_pins_is_not_pruned_without_keep(tmp_path):
    recorded(tmp_path, DROPPED)
    runtime = OldContainerd()
    with pytest.raises(CollectionError, match="names no pause image .* Name the pause image in keep"):
        prune(tmp_path, runtime)
    assert runtime.removed == [] and record_names(tmp_path) == [DROPPED]
    prune(tmp_path, runtime, keep=["registry.k8s.io/pause:*"])
    assert runtime.removed == [DROPPED]


class LateContainerd(Runtime):
    """containerd applies a label change from its event stream: CRI reports it ``late`` ImageStatus calls later."""

    def __init__(self, late, **kwargs):
        super().__init__(**kwargs)
        self.late, self.reported = late, {}

    def update_labels(self, record, labels, keys):
        super().update_labels(record, labels, keys)
        self.reported[record["name"]] = self.late

    def image_status(self, name):
        status = super().image_status(name)
        if status is not None and self.reported.get(self.images[status["id"]], 0) > 0:
            self.reported[self.images[status["id"]]] -= 1
            status["pinned"] = True
        return status


def test_the_label_unpin_waits_until_cri_reports_it(tmp_path):
    recorded(tmp_path, DROPPED)
    runtime = LateContainerd(2, labels={DROPPED: OURS})
    result = prune(tmp_path, runtime)
    assert runtime.removed == [DROPPED] and result["images"][0]["reason"] is None


def test_a_drop_in_pattern_is_never_dropped_and_keeps_its_image(tmp_path):
    recorded(tmp_path, DROPPED)
    dropin = tmp_path / "50-pinned-images"
    pattern = "registry.example:5000/drop*"
    dropin.write_text(render_pinned_images([WANTED, pattern]))
    runtime = Crio(tmp_path)
    result = prune(tmp_path, runtime, pin="dropin")
    assert runtime.removed == [] and result["images"][0]["reason"] == "pinned"
    assert dropin_pinned_images(dropin.read_text()) == [WANTED, pattern]


class BrokenAfterUnpin(Runtime):
    def list_containers(self):
        if not any(PIN_LABEL_KEY in labels for labels in self.labels.values()):
            raise CriError("ListContainers: scripted", UNKNOWN)
        return []


def test_an_error_after_the_unpin_reports_the_unpin(tmp_path):
    recorded(tmp_path, DROPPED)
    runtime = BrokenAfterUnpin(labels={DROPPED: OURS})
    with pytest.raises(PruneStopped) as info:
        prune(tmp_path, runtime)
    assert info.value.message == "prune stopped after the unpin: ListContainers: scripted"
    assert info.value.details["changed"] is True and info.value.details["pin"]["unpinned"] == [DROPPED]
    assert runtime.removed == [] and record_names(tmp_path) == [DROPPED]


def test_a_record_that_cannot_be_written_after_a_removal_error_still_reports_the_result(tmp_path, monkeypatch):
    recorded(tmp_path, DROPPED)

    def failing(path, entries, check_mode=False):
        raise CollectionError("scripted: disk full")

    monkeypatch.setattr(prune_run, "write_record", failing)
    with pytest.raises(PruneStopped) as info:
        prune(tmp_path, Runtime(fail_remove=UNKNOWN))
    assert info.value.message.endswith("; the record was not updated (scripted: disk full)")
    assert info.value.details["removed"] == []


def test_by_default_the_prune_locks_and_reads_the_state_directory(tmp_path):
    """An ad hoc prune with only images: the prefetch's default lock and record, in the state directory."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    write_record(str(state / "pinned-images-record.json"), noted({}, {}, [DROPPED], [], "r0", 0.0))
    request = PruneRequest.from_params(params(tmp_path, lock_file=None, record_file=None), False)
    held = NodeLock(str(state / "prefetch.lock"), "prefetch-1").acquire()
    try:
        with pytest.raises(NodeLockError, match="run prefetch-1"):
            run_prune(request, client_factory=lambda _p: Runtime())
    finally:
        held.release()
    result, warnings = run_prune(request, client_factory=lambda _p: Runtime())
    assert result["record_file"] == str(state / "pinned-images-record.json")
    assert result["removed"] and warnings == []


class LateContainer(Runtime):
    """A container that starts with the dropped image after the prune decided (its third ListContainers)."""

    calls = 0

    def list_containers(self):
        self.calls += 1
        late = dict(id="c2", name="late", state="created", image=DROPPED, image_ref="", image_id="")
        return [late] if self.calls >= 3 else []


def test_a_container_started_after_the_decision_keeps_its_image(tmp_path):
    recorded(tmp_path, DROPPED, HAND)
    runtime = LateContainer()
    result = prune(tmp_path, runtime)
    assert runtime.removed == [HAND]
    assert {d["image"]: (d["action"], d["detail"]) for d in result["images"]}[DROPPED] == (
        "keep",
        "used by container late (created)",
    )
    assert result["kept"] == [DROPPED] and record_names(tmp_path) == [DROPPED]
