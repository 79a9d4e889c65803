# SPDX-License-Identifier: GPL-3.0-or-later
"""From a directory of PinnedImageSet and MachineConfigPool YAML files: one playbook resolves each node's images,
renders per-pool MachineConfigs, prefetches and writes per-node drop-ins (real ansible-playbook, real containerd)."""

from __future__ import annotations

import base64
import sys

import pytest
import yaml

from fixtures.ansible_runs import node_socket, remove_all_images
from fixtures.ansible_runs import playbook as ansible_playbook
from fixtures.openshift_objects import MCO_API_VERSION, pinned_image_set
from fixtures.openshift_objects import ROLE_LABEL as ROLE

PLAYBOOK = """
- name: Resolve the sets and render MachineConfigs
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Work out each node's images
      pinned.images.pinned_image_set_info:
        paths: ["{{ sets_dir }}"]
        nodes: "{{ groups['nodes'] | map('extract', hostvars, 'node') | list }}"
      register: resolved
    - name: Render one MachineConfig per pool
      pinned.images.machine_config:
        sets: ["{{ sets_dir }}"]
        dest: "{{ machineconfigs_dir }}"

- name: Prefetch, then pin
  hosts: nodes
  gather_facts: false
  vars:
    node_images: "{{ (hostvars.localhost.resolved.nodes | selectattr('name', 'equalto', inventory_hostname) | first).images }}"
  tasks:
    - name: Prefetch the node's images
      pinned.images.prefetch:
        images: "{{ node_images }}"
        cri_socket: "{{ cri_socket }}"
        state_dir: "{{ state_dir }}"
        min_free: 64Mi
    - name: Pin them
      pinned.images.crio_pinned_images:
        images: "{{ node_images }}"
        cri_socket: "{{ cri_socket }}"
        path: "{{ drop_in }}"
        reload: none
        # Check mode pulls nothing, so the presence check would only repeat what the prefetch reported.
        force: "{{ ansible_check_mode }}"
"""

NODES = {"cp-0": "master", "worker-1": "worker"}


def pool(role):
    return dict(
        apiVersion=MCO_API_VERSION,
        kind="MachineConfigPool",
        metadata=dict(name=role),
        spec=dict(
            machineConfigSelector=dict(matchLabels={ROLE: role}),
            nodeSelector=dict(matchLabels={f"node-role.kubernetes.io/{role}": ""}),
        ),
    )


def drop_in_text(images):
    quoted = ", ".join(f'"{image}"' for image in sorted(images))
    return f"[crio]\n  [crio.image]\n    pinned_images = [{quoted}]\n"


@pytest.fixture
def setup(lab, tmp_path):
    images = lab.images()
    small, shared_a, shared_b = (images[n].reference for n in ("plain-small", "plain-shared-a", "plain-shared-b"))
    sets_dir = tmp_path / "sets"
    sets_dir.mkdir()
    (sets_dir / "pools.yaml").write_text(yaml.safe_dump_all([pool("master"), pool("worker")]))
    (sets_dir / "master.yaml").write_text(
        yaml.safe_dump(pinned_image_set("control-plane-base", [small], {ROLE: "master"}))
    )
    (sets_dir / "worker.yaml").write_text(
        yaml.safe_dump_all(
            [
                pinned_image_set("worker-apps", [shared_b, shared_a], {ROLE: "worker"}),
                pinned_image_set("worker-base", [small, shared_a], {ROLE: "worker"}),
            ]
        )
    )
    inventory = {"all": {"children": {"nodes": {"hosts": {}}}}}
    for node, role in NODES.items():
        socket = node_socket(lab, node)
        remove_all_images(socket)
        inventory["all"]["children"]["nodes"]["hosts"][node] = dict(
            ansible_connection="local",
            ansible_python_interpreter=sys.executable,
            cri_socket=socket,
            drop_in=str(tmp_path / "nodes" / node / "50-pinned-images"),
            # Each node's own lock: the two run at once on this one machine.
            state_dir=str(tmp_path / "state" / node),
            node=dict(name=node, labels={f"node-role.kubernetes.io/{role}": ""}),
        )
        (tmp_path / "nodes" / node).mkdir(parents=True)
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "site.yml").write_text(PLAYBOOK)
    expected = {"cp-0": [small], "worker-1": [small, shared_a, shared_b]}
    return tmp_path, sets_dir, expected


def playbook(tmp_path, *extra):
    dirs = {"sets_dir": str(tmp_path / "sets"), "machineconfigs_dir": str(tmp_path / "machineconfigs")}
    proc = ansible_playbook(tmp_path / "site.yml", tmp_path / "inventory.yml", dirs, options=extra)
    return proc.returncode, proc.stdout + proc.stderr


def recap_changed(output):
    return {
        line.split()[0]: int(line.split("changed=")[1].split()[0])
        for line in output.splitlines()
        if "changed=" in line and " : ok=" in line
    }


def snapshot(tmp_path):
    return {
        str(p): p.read_bytes()
        for p in sorted(tmp_path.rglob("*"))
        # The lock file names the run that last held it.
        if p.is_file() and p.suffix != ".retry" and "sets" not in p.parts and "state" not in p.parts
    }


def test_sets_directory_to_machineconfigs_and_drop_ins(setup):
    tmp_path, sets_dir, expected = setup
    rc, output = playbook(tmp_path)
    assert rc == 0, output
    for node, images in expected.items():
        assert (tmp_path / "nodes" / node / "50-pinned-images").read_text() == drop_in_text(images)
    for role, node in (("master", "cp-0"), ("worker", "worker-1")):
        machine_config = yaml.safe_load((tmp_path / "machineconfigs" / f"99-{role}-pinned-images.yaml").read_text())
        assert machine_config["metadata"]["labels"] == {"machineconfiguration.openshift.io/role": role}
        source = machine_config["spec"]["config"]["storage"]["files"][0]["contents"]["source"]
        assert base64.b64decode(source.split(",", 1)[1]).decode() == drop_in_text(expected[node])

    before = snapshot(tmp_path)
    rc, output = playbook(tmp_path)
    assert rc == 0, output
    assert set(recap_changed(output).values()) == {0}, output
    assert snapshot(tmp_path) == before

    # A new image in a set: check mode shows the diff and changes nothing.
    extra = next(iter(expected["worker-1"]))
    (sets_dir / "master.yaml").write_text(
        yaml.safe_dump(
            pinned_image_set(
                "control-plane-base", sorted({*expected["cp-0"], extra, *expected["worker-1"]}), {ROLE: "master"}
            )
        )
    )
    rc, output = playbook(tmp_path, "--check", "--diff")
    assert rc == 0, output
    assert "+++ after" in output and "pinned_images" in output
    assert snapshot(tmp_path) == before

    # A bad set (a tag, not a digest): every problem named, nothing written.
    (sets_dir / "bad.yaml").write_text(
        yaml.safe_dump(pinned_image_set("Bad_Name", ["quay.io/org/app:latest"], {ROLE: "worker"}))
    )
    rc, output = playbook(tmp_path)
    assert rc != 0
    assert "Bad_Name" in output and "quay.io/org/app:latest" in output
    assert snapshot(tmp_path) == before
