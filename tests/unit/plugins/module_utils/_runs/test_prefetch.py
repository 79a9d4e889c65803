# SPDX-License-Identifier: GPL-3.0-or-later
"""_runs/prefetch: the checks before the runtime, and one whole run against a scripted runtime.

Pulls through real containerd, the estimate against a real registry and a full tmpfs are in tests/functional.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import LOCKED, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock, NodeLockError
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import dropin_pinned_images
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pace import PROBE_PREFIX, PaceError
from ansible_collections.pinned.images.plugins.module_utils._prefetch.preflight import DiskGuardRefused, pull_sources
from ansible_collections.pinned.images.plugins.module_utils._prune.record import noted, write_record
from ansible_collections.pinned.images.plugins.module_utils._runs.prefetch import PrefetchRequest, run_prefetch
from fixtures.scripted_runtime import ScriptedRuntime

DIGEST = "sha256:" + "d" * 64
PRESENT = f"registry.example:5000/present@{DIGEST}"
MISSING = f"registry.example:5000/missing@{DIGEST}"


def params(tmp_path, **overrides):
    """The module's parameters, with an empty auth file and registries.conf of the test's own."""
    (tmp_path / "auth.json").write_text('{"auths": {}}')
    (tmp_path / "registries.conf").write_text("")
    base = dict(
        images=[PRESENT, MISSING],
        require_digest=True,
        concurrency=2,
        pull_pause=0.0,
        retries=0,
        retry_delay=0.0,
        retry_max_delay=0.0,
        pull_timeout=0.0,
        fail_on_error=True,
        disk_guard="free_only",
        min_free="0",
        expansion_factor=2.0,
        image_store_path=None,
        platform=None,
        progress_file=None,
        lock_file=None,
        state_dir=str(tmp_path / "state"),
        former_record_file=None,
        run_id="r1",
        auth_file=str(tmp_path / "auth.json"),
        registries_conf=str(tmp_path / "registries.conf"),
        registry_mirrors=[],
        registry_certs_dirs=[],
        registry_timeout=5.0,
        cri_socket=None,
        cri_connect_timeout=1.0,
        cri_timeout=1.0,
        pin="none",
        dropin_path=str(tmp_path / "50-pinned-images"),
        crio_reload="none",
        crio_pid_file=None,
        old_containerd="fail",
        settle_timeout=1.0,
        mco_dir=str(tmp_path / "machine-config-daemon"),
        containerd_config=None,
        containerd_config_path=None,
        allow_empty=False,
        pace=False,
        pace_path=str(tmp_path / "etcd"),
        pace_bound_ms=10.0,
        pace_percentile=99.0,
        pace_window=30.0,
        pace_interval=0.1,
        pace_max_wait=30.0,
        pace_on_max_wait="continue",
    )
    base.update(overrides)
    return base


class Runtime(ScriptedRuntime):
    """The CRI calls run_prefetch makes, and the containerd image records of the label pin; the image filesystem
    is ``image_fs``."""

    endpoint = "unix:///scripted.sock"

    def __init__(self, image_fs, name="scripted", version="1", fail_pulls=False):
        self.image_fs = image_fs
        self.runtime_name, self.runtime_version = name, version
        self.fail_pulls = fail_pulls
        self.pulled = []
        self.labels = {}
        self.status_calls = []
        # CRI-O: whether it runs the drop-in as written (False: an earlier reload failed).
        self.applied = True

    def image_fs_info(self):
        return [dict(mountpoint=self.image_fs)]

    def list_images(self):
        return [dict(id="sha256:1", repo_tags=[], repo_digests=[PRESENT], size=1, pinned=self._pinned(PRESENT))]

    def image_status(self, image):
        self.status_calls.append(image)
        if image == MISSING and image not in self.pulled:
            return None
        return dict(id=image, repo_tags=[], repo_digests=[image], size=7, pinned=self._pinned(image))

    def _pinned(self, image):
        """The label (containerd); for CRI-O, the drop-in in ``image_fs`` (as if CRI-O had read it)."""
        if self.runtime_name != "cri-o":
            return bool(self.labels.get(image))
        dropin = Path(self.image_fs) / "50-pinned-images"
        return self.applied and dropin.exists() and image in (dropin_pinned_images(dropin.read_text()) or [])

    def pull_image(self, image, auth=None, timeout=None):
        if self.fail_pulls:
            raise CriError("scripted failure")
        self.pulled.append(image)
        return "sha256:pulled"

    def list_records(self):
        return [dict(name=name, labels=dict(self.labels.get(name, {}))) for name in [PRESENT, *self.pulled]]

    def update_labels(self, record, labels, keys):
        self.labels[record["name"]] = dict(labels)


def test_every_option_is_checked_before_the_runtime(tmp_path):
    with pytest.raises(CollectionError, match="concurrency must be at least 1, got 0"):
        PrefetchRequest.from_params(params(tmp_path, concurrency=0), False)
    with pytest.raises(CollectionError) as info:
        PrefetchRequest.from_params(params(tmp_path, images=["x y", "a:latest"]), False)
    assert [p.split(":")[0] for p in info.value.problems] == ["images[0]", "images[1]"]
    with pytest.raises(CollectionError, match="min_free: size 'lots' is not understood"):
        PrefetchRequest.from_params(params(tmp_path, min_free="lots"), False)
    with pytest.raises(CollectionError, match="platform 'amd64' is not os/architecture"):
        PrefetchRequest.from_params(params(tmp_path, platform="amd64"), False)


def test_a_reserve_without_its_unit_is_taken_as_bytes_with_a_warning(tmp_path):
    request = PrefetchRequest.from_params(params(tmp_path, min_free="16"), False)
    assert request.guard.min_free == "16"
    assert [w for w in request.warnings if w.startswith("min_free: 16 has no unit")] == [
        "min_free: 16 has no unit, so it means 16 bytes, which keeps almost nothing free; did you mean 16Gi? Give "
        "the unit (16Gi, 500Mi), or 0 for no reserve"
    ]
    assert PrefetchRequest.from_params(params(tmp_path, min_free="16Gi"), False).warnings == []


def test_every_bad_option_is_named_in_one_error(tmp_path):
    with pytest.raises(CollectionError) as info:
        PrefetchRequest.from_params(
            params(tmp_path, concurrency=0, min_free="lots", platform="amd64", registry_timeout=0, images=["x y"]),
            False,
        )
    problems = info.value.problems
    assert len(problems) == 5, problems
    assert problems[0] == "concurrency must be at least 1, got 0"
    assert any(p.startswith("images[0]") for p in problems) and any("'lots'" in p for p in problems)
    assert any("'amd64'" in p for p in problems) and "registry_timeout must be above 0, got 0" in problems


def test_a_run_reads_the_image_filesystem_once_and_pulls_the_missing_image(tmp_path):
    runtime = Runtime(str(tmp_path))
    request = PrefetchRequest.from_params(params(tmp_path), False)
    outcome = run_prefetch(request, diff=True, client_factory=lambda _params: runtime)
    assert runtime.pulled == [MISSING]
    assert [i["status"] for i in outcome.result["images"]] == ["present", "pulled"]
    assert outcome.result["changed"] and outcome.failure is None
    assert outcome.result["disk_guard"]["filesystem"] == str(tmp_path)
    assert outcome.result["diff"]["after"] == "".join(sorted(f"{i}\n" for i in (PRESENT, MISSING)))


def test_the_disk_guard_refuses_before_any_pull(tmp_path):
    runtime = Runtime(str(tmp_path))
    request = PrefetchRequest.from_params(params(tmp_path, min_free="100%"), False)
    with pytest.raises(DiskGuardRefused) as info:
        run_prefetch(request, client_factory=lambda _params: runtime)
    assert runtime.pulled == [] and info.value.details["disk_guard"]["ok"] is False


def test_each_runtime_reads_its_own_registry_files(tmp_path):
    """CRI-O: registries.conf; containerd: its hosts, found from CRI Status (1.x), the config file (2.x) or the
    option, and only the option's registries_conf / registry_mirrors as overrides."""
    asked = []

    def status(config):
        return lambda: asked.append(1) or {"config": json.dumps(config)}

    request = PrefetchRequest.from_params(params(tmp_path), False)
    sources, files, _warnings = pull_sources(request.sources, {"runtime_name": "cri-o"}, status({}))
    assert sources is request.registries and files == {
        "sources_from": f"registries.conf: {tmp_path / 'registries.conf'}"
    }
    containerd = {"runtime_name": "containerd", "runtime_version": "1.7.24"}
    overridden = PrefetchRequest.from_params(params(tmp_path, containerd_config_path="/opt/a:/opt/b"), False)
    sources, files, _warnings = pull_sources(overridden.sources, containerd, status({}))
    assert (sources.config.roots, asked) == (("/opt/a", "/opt/b"), [])
    assert sources.overrides.files == [str(tmp_path / "registries.conf")]
    mirrors = {"registry": {"configPath": "", "mirrors": {"docker.io": {"endpoint": ["https://m"]}}}}
    sources, files, warnings = pull_sources(request.sources, containerd, status(mirrors))
    assert (sources.config.roots, asked, files["sources_from"]) == (
        (),
        [1],
        "containerd hosts.toml under config_path none (from CRI Status)",
    )
    assert "deprecated registry.mirrors" in warnings[0]
    config = tmp_path / "config.toml"
    config.write_text('version = 3\n[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/etc/c"\n')
    configured = PrefetchRequest.from_params(params(tmp_path, containerd_config=str(config)), False)
    sources, files, _warnings = pull_sources(configured.sources, dict(containerd, runtime_version="2.1.9"), status({}))
    assert sources.config.roots == ("/etc/c",) and f"{config}, the containerd_config option" in files["sources_from"]
    assert files["pull_mode"] == "transfer"


