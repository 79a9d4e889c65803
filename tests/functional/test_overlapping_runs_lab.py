# SPDX-License-Identifier: GPL-3.0-or-later
"""Two prefetches on one node at once, through real `ansible` against real containerd: the second is refused at
once and names the first, which goes on undisturbed; a pull secret left by an interrupted run is removed by the
next run of the node role."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.node_state import ENV_STATE_DIR
from fixtures.ansible_runs import adhoc, adhoc_command, ansible_env
from fixtures.ansible_runs import playbook as ansible_playbook
from support.gate_proxy import GateProxy

GUARD = dict(min_free="64Mi")
NODE = "worker-0"


@pytest.fixture
def held_image(lab, runtime_empty_node):
    """An image whose pull on the runtime node the proxy holds until the test releases it."""
    prefix = "overlap-%d" % time.time_ns()  # images no node has yet
    proxy = GateProxy(lab.state["registries"]["plain"]["host"], prefix, quorum=1000, timeout=120)
    lab.add_http_registry(runtime_empty_node["name"], proxy.host)
    (record,) = lab.push_bulk(1, prefix=prefix)
    yield proxy, record.reference.replace(lab.state["registries"]["plain"]["host"], proxy.host, 1)
    proxy.stop()


@pytest.mark.lab
def test_a_second_prefetch_on_the_node_is_refused_and_the_first_goes_on(runtime_empty_node, held_image, tmp_path):
    """On every runtime: a second writer is refused while the first one's pull is held."""
    empty_node = runtime_empty_node["endpoint"]
    proxy, image = held_image
    progress = tmp_path / "progress.json"
    args = dict(GUARD, images=[image], cri_socket=empty_node, progress_file=str(progress), concurrency=1)
    first = subprocess.Popen(
        adhoc_command("pinned.images.prefetch", dict(args, run_id="first")),
        env=ansible_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # The first run holds the lock once its pull waits at the proxy (a bound, not a measurement).
        deadline = time.monotonic() + 120
        while proxy.waiting < 1 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proxy.waiting == 1, first.communicate(timeout=60)[0] if first.poll() is not None else "no pull yet"

        # Ad hoc with neither progress_file nor lock_file: the state directory's lock is the first run's too.
        second = {name: value for name, value in args.items() if name != "progress_file"}
        rc, result, output = adhoc("pinned.images.prefetch", dict(second, run_id="second"), timeout=60)
        assert rc != 0
        assert result["error_kind"] == "locked"
        assert result["msg"].startswith("another prefetch is running on this node (pid ")
        assert ", run first, started " in result["msg"]
        assert f"lock file {os.environ[ENV_STATE_DIR]}/prefetch.lock" in result["msg"]
        # The second run neither pulled nor touched the first one's progress.
        assert json.loads(progress.read_text())["run_id"] == "first"
        assert proxy.waiting == 1
    finally:
        proxy.release()
        output = first.communicate(timeout=300)[0]
    assert first.returncode == 0, output
    assert '"status": "pulled"' in output
    done = json.loads(progress.read_text())
    assert done["run_id"] == "first" and done["done"] == done["total"] == 1

    # Once the first has ended the node is free: a rerun finds the image present.
    rc, result, output = adhoc("pinned.images.prefetch", dict(args, run_id="third"), timeout=120)
    assert rc == 0, output
    assert [i["status"] for i in result["images"]] == ["present"]


@pytest.mark.lab
def test_a_pull_secret_left_by_an_interrupted_run_is_removed_by_the_next(lab, empty_node, tmp_path):
    inventory = lab.write_inventory(tmp_path / "inventory.yml")
    secret_path = Path(
        yaml.safe_load(inventory.read_text())["all"]["children"]["workers"]["hosts"][NODE]["node_pull_secret_path"]
    )
    secret_path.write_text('{"auths": {"left.example": {"auth": "bGVmdDpvdmVy"}}}')
    node_play = tmp_path / "node.yml"
    node_play.write_text(
        yaml.safe_dump([{"hosts": NODE, "gather_facts": False, "roles": [{"role": "pinned.images.node"}]}])
    )
    image = lab.images()["plain-small"].reference
    proc = ansible_playbook(node_play, inventory, {"node_images": [image]}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not secret_path.exists()
    assert "bGVmdDpvdmVy" not in proc.stdout + proc.stderr
