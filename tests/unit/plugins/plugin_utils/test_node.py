# SPDX-License-Identifier: GPL-3.0-or-later
"""The node role's logic: wanted images, pin option, the step after the check, node_result and its line, the prune."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._node_python.paths import DEFAULT_DIR, ENV_DIR
from ansible_collections.pinned.images.plugins.plugin_utils._node import (
    call_error,
    call_problems,
    failure_line,
    next_step,
    node_host_path,
    node_result,
    pin_option,
    prefetch_args,
    prune_blocker,
    prune_files,
    python_deps_dir,
    python_dir_env,
    result_line,
    wanted_images,
)
from ansible_collections.pinned.images.plugins.plugin_utils._report_html import render_page
from ansible_collections.pinned.images.plugins.plugin_utils._results import report_lines


def report_row(row):
    """The report table's row of one node."""
    totals = dict(nodes=1, ok=1, pulled=1, would_pull=0, present=1, failed_images=0, bytes=0, node_seconds=0.0)
    return report_lines([row], totals)[1]


A = "quay.io/org/a@sha256:" + "a" * 64
B = "quay.io/org/b@sha256:" + "b" * 64
C = "quay.io/org/c@sha256:" + "c" * 64
TOTALS = dict(requested=2, present=1, pulled=1, failed=0, skipped=0, would_pull=0, bytes_pulled=3145728, seconds=1.25)
RUNTIME = dict(runtime_name="containerd", runtime_version="1.7.24")
KEYS = {
    "node",
    "control_plane",
    "runtime",
    "status",
    "error",
    "node_error",
    "problems",
    "requested",
    "present",
    "pulled",
    "failed",
    "would_pull",
    "bytes",
    "seconds",
    "started",
    "finished",
    "changed",
    "pinned",
    "pin_method",
    "pin_reason",
    "dropin",
    "mco_managed",
    "sets",
    "images",
    "runtime_version",
    "pull_started",
    "pull_finished",
    "pin_started",
    "pin_finished",
    "pace",
    "pruned",
    "prune_kept",
    "freed_bytes",
    "changed_by_prune",
    "prune_skipped",
}


def result(results, error="", check_mode=False, images=(A, B)):
    return node_result(results, "w1", True, check_mode, error, list(images), [{"name": "s", "images": [A]}], 10.0)


def prefetch(totals=None, images=None, pin=None, **extra):
    return dict(
        changed=False,
        totals=dict(TOTALS, **(totals or {})),
        runtime=RUNTIME,
        images=images or [dict(image=A, status="present"), dict(image=B, status="pulled")],
        pin=pin or dict(method="none", ran=False, changed=False, images=[], path=None),
        **extra,
    )


def test_wanted_images_keep_the_own_images_first_and_each_once():
    assert wanted_images([B, A], [{"name": "s", "images": [A, C]}, {"name": "t"}]) == [B, A, C]


@pytest.mark.parametrize(
    "node_pin, option",
    [("auto", "auto"), ("true", "dropin"), (True, "dropin"), ("false", "none"), (False, "none"), ("label", "label")],
)
def test_pin_option(node_pin, option):
    assert pin_option(node_pin) == option


def test_an_unknown_pin_value_is_refused():
    with pytest.raises(ValueError, match="node_pin must be one of"):
        pin_option("sometimes")


def test_next_step_after_the_check():
    assert next_step(prefetch()) == "none"
    assert next_step(prefetch(totals=dict(would_pull=1))) == "pull"
    assert next_step(prefetch(pin=dict(method="dropin", ran=True, changed=True))) == "pin"
    assert next_step(dict(failed=True, msg="no socket")) == "none"
    assert next_step(dict(unreachable=True, msg="gone")) == "none"
    assert next_step(prefetch(totals=dict(would_pull=1)), True) == "none"


# The CRI-O check's result when a later drop-in voids the pins, as the role registers it: failed_when: false has
# cleared ``failed``; the module's message, problems and pin error are all that is left of its failure.
OVERRIDDEN = "pinning with the dropin method failed: CRI-O reads /etc/crio/crio.conf.d/99-other after ..."


def overridden_check():
    return prefetch(
        totals=dict(present=2, pulled=0),
        images=[dict(image=A, status="present"), dict(image=B, status="present")],
        pin=dict(method="dropin", ran=True, changed=False, images=[A, B], error=OVERRIDDEN[38:]),
        failed=False,
        failed_when_result=False,
        msg=OVERRIDDEN,
        problems=[OVERRIDDEN],
        overridden_by=["/etc/crio/crio.conf.d/99-other"],
    )