@pytest.mark.parametrize("pin", ["auto", "dropin", "label"])
def test_no_images_with_a_pin_fails_before_the_runtime_is_contacted(tmp_path, pin):
    with pytest.raises(CollectionError) as info:
        PrefetchRequest.from_params(params(tmp_path, images=[], pin=pin), False)
    assert info.value.message.startswith(f"images is empty: with pin={pin} that would remove every pin of this node")
    assert "allow_empty=true" in info.value.message
    # Opted into, or without a pin: no error.
    PrefetchRequest.from_params(params(tmp_path, images=[], pin=pin, allow_empty=True), False)
    PrefetchRequest.from_params(params(tmp_path, images=[], pin="none"), False)


@pytest.mark.parametrize("mode", ["free_only", "estimate"])
def test_with_nothing_to_pull_the_disk_guard_passes_and_says_how_much_is_free(tmp_path, mode):
    # Below the reserve (100% of the disk), but every image is there: a no-op rerun must not fail.
    only_present = params(tmp_path, images=[PRESENT], min_free="100%", disk_guard=mode)
    outcome = run_prefetch(
        PrefetchRequest.from_params(only_present, False),
        only_present,
        client_factory=lambda _params: Runtime(str(tmp_path)),
    )
    guard = outcome.result["disk_guard"]
    assert guard["ok"] is True and guard["registry_requests"] == 0
    assert guard["message"].startswith("nothing to pull, the disk guard passes: ") and " free of " in guard["message"]


