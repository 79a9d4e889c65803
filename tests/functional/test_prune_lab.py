# SPDX-License-Identifier: GPL-3.0-or-later
"""pinned.images.prune on real containerd 1.7, 2.1 and CRI-O lab nodes, through real `ansible`, proven by each
runtime's own CRI: a set shrinks and the prune removes exactly the dropped image; a kept pattern, a hand pin, an
image pulled outside the collection and the images of running, exited and created containers (support.cri_workloads)
stay, with their reasons; check mode reports the same and removes nothing; a rerun removes nothing; a runtime killed
mid-prune leaves whole images and the rerun finishes; the prefetch playbook with cluster_prune=true frees the
dropped image on every node. The nodes are the session lab's workload nodes, shared by these tests."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient, CriError
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import PIN_LABEL_KEY, PIN_VALUE
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import render_pinned_images
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import human_size
from fixtures.ansible_runs import adhoc, adhoc_command, ansible_env, playbook, remove_all_images
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set, role_pool
from fixtures.reference import reference_path
from support.cri_workloads import remove_workloads, run_container
from support.node import RUNTIMES, pin_args

pytestmark = pytest.mark.lab
PRUNE_RUNTIMES = ("containerd-1.7", "containerd-2.1", "cri-o")
# Enough images that the runtime can be killed between two removals.
BULK = 20


def emptied(entry) -> dict:
    """``entry`` without containers, images and drop-ins."""
    remove_workloads(entry)
    remove_all_images(entry["endpoint"])
    for stale in Path(entry["dropin_dir"]).glob("*") if entry.get("dropin_dir") else ():
        stale.unlink()
    return entry


@pytest.fixture(params=PRUNE_RUNTIMES)
def node(request, lab):
    """The session lab's workload node of the runtime (support.cri_workloads runs containers on it), emptied, and
    emptied again afterwards. Not containerd 1.6, which cannot pin."""
    if RUNTIMES[request.param].kind == "cri-o":
        reference_path("cri-o")  # the skip without the CRI-O reference directory
    entry = emptied(lab.workload_node(request.param))
    yield entry
    # Emptied again: the session lab's other tests on this node expect only their own images.
    emptied(entry)


def files(tmp_path: Path) -> dict:
    return dict(record_file=str(tmp_path / "pinned-images-record.json"), lock_file=str(tmp_path / "prefetch.lock"))


def prefetch(lab, node, tmp_path, images) -> dict:
    args = dict(
        pin_args(node),
        images=list(images),
        min_free="64Mi",
        auth_file=lab.state["registries"]["auth"]["docker_config"],
        run_id="prefetch-" + str(len(images)),
        **files(tmp_path),
    )
    rc, result, output = adhoc("pinned.images.prefetch", args)
    assert rc == 0, output
    return result


def prune_args(node, tmp_path, images, **extra) -> dict:
    args = {key: value for key, value in pin_args(node).items() if key != "registries_conf"}
    return dict(args, images=list(images), **files(tmp_path), **extra)


def prune(node, tmp_path, images, check=False, **extra) -> dict:
    rc, result, output = adhoc("pinned.images.prune", prune_args(node, tmp_path, images, **extra), check=check)
    assert rc == 0, output
    return result


def on_node(node) -> dict:
    """Repo digest -> (image id, size, pinned) as the node's CRI ListImages reports it."""
    with CriClient(node["endpoint"]) as client:
        return {
            digest: (image["id"], image["size"], image["pinned"])
            for image in client.list_images()
            for digest in image["repo_digests"]
        }


def serving(node, timeout: float = 60) -> None:
    """Wait until a restarted runtime's CRI image service answers (containerd's CRI plugin initialises after its
    socket opens)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            on_node(node)
            return
        except CriError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def pin_by_hand(lab, node, image: str, wanted: list) -> None:
    """containerd: the pin label without the collection's owner mark on the image's records; CRI-O: a drop-in
    CRI-O reads after the collection's (it replaces the whole list, so it names the wanted images too)."""
    if RUNTIMES[node["runtime"]].kind == "cri-o":
        (Path(node["dropin_dir"]) / "60-by-hand").write_text(render_pinned_images(sorted(wanted + [image])))
        lab.reload_node(node["name"])
        return
    with ContainerdClient(node["endpoint"]) as client:
        status = client.image_status(image)
        for record in client.list_records():
            if record["name"] in [status["id"], *status["repo_digests"], *status["repo_tags"]]:
                client.update_labels(record, {PIN_LABEL_KEY: PIN_VALUE}, [PIN_LABEL_KEY])