def test_a_failed_check_that_carries_totals_fails_the_node_with_its_message():
    out = result([overridden_check(), {}, {}])
    assert out["status"] == "failed"
    assert out["error"] == out["node_error"] == OVERRIDDEN
    assert out["problems"] == [OVERRIDDEN]
    assert next_step(overridden_check()) == "none"
    assert "99-other" in result_line(out)
    assert prune_blocker([overridden_check(), {}, {}]) == f"the prefetch did not complete ({OVERRIDDEN})"


def test_every_call_keeps_its_own_failure_whatever_else_its_result_holds():
    # A pin error without the module's message still fails the call.
    assert call_error(prefetch(pin=dict(method="label", ran=True, changed=True, error="CRI still reports A"))) == (
        "the pin failed: CRI still reports A"
    )
    # problems of a run whose images are all there: the call failed (e.g. the labels could not be read).
    failed = prefetch(msg="cannot pin on containerd: unknown service", problems=["unknown service", "second"])
    assert call_error(failed) == "cannot pin on containerd: unknown service"
    assert call_problems(failed) == ["unknown service", "second"]
    out = result([prefetch(), failed])
    assert (out["status"], out["node_error"], out["problems"]) == ("failed", failed["msg"], failed["problems"])
    # Failed images are the images' errors: the node fails with them, its node_error stays empty.
    images = [dict(image=A, status="present"), dict(image=B, status="failed", error="manifest unknown")]
    pulls = prefetch(totals=dict(failed=1, pulled=0), images=images, msg="1 of 2 images failed", problems=["x"])
    assert call_error(pulls) == "" and call_problems(pulls) == []
    out = result([pulls])
    assert (out["status"], out["node_error"], out["problems"]) == ("failed", "", [])
    assert out["error"].startswith("1 of 2 images failed: " + B)
    # A succeeded call: no error, no problems; a task's error is the node's only problem.
    assert (call_error(prefetch()), call_problems(prefetch())) == ("", [])
    assert result([prefetch()], error="the pod is gone")["problems"] == ["the pod is gone"]
    assert result([prefetch()])["problems"] == []


def test_missing_python_dependencies_are_provided_once_also_in_check_mode():
    missing = dict(failed=True, msg="grpcio missing", node_deps_missing=True, node_deps={"tag": "cp311"})
    assert next_step(missing, True) == "deps"
    assert next_step(missing, False, True) == "none"


def test_the_last_call_that_ran_is_the_result():
    check = prefetch(totals=dict(would_pull=1, pulled=0))
    job_end = prefetch(pin=dict(method="label", ran=True, changed=True, images=[A, B], path=None))
    out = result([check, {"ansible_job_id": "1", "started": 1, "finished": 0}, job_end, {"skipped": True}])
    assert set(out) == KEYS
    assert (out["status"], out["error"], out["node_error"], out["runtime"]) == ("ok", "", "", "containerd")
    assert (out["pulled"], out["present"], out["bytes"], out["seconds"]) == (1, 1, 3145728, 1.25)
    assert (out["changed"], out["pinned"], out["pin_method"], out["dropin"]) == (True, 2, "label", None)
    assert out["sets"] == [{"name": "s", "images": [A]}] and out["started"] == 10.0 and out["finished"] > 10.0
    assert result_line(out) == (
        "ok: 1 pulled, 1 present, 0 failed of 2 images (3.0 MiB) in 1.2 s; 2 pinned by the containerd image label"
    )
    assert out["runtime_version"] == "1.7.24"


def test_the_timeline_spans_the_pulls_and_the_pin_step():
    images = [
        dict(image=A, status="present", started=None, finished=None),
        dict(image=B, status="pulled", started=12.0, finished=13.5),
        dict(image=C, status="failed", started=11.5, finished=12.5),
    ]
    pin = dict(method="label", ran=True, changed=True, images=[], path=None, started=13.6, finished=13.9)
    out = result([prefetch(images=images, pin=pin)], images=(A, B, C))
    assert (out["pull_started"], out["pull_finished"]) == (11.5, 13.5)
    assert (out["pin_started"], out["pin_finished"]) == (13.6, 13.9)
    # Nothing pulled, no pin step: no parts to draw (a module older than the pin times gives none either).
    idle = dict(method="none", ran=False, started=20.0, finished=20.0)
    quiet = result([prefetch(images=[dict(image=A, status="present")], pin=idle)])
    assert (quiet["pull_started"], quiet["pull_finished"], quiet["pin_started"]) == (None, None, None)
    assert result([prefetch(pin=dict(method="label", ran=True))])["pin_started"] is None