def test_a_held_lock_fails_with_the_locked_kind(tmp_path):
    lock_file = str(tmp_path / "prefetch.lock")
    held = NodeLock(lock_file, "other").acquire()
    try:
        request = PrefetchRequest.from_params(params(tmp_path, lock_file=lock_file), False)
        with pytest.raises(NodeLockError) as info:
            run_prefetch(request, client_factory=lambda _p: Runtime("/"))
        assert info.value.details == {"error_kind": LOCKED}
    finally:
        held.release()


def run(tmp_path, runtime, check_mode=False, run_command=None, **overrides):
    options = params(tmp_path, **overrides)
    request = PrefetchRequest.from_params(options, check_mode)
    return run_prefetch(request, diff=True, client_factory=lambda _params: runtime, run_command=run_command)


def test_auto_pins_crio_in_the_drop_in_after_the_pulls_and_reloads_once(tmp_path):
    runtime, reloads = Runtime(str(tmp_path), "cri-o", "1.31.0"), []
    dropin = tmp_path / "50-pinned-images"
    outcome = run(
        tmp_path,
        runtime,
        pin="auto",
        crio_reload="systemd",
        run_command=lambda argv: reloads.append(argv) or (0, "", ""),
    )
    pin = outcome.result["pin"]
    assert runtime.pulled == [MISSING] and outcome.pin_failure is None
    assert (pin["method"], pin["ran"], pin["changed"], pin["reloaded"]) == ("dropin", True, True, True)
    assert pin["images"] == sorted([PRESENT, MISSING]) and pin["path"] == str(dropin)
    assert MISSING in dropin.read_text() and reloads == [["systemctl", "reload", "crio"]]
    assert outcome.result["diff"][1]["after"] == dropin.read_text()
    # The pin's wall-clock times come after the pull's, on the same clock (the report's timeline).
    pulled = [entry for entry in outcome.result["images"] if entry["status"] == "pulled"]
    assert pulled[0]["finished"] <= pin["started"] <= pin["finished"]

    again = run(tmp_path, runtime, pin="auto", crio_reload="systemd", run_command=reloads.append)
    assert not again.result["changed"] and not again.result["pin"]["changed"] and len(reloads) == 1
    assert again.pin_failure is None and again.result["pin"]["cri_pinned"] == {PRESENT: True, MISSING: True}


