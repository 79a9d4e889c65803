# SPDX-License-Identifier: GPL-3.0-or-later
"""CRI-O 1.33 (the reference directory's build, OpenShift 4.20's CRI-O) reading the collection's drop-in: every pin is
proven by CRI-O's own CRI after a SIGHUP to the pid the lab records. Without the reference directory these tests skip
with the one line naming PINNED_IMAGES_REFERENCE_DIR."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.ansible_runs import adhoc, adhoc_command, ansible_env, playbook, remove_all_images
from fixtures.reference import reference_path
from support.gate_proxy import GateProxy
from support.node import pin_args

pytestmark = pytest.mark.lab
GUARD = dict(min_free="64Mi")


@pytest.fixture
def crio(lab):
    """The session lab's CRI-O node, emptied: no images, no drop-ins but the lab's."""
    reference_path("cri-o")
    node = lab.runtime_node("cri-o")
    for dropin in Path(node["dropin_dir"]).iterdir():
        dropin.unlink()
    lab.reload_node(node["name"])
    remove_all_images(node["endpoint"])
    return node


def cri_pinned(node) -> dict:
    with CriClient(node["endpoint"]) as client:
        return {digest: image["pinned"] for image in client.list_images() for digest in image["repo_digests"]}


def node_play(tmp_path, node) -> Path:
    play = tmp_path / "node.yml"
    play.write_text(
        yaml.safe_dump([{"hosts": node["name"], "gather_facts": False, "roles": [{"role": "pinned.images.node"}]}])
    )
    return play


def test_node_role_prefetches_then_pins_rerun_changes_nothing_and_removing_a_set_unpins(lab, crio, tmp_path):
    images = lab.images()
    a, b, c = (images[n].reference for n in ("plain-small", "plain-shared-a", "auth-small"))
    inventory, play = lab.write_inventory(tmp_path / "lab.yml"), node_play(tmp_path, crio)
    sets = [{"name": "one", "images": [a, b]}, {"name": "two", "images": [c]}]

    proc = playbook(play, inventory, {"node_sets": sets})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cri_pinned(crio) == {a: True, b: True, c: True}
    dropin = Path(crio["dropin_dir"]) / "50-pinned-images"
    assert dropin.read_text() == "[crio]\n  [crio.image]\n    pinned_images = [%s]\n" % ", ".join(
        json.dumps(name) for name in sorted([a, b, c])
    )

    reloads = lab.reloads(crio["name"])
    proc = playbook(play, inventory, {"node_sets": sets})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"rt-cri-o\s+: ok=\d+\s+changed=0", proc.stdout), proc.stdout
    assert lab.reloads(crio["name"]) == reloads  # nothing changed: no SIGHUP

    proc = playbook(play, inventory, {"node_sets": sets[:1]})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lab.reloads(crio["name"]) == reloads + 1
    assert cri_pinned(crio) == {a: True, b: True, c: False}


def test_a_later_dropin_that_sets_pinned_images_fails_the_pin_naming_it(lab, crio):
    small, other = lab.images()["plain-small"].reference, lab.images()["plain-shared-b"].reference
    rc, result, output = adhoc("pinned.images.prefetch", dict(GUARD, images=[small, other], **pin_args(crio)))
    assert rc == 0, output
    # Another tool's file, read after 50-pinned-images: CRI-O keeps only its list.
    later = Path(crio["dropin_dir"]) / "99-other"
    later.write_text('[crio.image]\npinned_images = ["%s"]\n' % other)
    lab.reload_node(crio["name"])
    assert cri_pinned(crio) == {small: False, other: True}
    args = dict(
        images=[small, other],
        dropin_path=str(Path(crio["dropin_dir"]) / "50-pinned-images"),
        crio_reload="signal",
        crio_pid_file=crio["pid_file"],
        cri_socket=crio["endpoint"],
    )
    for check in (True, False):
        rc, result, output = adhoc("pinned.images.crio_pinned_images", args, check=check)
        assert rc != 0, output
        assert str(later) in result["msg"] and small in result["msg"] and "replaces the whole list" in result["msg"]
        assert result["overridden_by"] == [str(later)]
    # The prefetch's pin says the same, after its pulls.
    rc, result, output = adhoc("pinned.images.prefetch", dict(GUARD, images=[small, other], **pin_args(crio)))
    assert rc != 0 and str(later) in result["msg"], output
    later.unlink()
    lab.reload_node(crio["name"])
    assert cri_pinned(crio) == {small: True, other: True}


def test_crio_killed_mid_prefetch_restarted_and_the_rerun_completes(lab, crio):
    prefix = "crio-kill-%d" % time.time_ns()
    proxy = GateProxy(lab.state["registries"]["plain"]["host"], prefix, quorum=1000, timeout=120)
    try:
        lab.add_http_registry(crio["name"], proxy.host)
        records = lab.push_bulk(2, prefix=prefix)
        images = [r.reference.replace(lab.state["registries"]["plain"]["host"], proxy.host, 1) for r in records]
        args = dict(GUARD, images=images, concurrency=1, retries=0, **pin_args(crio))
        run = subprocess.Popen(
            adhoc_command("pinned.images.prefetch", args),
            env=ansible_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 120
        while proxy.waiting < 1 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proxy.waiting == 1, run.communicate(timeout=60)[0]
        lab.stop_node(crio["name"], kill=True)
        proxy.release()
        output = run.communicate(timeout=300)[0]
        assert run.returncode != 0, output
        lab.start_node(crio["name"])
        rc, result, output = adhoc("pinned.images.prefetch", args)
        assert rc == 0, output
        assert {i["status"] for i in result["images"]} <= {"pulled", "present"}
        assert result["pin"]["cri_pinned"] == {image: True for image in images}
        assert cri_pinned(crio) == {image: True for image in images}
    finally:
        proxy.stop()


def test_registries_conf_mirror_and_pull_secret_pull_from_the_mirror_the_guard_read(lab, crio):
    """An image named on a host that does not exist, mirrored by the login registry in CRI-O's registries.conf: the
    disk guard's estimate and CRI-O's pull both go to the mirror with the node's pull secret (the file CRI-O has as
    global_auth_file, as OpenShift's /var/lib/kubelet/config.json: CRI-O does not send a request's credentials to a
    mirror on another host)."""
    auth = lab.state["registries"]["auth"]
    record = lab.images()["auth-shared-b"]
    image = record.reference.replace(auth["host"], "mirror-only.example.invalid", 1)
    conf = Path(crio["registries_conf"])
    conf.write_text(
        conf.read_text() + '\n[[registry]]\nlocation = "mirror-only.example.invalid"\n\n'
        "[[registry.mirror]]\nlocation = %s\ninsecure = true\n" % json.dumps(auth["host"])
    )
    lab.reload_node(crio["name"])
    log = Path(auth["log"])
    start = len(log.read_text(errors="replace"))
    rc, result, output = adhoc(
        "pinned.images.prefetch", dict(GUARD, images=[image], auth_file=crio["global_auth_file"], **pin_args(crio))
    )
    assert rc == 0, output
    assert result["images"][0]["status"] == "pulled"
    assert result["disk_guard"]["registry_requests"] > 0
    assert result["pin"]["cri_pinned"] == {image: True}
    _user, password = lab.credentials()
    assert password not in output
    # The login registry authorized (the pull secret's credentials) a GET of the manifest from both: the guard and
    # CRI-O.
    get = 'http.request.method=GET http.request.remoteaddr="127.0.0.1:'
    uri = 'http.request.uri="/v2/private/shared-b/manifests/%s"' % record.digest
    agents = [
        re.search(r"http.request.useragent=(\S*)", line).group(1).strip('"')
        for line in log.read_text(errors="replace")[start:].splitlines()
        if 'msg="authorized request"' in line and get in line and uri in line
    ]
    assert any(agent.startswith("cri-o/1.33") for agent in agents), agents
    assert any(agent.startswith("pinned.images") for agent in agents), agents