def test_pinned_counts_what_cri_reports_and_auto_on_old_containerd_says_why():
    pin = dict(method="dropin", ran=True, changed=True, images=[A, B], path="/d", cri_pinned={A: True, B: False})
    assert result([prefetch(pin=pin)])["pinned"] == 1
    reason = "containerd 1.6.20 will not honour the pin: ...; Upgrade containerd to 1.7.3 or later"
    out = result([prefetch(pin=dict(method="none", ran=False, changed=False, images=[], path=None, reason=reason))])
    assert (out["pinned"], out["pin_reason"]) == (None, reason)


def test_a_node_with_nothing_to_do_and_the_drop_in():
    pin = dict(method="dropin", ran=True, changed=False, images=[A, B], path="/etc/crio/crio.conf.d/50-pinned-images")
    out = result([prefetch(totals=dict(pulled=0, present=2), pin=pin), {}, {}])
    assert (out["status"], out["changed"], out["pinned"], out["dropin"]) == ("ok", False, 2, pin["path"])
    assert result_line(out).endswith("; 2 pinned in /etc/crio/crio.conf.d/50-pinned-images")


def test_a_node_the_mco_manages_says_the_pins_are_left_to_it():
    sign = "/etc/machine-config-daemon/currentconfig holds MachineConfig rendered-worker-1"
    pin = dict(method="none", ran=False, changed=False, images=[], path=None, mco_managed=sign)
    out = result([prefetch(pin=pin)])
    assert (out["pinned"], out["mco_managed"]) == (None, sign)
    assert result_line(out).endswith("; pins left to the machine-config-operator (PinnedImageSets or MachineConfigs)")
    row = dict(out, host="w1")
    assert report_row(row).split()[-1] == "mco"
    # The page's pinned column says the same.
    page = render_page({"nodes": [dict(row, started=1.0, finished=2.0)]})
    assert "<td>mco</td>" in page


@pytest.mark.parametrize("ran", [True, False])
def test_an_explicit_drop_in_on_an_mco_node_that_failed_or_did_not_run_is_no_mco_pin(ran):
    sign = "/etc/machine-config-daemon/currentconfig holds MachineConfig rendered-worker-1"
    pin = dict(method="dropin", ran=ran, changed=False, images=[], path=None, mco_managed=sign, error="reload failed")
    out = dict(result([prefetch(pin=pin)]), host="w1")
    assert out["pinned"] is None and out["pin_method"] == "dropin"
    assert "machine-config-operator" not in result_line(out)
    assert report_row(out).split()[-1] == "-"
    page = render_page({"nodes": [dict(out, started=1.0, finished=2.0)]})
    assert "<td>mco</td>" not in page and "<td>-</td>" in page


def test_failed_images_are_listed_with_the_first_error():
    images = [dict(image=A, status="failed", error="denied"), dict(image=B, status="skipped", error="no space")]
    out = result([prefetch(totals=dict(failed=1, skipped=1, pulled=0, present=0), images=images)])
    assert out["status"] == "failed" and out["failed"] == 2 and out["node_error"] == ""
    assert out["error"] == f"2 of 2 images failed: {A}, {B} (denied)"
    assert out["pinned"] is None and not out["changed"]


def test_a_call_that_failed_as_a_whole_is_the_node_error():
    out = result([dict(failed=True, msg="disk guard refused the prefetch")])
    refused = "disk guard refused the prefetch"
    assert (out["status"], out["error"], out["node_error"]) == ("failed", refused, refused)
    assert out["requested"] == 2 and out["pulled"] == 0 and out["images"] == [] and out["pin_method"] == "none"
    assert result([])["error"] == "the prefetch ended without a result"


def test_a_job_that_failed_as_a_whole_keeps_what_the_check_found_present():
    check = prefetch(totals=dict(present=27, pulled=0, would_pull=10))
    out = result([check, dict(failed=True, msg="the node's lock is held by run r1")], images=[A] * 37)
    assert (out["status"], out["present"], out["pulled"], out["would_pull"]) == ("failed", 27, 0, 0)
    assert report_row(dict(out, host="w1")).split()[2:5] == ["0", "27", "0"]