def test_a_rerun_reloads_crio_once_when_its_dropin_is_as_wanted_but_cri_disagrees(tmp_path):
    """An earlier reload failed (a stale pid file): the drop-in is written, CRI-O runs without it. The check says
    the pins would change; the rerun reloads once and CRI reports every image pinned."""
    runtime, reloads = Runtime(str(tmp_path), "cri-o", "1.31.0"), []
    runtime.pulled.append(MISSING)
    failed = run(tmp_path, runtime, pin="auto", crio_reload="systemd", run_command=lambda argv: (1, "", "stale pid"))
    assert "was written, but CRI-O was not reloaded" in failed.pin_failure
    runtime.applied = False  # CRI-O still runs its configuration of before the write

    def reload(argv):
        reloads.append(argv)
        runtime.applied = True
        return 0, "", ""

    check = run(tmp_path, runtime, check_mode=True, pin="auto", crio_reload="systemd", run_command=pytest.fail)
    assert check.pin_failure is None and check.result["pin"]["changed"] and check.result["changed"]
    healed = run(tmp_path, runtime, pin="auto", crio_reload="systemd", run_command=reload)
    pin = healed.result["pin"]
    assert healed.pin_failure is None and (pin["changed"], pin["reloaded"], len(reloads)) == (True, True, 1)
    assert pin["cri_pinned"] == {PRESENT: True, MISSING: True}
    assert any("was as wanted but CRI-O did not apply it" in warning for warning in healed.warnings)


def test_check_mode_reports_the_pin_and_writes_nothing(tmp_path):
    runtime = Runtime(str(tmp_path), "cri-o", "1.31.0")
    runtime.pulled.append(MISSING)  # every image is on the node
    outcome = run(tmp_path, runtime, check_mode=True, pin="dropin")
    assert outcome.result["changed"] and outcome.result["pin"]["changed"] and outcome.result["pin"]["ran"]
    assert not (tmp_path / "50-pinned-images").exists()


def test_no_pin_while_an_image_is_missing(tmp_path):
    runtime = Runtime(str(tmp_path), "cri-o", "1.31.0", fail_pulls=True)
    outcome = run(tmp_path, runtime, pin="dropin", fail_on_error=False)
    assert outcome.failure and outcome.pin_failure is None
    pin = outcome.result["pin"]
    assert {key: pin[key] for key in pin if key not in ("started", "finished")} == dict(
        method="dropin",
        ran=False,
        changed=False,
        images=[],
        path=None,
        reloaded=False,
        records=None,
        cri_pinned={},
        mco_managed=None,
    )
    assert not (tmp_path / "50-pinned-images").exists()
    # In check mode an image that would be pulled is not on the node either.
    planned = run(tmp_path, Runtime(str(tmp_path), "cri-o", "1.31.0"), check_mode=True, pin="dropin")
    assert planned.result["totals"]["would_pull"] == 1 and not planned.result["pin"]["ran"]


