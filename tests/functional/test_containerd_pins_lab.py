# SPDX-License-Identifier: GPL-3.0-or-later
"""Pinning on containerd with the io.cri-containerd.pinned label, proven by the runtime's own CRI.

A lab of its own mixes Debian 12's containerd 1.6.20 (cp-0) and Debian trixie's 1.7.24 (worker-0, worker-1). The
client's proto is checked on the wire against both (List, Get, Update read back with `ctr`); the module and the
prefetch playbook run through real `ansible`/`ansible-playbook`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import OWNER_LABEL_KEY, PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import wait_reported
from fixtures.ansible_runs import adhoc, playbook, remove_all_images
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set, role_pool
from support.lab import Lab, started_lab

# containerd 1.7 comes from hack/setup.sh (hack/check_programs.sh checks it): no skip, a missing binary fails.
pytestmark = pytest.mark.lab
MODULE = "pinned.images.containerd_pinned_images"
OLD, NEW = "cp-0", "worker-0"


@pytest.fixture(scope="module")
def mlab(tmp_path_factory):
    with started_lab(
        tmp_path_factory.mktemp("mixed-lab"),
        nodes=3,
        control_plane=1,
        runtimes={"worker-0": "containerd-1.7", "worker-1": "containerd-1.7"},
    ) as lab:
        yield lab


def socket(lab: Lab, node: str) -> str:
    return lab.status()["nodes"][node]["socket"]


def refs(lab: Lab, *names: str) -> list:
    images = lab.images()
    return [images[name].reference for name in names]


def prefetch(lab: Lab, node: str, images) -> None:
    args = dict(images=list(images), cri_socket=socket(lab, node), min_free="64Mi", require_digest=False)
    rc, _result, output = adhoc("pinned.images.prefetch", args)
    assert rc == 0, output


def cri_pinned(lab: Lab, node: str) -> dict:
    """Repo digest -> pinned, as CRI ListImages reports it."""
    with CriClient(socket(lab, node)) as client:
        return {digest: image["pinned"] for image in client.list_images() for digest in image["repo_digests"]}


def ctr(lab: Lab, node: str, *args: str) -> str:
    ctr_binary = shutil.which("ctr")
    proc = subprocess.run(
        [ctr_binary, "--address", socket(lab, node), "-n", "k8s.io", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout


def ctr_labels(lab: Lab, node: str) -> dict:
    """Record name -> labels, as `ctr images ls` prints them."""
    found = {}
    for line in ctr(lab, node, "images", "ls").splitlines()[1:]:
        fields = line.split()
        labels = fields[-1] if "=" in fields[-1] else ""
        found[fields[0]] = dict(item.split("=", 1) for item in labels.split(",") if item)
    return found


@pytest.mark.parametrize("node, reports_pinned", [(OLD, False), (NEW, True)])
def test_list_get_update_on_the_wire(mlab, node, reports_pinned):
    remove_all_images(socket(mlab, node))
    (image,) = refs(mlab, "plain-small")
    prefetch(mlab, node, [image])
    with ContainerdClient(socket(mlab, node)) as client:
        version = client.version()["runtime_version"]
        assert version.startswith("1.6." if node == OLD else "1.7.")
        records = {record["name"]: record for record in client.list_records()}
        status = client.image_status(image)
        assert set(records) == {status["id"], image}
        assert records[image]["target"]["digest"] == image.split("@")[1]
        assert records[image]["labels"] == {"io.cri-containerd.image": "managed"}
        assert client.get_record(image) == records[image]
        assert client.get_record("127.0.0.1:1/none@sha256:" + "0" * 64) is None
        assert client.list_records([f"name=={image}"]) == [records[image]]

        updated = client.update_labels(
            records[image], {PIN_LABEL_KEY: "pinned", "extra": "x"}, [PIN_LABEL_KEY, "extra"]
        )
        assert updated["labels"] == {"io.cri-containerd.image": "managed", PIN_LABEL_KEY: "pinned", "extra": "x"}
        assert updated["target"] == records[image]["target"]
        assert ctr_labels(mlab, node)[image] == updated["labels"]
        # CRI learns of the change from containerd's event stream, just after Update returns.
        wait_reported(client, {image: reports_pinned}, 10)
        assert cri_pinned(mlab, node) == {image: reports_pinned}

        # A key in the mask that the labels lack is deleted; the others stay.
        client.update_labels(records[image], {}, ["extra"])
        assert ctr_labels(mlab, node)[image] == {"io.cri-containerd.image": "managed", PIN_LABEL_KEY: "pinned"}
        client.update_labels(records[image], {}, [PIN_LABEL_KEY])
        wait_reported(client, {image: False}, 10)
    assert cri_pinned(mlab, node) == {image: False}


def test_pin_a_set_survive_a_restart_unpin_and_leave_other_pins_alone(mlab):
    sock = socket(mlab, NEW)
    remove_all_images(sock)
    small, shared_a, shared_b, multiarch = refs(
        mlab, "plain-small", "plain-shared-a", "plain-shared-b", "plain-multiarch"
    )
    tagged = mlab.images()["plain-shared-a"].tag_reference
    prefetch(mlab, NEW, [small, shared_a, shared_b, multiarch, tagged])
    ctr(mlab, NEW, "images", "label", multiarch, f"{PIN_LABEL_KEY}=pinned")
    with CriClient(sock) as client:
        wait_reported(client, {multiarch: True}, 10)
    args = dict(cri_socket=sock)

    rc, result, output = adhoc(MODULE, dict(args, images=[small, shared_a]), check=True, diff=True)
    assert rc == 0, output
    assert result["changed"] is True
    assert result["pinned"] == sorted([small, shared_a])
    assert cri_pinned(mlab, NEW) == {small: False, shared_a: False, shared_b: False, multiarch: True}
    assert PIN_LABEL_KEY not in ctr_labels(mlab, NEW)[small]

    rc, result, output = adhoc(MODULE, dict(args, images=[small, shared_a]))
    assert rc == 0, output
    assert (result["changed"], result["pinned"], result["unchanged"]) == (True, sorted([small, shared_a]), [])
    # Every record of shared-a: digest name, tag and image id.
    assert tagged in result["records"]["pinned"]
    assert len(result["records"]["pinned"]) == 5
    assert cri_pinned(mlab, NEW) == {small: True, shared_a: True, shared_b: False, multiarch: True}
    labels = ctr_labels(mlab, NEW)
    assert all(labels[name][OWNER_LABEL_KEY] == "pinned.images" for name in result["records"]["pinned"])
    assert OWNER_LABEL_KEY not in labels[multiarch]

    rc, result, output = adhoc(MODULE, dict(args, images=[small, shared_a]))
    assert rc == 0, output
    assert (result["changed"], result["pinned"], result["unchanged"]) == (False, [], sorted([small, shared_a]))

    mlab.restart_node(NEW)
    assert cri_pinned(mlab, NEW) == {small: True, shared_a: True, shared_b: False, multiarch: True}

    # shared-a leaves the set: it loses the pin; the pin set by hand on multiarch stays.
    rc, result, output = adhoc(MODULE, dict(args, images=[small, multiarch]))
    assert rc == 0, output
    assert result["changed"] is True
    assert (result["pinned"], result["unchanged"], result["unpinned"]) == ([], sorted([small, multiarch]), [shared_a])
    # multiarch was pinned (by hand, on its digest record): its other records get the label, as any wanted image.
    assert any(name.startswith("sha256:") for name in result["records"]["pinned"])
    assert cri_pinned(mlab, NEW) == {small: True, shared_a: False, shared_b: False, multiarch: True}
    assert not any(key in ctr_labels(mlab, NEW)[tagged] for key in (PIN_LABEL_KEY, OWNER_LABEL_KEY))

    rc, result, output = adhoc(MODULE, dict(args, state="absent"))
    assert rc == 0, output
    assert result["unpinned"] == [small]
    assert cri_pinned(mlab, NEW) == {small: False, shared_a: False, shared_b: False, multiarch: True}


def test_an_image_the_node_lacks_is_refused_without_force(mlab):
    sock = socket(mlab, "worker-1")
    remove_all_images(sock)
    small, missing = refs(mlab, "plain-small", "auth-small")
    prefetch(mlab, "worker-1", [small])
    args = dict(cri_socket=sock, images=[small, missing])

    rc, result, output = adhoc(MODULE, args)
    assert rc != 0
    assert result["missing"] == [missing]
    assert missing in result["msg"] and "force" in result["msg"]
    assert cri_pinned(mlab, "worker-1") == {small: False}

    rc, result, output = adhoc(MODULE, dict(args, force=True))
    assert rc == 0, output
    assert (result["images"], result["missing"]) == ([small], [missing])
    assert cri_pinned(mlab, "worker-1") == {small: True}
    adhoc(MODULE, dict(cri_socket=sock, state="absent"))


def test_containerd_16_fails_with_the_version_message_or_warns_when_told(mlab):
    sock = socket(mlab, OLD)
    remove_all_images(sock)
    (small,) = refs(mlab, "plain-small")
    prefetch(mlab, OLD, [small])

    rc, result, output = adhoc(MODULE, dict(cri_socket=sock, images=[small]))
    assert rc != 0
    assert "will not honour the pin" in result["msg"] and "1.7.3" in result["msg"]
    assert result["runtime"]["runtime_version"].startswith("1.6.")
    assert PIN_LABEL_KEY not in ctr_labels(mlab, OLD)[small]

    rc, result, output = adhoc(MODULE, dict(cri_socket=sock, images=[small], old_containerd="warn"))
    assert rc == 0, output
    assert "will not honour the pin" in output
    assert result["pinned"] == [small]
    assert ctr_labels(mlab, OLD)[small][PIN_LABEL_KEY] == "pinned"
    assert cri_pinned(mlab, OLD) == {small: False}
    adhoc(MODULE, dict(cri_socket=sock, state="absent", old_containerd="warn"))


def run_prefetch_playbook(lab: Lab, tmp_path, images, **extra_vars) -> tuple:
    inventory = lab.write_inventory(tmp_path / "lab.yml")
    sets = tmp_path / "sets.yaml"
    sets.write_text(
        yaml.safe_dump_all(
            [
                pinned_image_set("master-images", images, {ROLE: "master"}),
                pinned_image_set("worker-images", images, {ROLE: "worker"}),
                role_pool("master", ["master"], "node-role.kubernetes.io/master"),
                role_pool("worker", ["worker"], "node-role.kubernetes.io/worker"),
            ]
        )
    )
    report = tmp_path / "report.json"
    extra = dict(cluster_sets=[str(sets)], node_progress_interval=1, cluster_report_file=str(report), **extra_vars)
    proc = playbook("pinned.images.prefetch", inventory, extra, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    nodes = {row["host"]: row for row in json.loads(report.read_text())["nodes"]}
    return proc, nodes


def test_the_prefetch_playbook_pins_with_the_label_on_containerd_17_nodes(mlab, tmp_path):
    """The lab inventory: node_pin auto on the 1.7 nodes, the drop-in forced on the 1.6 node (what CRI-O would read;
    the report's count is what the node's CRI reports)."""
    for node in mlab.status()["nodes"]:
        remove_all_images(socket(mlab, node))
    images = refs(mlab, "plain-small", "plain-shared-a", "auth-small")

    proc, nodes = run_prefetch_playbook(mlab, tmp_path, images)
    for node in ("worker-0", "worker-1"):
        assert cri_pinned(mlab, node) == {image: True for image in images}, node
        assert (nodes[node]["pin_method"], int(nodes[node]["pinned"])) == ("label", 3)
    # The forced drop-in is written on the 1.6 node, and the report counts what its CRI reports: nothing pinned.
    assert cri_pinned(mlab, OLD) == {image: False for image in images}
    assert (nodes[OLD]["pin_method"], int(nodes[OLD]["pinned"])) == ("dropin", 0)
    # The report table's "pinned" column, one row per node.
    table = dict(re.findall(r'"((?:cp|worker)-\d+) [^"]*?(dropin 0|label 3|-)",?$', proc.stdout, re.MULTILINE))
    assert table == {"cp-0": "dropin 0", "worker-0": "label 3", "worker-1": "label 3"}

    proc, nodes = run_prefetch_playbook(mlab, tmp_path, images)
    assert all(not row["changed"] for row in nodes.values()), yaml.safe_dump(nodes)
    recap = dict(re.findall(r"^((?:cp|worker)-\d+)\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.MULTILINE))
    assert recap == {"cp-0": "0", "worker-0": "0", "worker-1": "0"}
    for node in ("worker-0", "worker-1"):
        assert cri_pinned(mlab, node) == {image: True for image in images}, node

    # Only the pins differ (cp-0's drop-in gone, worker-0's labels removed by hand): the check finds it, and one call
    # pins again, pulling nothing; worker-1 stays untouched.
    dropin = Path(mlab.state["nodes"][OLD]["root"]).parent / "crio.conf.d" / "50-pinned-images"
    dropin.unlink()
    with ContainerdClient(socket(mlab, NEW)) as client:
        for record in client.list_records():
            if PIN_LABEL_KEY in record["labels"]:
                client.update_labels(record, {}, [PIN_LABEL_KEY, OWNER_LABEL_KEY])
        wait_reported(client, {image: False for image in images}, 10)
    proc, nodes = run_prefetch_playbook(mlab, tmp_path, images)
    recap = dict(re.findall(r"^((?:cp|worker)-\d+)\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.MULTILINE))
    assert recap == {"cp-0": "1", "worker-0": "1", "worker-1": "0"}
    assert [(nodes[name]["changed"], nodes[name]["pulled"]) for name in sorted(nodes)] == [
        (True, 0),
        (True, 0),
        (False, 0),
    ]
    assert dropin.exists() and cri_pinned(mlab, NEW) == {image: True for image in images}

    # node_pin auto everywhere: the 1.6 node prefetches only, warns with the reason and the fix, and its report row
    # says "not pinned".
    proc, nodes = run_prefetch_playbook(mlab, tmp_path, images, node_pin="auto")
    assert (nodes[OLD]["pin_method"], nodes[OLD]["pinned"]) == ("none", None)
    assert "Upgrade containerd to 1.7.3 or later" in nodes[OLD]["pin_reason"]
    assert re.search(r'"cp-0 .*not pinned",?$', proc.stdout, re.MULTILINE), proc.stdout
    assert "[WARNING]: containerd 1.6" in proc.stdout + proc.stderr
    assert cri_pinned(mlab, OLD) == {image: False for image in images}


def test_the_background_prefetchs_warning_reaches_the_user_as_its_text(mlab, tmp_path):
    """node_pin label on the 1.6 node, which lacks the images: the background prefetch pins with the label and warns
    (the role passes old_containerd warn), and prefetch_job hands the warning
    on as the module's message, not as its serialized form."""
    remove_all_images(socket(mlab, OLD))
    images = refs(mlab, "plain-small")
    proc, nodes = run_prefetch_playbook(mlab, tmp_path, images, node_pin="label")
    assert (int(nodes[OLD]["pulled"]), nodes[OLD]["pin_method"]) == (1, "label")
    output = " ".join((proc.stdout + proc.stderr).split())  # warnings are wrapped to the terminal's width
    assert re.search(r"\[WARNING\]: containerd 1\.6\.\S+ will not honour the pin", output), output
    assert "WarningSummary" not in output and "{'event'" not in output