def test_a_failed_pin_keeps_the_pulls_and_fails_the_node():
    pin = dict(method="dropin", ran=True, changed=True, images=[], path=None, error="reload failed")
    out = result([prefetch(pin=pin, failed=True, msg="pinning with the dropin method failed: reload failed")])
    assert out["status"] == "failed" and out["pulled"] == 1 and out["pinned"] is None and out["changed"]
    assert out["node_error"].startswith("pinning with the dropin method failed")


def test_a_failed_task_of_the_role_wins_and_check_mode_is_said():
    assert result([prefetch()], error="wheelhouse empty")["error"] == "wheelhouse empty"
    assert result([prefetch(totals=dict(pulled=0, would_pull=1))], check_mode=True)["status"] == "check"


def test_the_python_dir_env_names_only_a_directory_other_than_the_default():
    assert python_dir_env(DEFAULT_DIR) == {}
    assert python_dir_env(DEFAULT_DIR + "/") == {}
    assert python_dir_env("/opt/py") == {ENV_DIR: "/opt/py"}


def test_the_shared_prefetch_options_leave_out_the_unset_ones():
    options = dict(images=[], cri_socket="", auth_file=None, require_digest=False, cri_timeout=0.0, pin="auto")
    assert prefetch_args(options) == dict(images=[], require_digest=False, cri_timeout=0.0, pin="auto")


def test_a_failed_argument_check_is_one_line_naming_each_variable():
    failed = {
        "msg": "Validation of arguments failed:\nvalue of node_pin must be one of: auto, true, false, label, got: yes",
        "argument_errors": ["value of node_pin must be one of: auto, true, false, label, got: yes"],
        "argument_spec_data": {"node_pin": {"choices": ["auto", "true", "false", "label"]}},
    }
    assert failure_line(failed) == (
        "invalid input of the pinned.images.node role: value of node_pin must be one of: auto, true, false, label, "
        "got: yes"
    )
    assert failure_line({"msg": "cannot\n  connect"}) == "cannot connect"


def test_a_runtime_that_cannot_pin_reads_not_pinned_in_the_table_and_the_page():
    reason = "containerd 1.6.20 will not honour the pin: ...; Upgrade containerd to 1.7.3 or later"
    pin = dict(method="none", ran=False, changed=False, images=[], path=None, reason=reason)
    out = dict(result([prefetch(pin=pin)]), host="w1")
    assert report_row(out).endswith("not pinned")
    page = render_page({"nodes": [dict(out, started=1.0, finished=2.0)]})
    assert "<td>not pinned</td>" in page


def test_a_prune_adds_its_counts_freed_bytes_and_line():
    prune = dict(changed=True, removed=[C], kept=[], freed_bytes=2 * 1048576)
    out = node_result([prefetch()], "w1", False, False, "", [A, B], [], 10.0, prune=prune)
    assert (out["pruned"], out["prune_kept"], out["freed_bytes"], out["changed"]) == (1, 0, 2 * 1048576, True)
    assert result_line(out).endswith("; pruned 1 images (2.0 MiB freed), kept 0")
    check = node_result([prefetch()], "w1", False, True, "", [A, B], [], 10.0, prune=prune)
    assert "; would prune 1 images (2.0 MiB freed)" in result_line(check)
    # Skipped (node_prune false): nothing of the prune.
    skipped = node_result([prefetch()], "w1", False, False, "", [A, B], [], 10.0, prune=dict(skipped=True))
    assert (skipped["pruned"], skipped["freed_bytes"]) == (None, 0)
    assert "prune" not in result_line(skipped)


def test_the_prune_uses_the_prefetch_s_record_and_lock_and_names_the_former_record():
    # The defaults: the modules' state directory; the record the role kept next to its lock before is moved there.
    assert prune_files("", "", "/var/tmp/pinned-images-prefetch.json") == dict(
        record_file=None, lock_file=None, former_record_file="/var/tmp/pinned-images-record.json"
    )
    assert prune_files("", "/l/x.lock", "/var/tmp/p.json") == dict(
        record_file=None, lock_file="/l/x.lock", former_record_file="/l/pinned-images-record.json"
    )
    # A record the variables name is where it always was: nothing to move.
    assert prune_files("/r.json", "/l/x.lock", "/var/tmp/p.json") == dict(
        record_file="/r.json", lock_file="/l/x.lock", former_record_file=None
    )
    assert prune_files("", "", "") == dict(record_file=None, lock_file=None, former_record_file=None)