def test_auto_sets_the_containerd_label(tmp_path):
    runtime = Runtime(str(tmp_path), "containerd", "1.7.24~ds1")
    outcome = run(tmp_path, runtime, pin="auto")
    pin = outcome.result["pin"]
    assert (pin["method"], pin["changed"], pin["path"]) == ("label", True, None)
    assert sorted(pin["records"]["pinned"]) == sorted([PRESENT, MISSING])
    assert runtime.labels[MISSING]["io.cri-containerd.pinned"] == "pinned"
    # The present check found PRESENT in ListImages: the pin asks ImageStatus about it only once, when it waits
    # for CRI to report the label (before, it also asked first whether it was there).
    assert runtime.status_calls.count(PRESENT) == 1


def test_a_failed_reload_fails_the_pin_but_keeps_the_pulls(tmp_path):
    runtime = Runtime(str(tmp_path), "cri-o", "1.31.0")
    outcome = run(tmp_path, runtime, pin="dropin", crio_reload="systemd", run_command=lambda argv: (1, "", "no crio"))
    assert "was not reloaded" in outcome.pin_failure and "no crio" in outcome.pin_failure
    assert outcome.result["pin"]["changed"] and outcome.result["changed"]
    assert outcome.result["totals"]["pulled"] == 1 and (tmp_path / "50-pinned-images").exists()
    pin = outcome.result["pin"]
    assert pin["images"] == sorted([PRESENT, MISSING]) and pin["path"] == str(tmp_path / "50-pinned-images")


class Unreported(Runtime):
    """Stores the labels but never reports an image pinned."""

    def image_status(self, image):
        status = super().image_status(image)
        return status and dict(status, pinned=False)


def test_labels_cri_never_reports_fail_the_pin_and_are_reported_written(tmp_path):
    runtime = Unreported(str(tmp_path), "containerd", "1.7.24~ds1")
    runtime.pulled.append(MISSING)  # nothing to pull: only the pin changes the node
    outcome = run(tmp_path, runtime, pin="label", settle_timeout=0.1)
    assert "CRI still reports" in outcome.pin_failure
    pin = outcome.result["pin"]
    assert outcome.result["changed"] and pin["changed"] and pin["images"] == sorted([PRESENT, MISSING])
    assert pin["records"]["pinned"] == sorted([PRESENT, MISSING]) and set(runtime.labels) == {PRESENT, MISSING}


def test_a_signal_reload_needs_its_pid_file(tmp_path):
    with pytest.raises(CollectionError, match="crio_reload=signal needs crio_pid_file"):
        PrefetchRequest.from_params(params(tmp_path, pin="auto", crio_reload="signal"), False)


def mco_node(tmp_path):
    """The machine-config-daemon's record of an applied config, as on an MCO-managed node."""
    directory = tmp_path / "machine-config-daemon"
    directory.mkdir()
    (directory / "currentconfig").write_text('{"metadata": {"name": "rendered-worker-1"}, "spec": {"config": {}}}')
    return directory


def test_auto_on_an_mco_node_prefetches_and_leaves_the_drop_in_to_the_mco(tmp_path):
    mco_node(tmp_path)
    runtime, reloads = Runtime(str(tmp_path), "cri-o", "1.31.0"), []
    outcome = run(tmp_path, runtime, pin="auto", crio_reload="systemd", run_command=reloads.append)
    pin = outcome.result["pin"]
    assert runtime.pulled == [MISSING] and outcome.result["changed"]
    assert (pin["method"], pin["ran"], pin["changed"], pin["path"]) == ("none", False, False, None)
    assert "rendered-worker-1" in pin["mco_managed"] and outcome.warnings == []
    assert not (tmp_path / "50-pinned-images").exists() and reloads == []


def test_an_explicit_drop_in_on_an_mco_node_warns_and_writes(tmp_path):
    mco_node(tmp_path)
    runtime = Runtime(str(tmp_path), "cri-o", "1.31.0")
    outcome = run(tmp_path, runtime, pin="dropin", crio_reload="none")
    assert outcome.result["pin"]["method"] == "dropin" and outcome.result["pin"]["changed"]
    assert (tmp_path / "50-pinned-images").exists()
    assert [w for w in outcome.warnings if "managed by the machine-config-operator" in w]
    assert run(tmp_path, Runtime(str(tmp_path), "cri-o", "1.31.0"), pin="auto").result["pin"]["mco_managed"]