def runnable_image(lab, state: str) -> str:
    """A busybox image of its own for a container in ``state``."""
    name = f"plain-prune-{state}"
    return (lab.images().get(name) or lab.push_runnable_image(f"lab/prune-{state}", name=name)).reference


def test_a_shrunk_set_frees_exactly_the_dropped_image_and_keeps_the_others_with_their_reasons(lab, node, tmp_path):
    images = lab.images()
    wanted, dropped, kept = (images[n].reference for n in ("plain-small", "plain-shared-a", "plain-shared-b"))
    hand, outside = images["plain-multiarch"].reference, images["auth-small"].reference
    runnable = {state: runnable_image(lab, state) for state in ("running", "exited", "created")}
    # Pulled outside the collection (never in the record): never removed.
    with CriClient(node["endpoint"]) as client:
        user, password = lab.credentials()
        client.pull_image(outside, dict(username=user, password=password))
    is_crio = RUNTIMES[node["runtime"]].kind == "cri-o"
    if not is_crio:
        # containerd: pulled and pinned by someone else first; the collection's pin leaves such a pin alone.
        with CriClient(node["endpoint"]) as client:
            client.pull_image(hand)
        pin_by_hand(lab, node, hand, [])
    prefetch(lab, node, tmp_path, [wanted, dropped, kept, hand, *runnable.values()])
    record = json.loads((tmp_path / "pinned-images-record.json").read_text())
    assert sorted(record["images"]) == sorted([wanted, dropped, kept, hand, *runnable.values()])
    assert outside not in record["images"]
    containers = [run_container(node, image, state=state, name=f"prune-{state}") for state, image in runnable.items()]
    assert (tmp_path / "pinned-images-record.json").stat().st_mode & 0o777 == 0o600
    if is_crio:
        pin_by_hand(lab, node, hand, [wanted])

    # The set shrinks to one image: the prefetch unpins the collection's pins of the others.
    prefetch(lab, node, tmp_path, [wanted])
    before = on_node(node)
    keep = [kept.split("@")[0] + "*"]
    check = prune(node, tmp_path, [wanted], check=True, keep=keep)
    assert on_node(node) == before, "check mode removes nothing"
    result = prune(node, tmp_path, [wanted], keep=keep)
    for report in (check, result):
        assert report["removed"] == [dropped]
        reasons = {d["image"]: (d["reason"], d["detail"]) for d in report["images"]}
        assert {image: reason for image, (reason, _detail) in reasons.items()} == dict(
            {dropped: None, kept: "keep", hand: "pinned"}, **{image: "in_use" for image in runnable.values()}
        )
        for state, image in runnable.items():
            assert reasons[image][1] == f"used by container prune-{state} ({state})"
        assert report["freed_bytes"] == before[dropped][1] > 0
    after = on_node(node)
    assert set(after) == set(before) - {dropped}
    assert {wanted, kept, hand, outside} <= set(after) and after[hand][2] is True
    assert result["changed"] is True and result["record_changed"] is True
    record = json.loads((tmp_path / "pinned-images-record.json").read_text())
    assert dropped not in record["images"]

    again = prune(node, tmp_path, [wanted], keep=keep)
    assert (again["removed"], again["changed"], again["freed_bytes"]) == ([], False, 0)
    assert on_node(node) == after

    # The containers go: their images go too; the pause image of their sandboxes (never recorded, pinned) stays.
    for container in containers:
        container.remove()
    result = prune(node, tmp_path, [wanted], keep=keep)
    assert sorted(result["removed"]) == sorted(runnable.values())
    left = on_node(node)
    assert lab.workload_images()["pause"].reference in left and {wanted, kept, hand, outside} <= set(left)
    assert not set(runnable.values()) & set(left)


def test_an_image_someone_else_also_pulled_under_a_tag_stays_with_that_tag(lab, node, tmp_path):
    images = lab.images()
    wanted, dropped = images["plain-small"], images["plain-shared-a"]
    prefetch(lab, node, tmp_path, [wanted.reference, dropped.reference])
    # The same image (one id), pulled by someone else by its tag: RemoveImage by id would take the tag too.
    with CriClient(node["endpoint"]) as client:
        client.pull_image(dropped.tag_reference)
        assert client.image_status(dropped.tag_reference)["id"] == client.image_status(dropped.reference)["id"]
    result = prune(node, tmp_path, [wanted.reference])
    assert result["removed"] == [] and result["images"][0]["reason"] == "other_names", result
    assert dropped.tag_reference in result["images"][0]["detail"]
    with CriClient(node["endpoint"]) as client:
        assert client.image_status(dropped.tag_reference) is not None