def test_the_role_takes_its_own_node_paths_under_the_host_root():
    assert node_host_path("/run/pinned-images-pull-secret.json", "/host") == (
        "/host/run/pinned-images-pull-secret.json"
    )
    assert node_host_path("/var/tmp/p.json", None) == "/var/tmp/p.json"
    # As the modules take the root: a trailing slash, and / (no root at all).
    assert node_host_path("/var/tmp/p.json", "/host/") == "/host/var/tmp/p.json"
    assert node_host_path("/var/tmp/p.json", "/") == "/var/tmp/p.json"


def test_the_default_private_python_directory_is_the_hosts_under_the_host_root():
    # SSH: the node's own, exactly the directory the modules use without PINNED_IMAGES_PYTHON_DIR.
    assert python_deps_dir(None) == python_deps_dir("") == python_deps_dir("/") == DEFAULT_DIR
    assert python_dir_env(python_deps_dir("")) == {}
    # Pod mode: the host's directory, so a later pod on the node finds the copy; the modules need the variable.
    assert python_deps_dir("/host") == python_deps_dir("/host/") == "/host" + DEFAULT_DIR
    assert python_dir_env(python_deps_dir("/host")) == {ENV_DIR: "/host" + DEFAULT_DIR}


def test_the_prune_waits_for_a_complete_prefetch():
    pulled = dict(method="label", ran=True, changed=True, images=[A, B])
    assert prune_blocker([prefetch(), {}, prefetch(pin=pulled)]) == ""
    assert prune_blocker([prefetch()]) == "", "nothing to do: the check is the whole run"
    failed = prefetch(totals=dict(failed=1), images=[dict(image=A, status="failed", error="x")])
    assert prune_blocker([prefetch(), {}, failed]) == "the prefetch did not complete (1 images failed)"
    assert (
        prune_blocker([prefetch(), {}, dict(failed=True, msg="timed out")])
        == "the prefetch did not complete (timed out)"
    )
    pin_failed = prefetch(pin=dict(pulled, error="CRI still reports x unpinned"))
    assert prune_blocker([prefetch(), {}, pin_failed]).startswith("the prefetch did not complete (the pin failed: CRI")
    would_pin = prefetch(pin=dict(method="label", ran=False, changed=True, images=[A]))
    assert prune_blocker([would_pin, {"skipped": True}]) == "the prefetch did not complete (the pins were not updated)"
    assert prune_blocker([would_pin], True) == "", "check mode: the check is the prefetch's whole run"
    assert prune_blocker([{}]).startswith("the prefetch did not complete (the prefetch ended without a result")
    # node_allow_empty empties the pins of a node that wants nothing; it never prunes every recorded image.
    assert prune_blocker([prefetch(), {}, prefetch(pin=pulled)], False, []).startswith(
        "the node wants no image: the prune"
    )
    assert prune_blocker([prefetch(), {}, prefetch(pin=pulled)], False, [A]) == ""


def test_a_skipped_prune_says_why_on_the_line():
    out = node_result([prefetch()], "w1", False, False, "", [A, B], [], 10.0, prune=dict(prune_skipped="why"))
    assert out["pruned"] is None and result_line(out).endswith("; prune skipped: why")


def test_the_pace_is_summed_up_without_its_samples():
    pace = dict(
        path="/var/lib/etcd",
        bound_ms=10.0,
        percentile=99.0,
        samples=[[0.0, 1.0], [0.1, 40.0]],
        latency_ms=dict(count=2, p50=1.0, p90=40.0, p99=40.0, max=40.0),
        waited_seconds=3.5,
        held=1,
        timed_out=[B],
    )
    images = [
        dict(image=A, status="pulled", started=100.5, finished=101.0, waited=0.25),
        dict(image=B, status="pulled", started=104.0, finished=105.0, waited=3.25),
        dict(image=C, status="present", started=None, finished=None, waited=0.0),
    ]
    out = result([prefetch(pace=pace, images=images)], images=(A, B, C))
    assert out["pace"] == dict(
        path="/var/lib/etcd",
        bound_ms=10.0,
        percentile=99.0,
        p50_ms=1.0,
        p99_ms=40.0,
        max_ms=40.0,
        samples=2,
        waited_seconds=3.5,
        held=1,
        timed_out=1,
        waits=[[100.25, 100.5], [100.75, 104.0]],
    )
    assert result([prefetch()])["pace"] is None