def test_the_record_in_the_state_directory_names_what_the_run_pulled_and_pinned(tmp_path):
    """The prune's record: the pulled image, and the pinned ones (the present one too), mode 0600, in the state
    directory the run made (mode 0700) beside its lock; none in check mode, which makes nothing."""
    state = tmp_path / "state"
    record = state / "pinned-images-record.json"
    run(tmp_path, Runtime(str(tmp_path)), check_mode=True)
    assert not state.exists()
    run(tmp_path, Runtime(str(tmp_path), "containerd", "1.7.24"), pin="label")
    images = json.loads(record.read_text())["images"]
    assert sorted(images) == sorted([PRESENT, MISSING])
    assert (images[MISSING]["pulled"], images[MISSING]["pinned"], images[PRESENT]["pulled"]) == (True, True, False)
    assert images[MISSING]["first_run"] == "r1" and images[MISSING]["image_id"] == "sha256:pulled"
    assert record.stat().st_mode & 0o777 == 0o600
    assert state.stat().st_mode & 0o777 == 0o700 and (state / "prefetch.lock").exists()


def test_the_state_directory_s_lock_stops_a_second_run(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    held = NodeLock(str(state / "prefetch.lock"), "ad-hoc-1").acquire()
    try:
        with pytest.raises(NodeLockError, match="another prefetch is running on this node .*run ad-hoc-1"):
            run(tmp_path, Runtime(str(tmp_path)))
    finally:
        held.release()


def test_a_former_record_is_moved_into_the_state_directory(tmp_path):
    former = tmp_path / "var-tmp" / "pinned-images-record.json"
    former.parent.mkdir()
    write_record(str(former), noted({}, {"quay.io/old/x:1": "sha256:old"}, ["quay.io/old/x:1"], [], "r0", 1.0))
    run(tmp_path, Runtime(str(tmp_path)), former_record_file=str(former))
    images = json.loads((tmp_path / "state" / "pinned-images-record.json").read_text())["images"]
    assert sorted(images) == sorted(["quay.io/old/x:1", MISSING]) and not former.exists()


def test_without_a_pin_only_the_pulled_images_are_recorded_and_a_bad_record_warns(tmp_path):
    record = tmp_path / "record.json"
    run(tmp_path, Runtime(str(tmp_path)), record_file=str(record))
    assert list(json.loads(record.read_text())["images"]) == [MISSING]
    record.write_text("not json")
    record.chmod(0o600)
    runtime = Runtime(str(tmp_path))
    outcome = run(tmp_path, runtime, record_file=str(record))
    assert any(f"not recorded for a prune: the prune record {record} is not JSON" in w for w in outcome.warnings)
    assert record.read_text() == "not json"


def test_under_host_root_every_node_path_and_those_the_node_reports_are_the_hosts(tmp_path):
    host = tmp_path / "host"
    (host / "var/tmp").mkdir(parents=True)
    (host / "etc/containerd").mkdir(parents=True)
    (host / "etc/containerd/config.toml").write_text(
        'version = 3\n[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/etc/containerd/certs.d"\n'
    )
    given = params(
        tmp_path,
        host_root=str(host),
        auth_file=None,
        registries_conf=None,
        progress_file="/var/tmp/progress.json",
        state_dir="/var/lib/pinned-images/state",
        dropin_path="/etc/crio/crio.conf.d/50-pinned-images",
        crio_pid_file="/run/crio/crio.pid",
        mco_dir="/etc/machine-config-daemon",
        pace=True,
        pace_path="/var/lib/etcd",
    )
    request = PrefetchRequest.from_params(given, False)
    assert request.pace is not None and request.pace.path == f"{host}/var/lib/etcd"
    assert request.pulls.progress_file == f"{host}/var/tmp/progress.json"
    # The default state directory, under host_root too.
    assert request.state.lock_file == f"{host}/var/lib/pinned-images/state/prefetch.lock"
    assert request.state.record_file == f"{host}/var/lib/pinned-images/state/pinned-images-record.json"
    assert (request.dropin.path, request.dropin.pid_file) == (
        f"{host}/etc/crio/crio.conf.d/50-pinned-images",
        f"{host}/run/crio/crio.pid",
    )
    assert request.mco_dir == f"{host}/etc/machine-config-daemon" and request.runtime.host_root == str(host)
    # containerd 2.x: the default config file under host_root, and the config_path it names is a host path too.
    containerd = {"runtime_name": "containerd", "runtime_version": "2.1.9"}
    sources, files, _warnings = pull_sources(request.sources, containerd, lambda: {})
    assert sources.config.roots == (f"{host}/etc/containerd/certs.d",)
    # Named as the host's path, with where it came from: no process serves a socket here.
    assert "/etc/containerd/config.toml, containerd's default path (no process" in files["sources_from"]
    # containerd 1.7: the config_path CRI Status reports.
    status = {"config": json.dumps({"registry": {"configPath": "/etc/containerd/certs.d:/etc/docker/certs.d"}})}
    sources, _files, _warnings = pull_sources(
        request.sources, dict(containerd, runtime_version="1.7.24"), lambda: status
    )
    assert sources.config.roots == (f"{host}/etc/containerd/certs.d", f"{host}/etc/docker/certs.d")
    with pytest.raises(CollectionError, match="progress_file: directory .*/host/missing does not exist"):
        PrefetchRequest.from_params(dict(given, progress_file="/missing/p.json"), False)


def test_every_bad_pace_option_is_named(tmp_path):
    bad = dict(pace_bound_ms=0, pace_percentile=0, pace_window=-1, pace_max_wait=0, pace_interval=-0.1)
    with pytest.raises(CollectionError) as info:
        PrefetchRequest.from_params(params(tmp_path, pace=True, **bad), False)
    assert sorted(info.value.problems) == [
        "pace_bound_ms must be above 0, got 0",
        "pace_interval must be at least 0, got -0.1",
        "pace_max_wait must be above 0, got 0",
        "pace_percentile must be above 0 and at most 100, got 0",
        "pace_window must be above 0, got -1",
    ]
    assert PrefetchRequest.from_params(params(tmp_path), False).pace is None


# A bound no disk reaches: what these tests check must not depend on this machine's load.
CALM = dict(pace=True, pace_bound_ms=60000.0, pace_interval=0.001)


def test_the_pace_probes_its_directory_while_pulling_and_reports(tmp_path):
    etcd = tmp_path / "etcd"
    etcd.mkdir()
    outcome = run(tmp_path, Runtime(str(tmp_path)), **CALM)
    pace = outcome.result["pace"]
    assert (pace["path"], pace["source"], pace["probe"]) == (str(etcd), "path", "fdatasync")
    assert pace["latency_ms"]["count"] >= 3 and len(pace["samples"]) == pace["latency_ms"]["count"]
    assert pace["bound_ms"] == 60000.0 and pace["timed_out"] == [] and pace["error"] is None
    images = outcome.result["images"]
    assert [image["status"] for image in images] == ["present", "pulled"]
    assert images[0]["waited"] == 0.0 and images[1]["waited"] >= 0.0
    assert pace["waited_seconds"] == images[1]["waited"]
    assert list(etcd.iterdir()) == []


def test_without_its_directory_the_pace_probes_the_image_store(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    outcome = run(tmp_path, Runtime(str(store)), **CALM)
    assert (outcome.result["pace"]["path"], outcome.result["pace"]["source"]) == (str(store), "image_store")
    assert list(store.iterdir()) == []


def test_a_pace_that_cannot_probe_fails_before_any_pull(tmp_path):
    runtime = Runtime(str(tmp_path / "no-store"))
    with pytest.raises(PaceError, match="pace_path .*/etcd is not a directory"):
        run(tmp_path, runtime, disk_guard="off", **CALM)
    assert runtime.pulled == []


@pytest.mark.parametrize("check_mode", [True, False], ids=["check_mode", "nothing_to_pull"])
def test_no_pace_without_pulls(tmp_path, check_mode):
    etcd = tmp_path / "etcd"
    etcd.mkdir()
    images = [PRESENT, MISSING] if check_mode else [PRESENT]
    outcome = run(tmp_path, Runtime(str(tmp_path)), check_mode=check_mode, images=images, **CALM)
    assert "pace" not in outcome.result
    assert not [name for name in etcd.iterdir() if name.name.startswith(PROBE_PREFIX)]