def test_a_runtime_killed_mid_prune_leaves_whole_images_and_the_rerun_finishes(lab, node, tmp_path):
    bulk = [record.reference for record in lab.push_bulk(BULK, prefix="prune-kill")]
    wanted = lab.images()["plain-small"].reference
    prefetch(lab, node, tmp_path, [wanted, *bulk])
    # No shrinking prefetch first: the prune removes the collection's pins of the bulk images itself.
    command = adhoc_command("pinned.images.prune", prune_args(node, tmp_path, [wanted]))
    running = subprocess.Popen(command, env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Kill the runtime as soon as the prune has removed one of the images, as a crash would: SIGSTOP at once (no
    # further removal), then SIGKILL. The poll sleeps so as not to starve the prune; the deadline covers ansible's
    # start and the unpin on a loaded machine.
    deadline = time.monotonic() + 240
    with CriClient(node["endpoint"]) as client:
        while time.monotonic() < deadline and running.poll() is None:
            listed = {digest for image in client.list_images() for digest in image["repo_digests"]}
            if not set(bulk) <= listed:
                os.kill(lab.state["nodes"][node["name"]]["pid"], signal.SIGSTOP)
                break
            time.sleep(0.02)
    lab.stop_node(node["name"], kill=True)
    output = running.communicate(timeout=120)[0]
    lab.start_node(node["name"])
    serving(node)
    survivors = [ref for ref in bulk if ref in on_node(node)]
    assert 0 < len(survivors) < BULK, "the kill came between the first removal and the last"
    assert running.returncode != 0 and "prune stopped at" in output, output
    # Every image CRI still lists is whole: ImageStatus answers for it by digest.
    with CriClient(node["endpoint"]) as client:
        assert all(client.image_status(ref) is not None for ref in survivors)
    result = prune(node, tmp_path, [wanted])
    assert [ref for ref in bulk if ref in on_node(node)] == []
    assert sorted(result["removed"]) == sorted(survivors)
    assert wanted in on_node(node), output
    assert prune(node, tmp_path, [wanted])["removed"] == []


DOCS = Path(__file__).resolve().parents[2] / "docs" / "pinning.md"


def run_playbook(lab, tmp_path, nodes, images, check=False, documented=False, **extra_vars) -> tuple:
    """``ansible-playbook pinned.images.prefetch`` on ``nodes`` with one worker set of ``images``; (the process, the
    report's rows by host). ``documented``: docs/pinning.md's command as written, run in a directory that holds its
    ``inventory`` and ``vars.yml``."""
    work = tmp_path / "docs-command" if documented else tmp_path
    work.mkdir(exist_ok=True)
    inventory = lab.write_inventory(work / ("inventory" if documented else "lab.yml"), nodes=nodes)
    sets = tmp_path / "sets.yaml"
    sets.write_text(
        yaml.safe_dump_all(
            [
                pinned_image_set("worker-images", images, {ROLE: "worker"}),
                role_pool("worker", ["worker"], "node-role.kubernetes.io/worker"),
            ]
        )
    )
    report = tmp_path / "report.json"
    extra = dict(cluster_sets=[str(sets)], node_progress_interval=1, cluster_report_file=str(report), **extra_vars)
    if documented:
        command = re.search(r"^ansible-playbook -i inventory pinned\.images\.prefetch .*$", DOCS.read_text(), re.M)
        assert command is not None, "docs/pinning.md shows the prune's playbook command"
        (work / "vars.yml").write_text(yaml.safe_dump(extra))
        argv = shlex.split(command.group(0))
        proc = playbook(argv[1], options=argv[2:], cwd=work, timeout=900)
    else:
        proc = playbook("pinned.images.prefetch", inventory, extra, check=check, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, {row["host"]: row for row in json.loads(report.read_text())["nodes"]}


@pytest.fixture
def all_nodes(lab):
    """The session lab's workload node of every PRUNE_RUNTIMES, emptied before and after."""
    reference_path("cri-o")  # the skip without the CRI-O reference directory
    entries = [emptied(lab.workload_node(runtime)) for runtime in PRUNE_RUNTIMES]
    yield entries
    for entry in entries:
        emptied(entry)


def test_the_prefetch_playbook_with_cluster_prune_frees_the_dropped_images_on_every_node(lab, all_nodes, tmp_path):
    entries = all_nodes
    names = [entry["name"] for entry in entries]
    images = lab.images()
    small, dropped, outside = (images[n].reference for n in ("plain-small", "plain-shared-a", "plain-shared-b"))
    for entry in entries:
        with CriClient(entry["endpoint"]) as client:
            client.pull_image(outside)
    proc, rows = run_playbook(lab, tmp_path, names, [small, dropped])
    # Off by default: nothing pruned, no freed column.
    assert all(row["pruned"] is None for row in rows.values()) and " freed " not in proc.stdout
    before = {entry["name"]: on_node(entry) for entry in entries}

    # The set shrinks: check mode reports what each node would free, and removes nothing.
    proc, rows = run_playbook(lab, tmp_path, names, [small], check=True, cluster_prune=True)
    assert {entry["name"]: on_node(entry) for entry in entries} == before
    # Check mode writes no report file: the table's rows say it, the freed column before "pinned".
    for name in names:
        freed = re.escape(human_size(before[name][dropped][1]))
        assert re.search(r'"%s\s+check .* %s  (label|dropin) \d",?$' % (name, freed), proc.stdout, re.M), proc.stdout
    assert 'check mode: nothing was pruned; \\"freed\\" counts the bytes the prune would free' in proc.stdout

    # A prefetch that did not complete (an image the registry lacks) prunes nothing: the old images stay pinned.
    missing = small.split("@")[0] + "@sha256:" + "0" * 64
    proc, rows = run_playbook(
        lab,
        tmp_path,
        names,
        [small, missing],
        cluster_prune=True,
        node_fail_on_error=False,
        cluster_fail_on_node_errors=False,
    )
    assert {entry["name"]: set(on_node(entry)) for entry in entries} == {n: set(before[n]) for n in names}
    assert all(row["pruned"] is None for row in rows.values()), rows
    assert proc.stdout.count("prune skipped: the prefetch did not complete (1 images failed)") == len(names), (
        proc.stdout
    )

    # docs/pinning.md's command as written: -e cluster_prune=true after the run's own variables.
    proc, rows = run_playbook(lab, tmp_path, names, [small], documented=True)
    for entry in entries:
        left = on_node(entry)
        assert set(left) == {small, outside}, (entry["name"], left)
        assert rows[entry["name"]]["freed_bytes"] == before[entry["name"]][dropped][1] > 0
    freed = sum(before[name][dropped][1] for name in names)
    assert re.search(r'"total \(%d nodes\).* %s"' % (len(names), re.escape(human_size(freed))), proc.stdout), (
        proc.stdout
    )


README = Path(__file__).resolve().parents[2] / "README.md"


def readme_command(module: str) -> list:
    """README's ad hoc command of ``module``, as written."""
    found = re.search(r"^ansible node1 -b -m pinned\.images\.%s .*$" % module, README.read_text(), re.M)
    assert found is not None, f"README shows the ad hoc {module} command"
    return shlex.split(found.group(0))


def test_the_readme_s_ad_hoc_prefetch_then_prune_runs_as_written(lab, tmp_path):
    """README's two commands, as written, on a containerd 2.1 node: node1 in an inventory of its own, the node's
    socket as crictl's CONTAINER_RUNTIME_ENDPOINT, the state directory the test's (conftest). Nothing else is given:
    the prune finds the prefetch's lock and record by default."""
    entry = emptied(lab.workload_node("containerd-2.1"))
    images = lab.images()
    small, dropped = images["plain-small"].reference, images["plain-shared-a"].reference
    inventory = tmp_path / "inventory.yml"

    def run_as_written(module, wanted):
        # The tests run as root, without sudo: -b is a no-op on this host.
        host = dict(ansible_connection="local", ansible_become=False, node_images=wanted)
        inventory.write_text(yaml.safe_dump({"all": {"hosts": {"node1": host}}}))
        env = ansible_env(ANSIBLE_INVENTORY=str(inventory), CONTAINER_RUNTIME_ENDPOINT=entry["endpoint"])
        proc = subprocess.run(
            readme_command(module), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    try:
        run_as_written("prefetch", [small, dropped])
        before = on_node(entry)
        assert before[small][2] and before[dropped][2], before
        output = run_as_written("prune", [small])
        after = on_node(entry)
        assert set(after) == {small}, (after, output)
        assert after[small][2] is True
        record = Path(os.environ["PINNED_IMAGES_STATE_DIR"]) / "pinned-images-record.json"
        assert sorted(json.loads(record.read_text())["images"]) == [small]
    finally:
        emptied(entry)
