# SPDX-License-Identifier: GPL-3.0-or-later
"""The pinned.images.doctor playbook through real `ansible-playbook` on lab nodes: containerd 1.6 (labels not
honoured), containerd 2.1 with an image that carries k3s's pin label and ours, CRI-O with a later drop-in that
overrides pinned_images, and a host without Python 3; each node's report names its findings, and the doctor changes
nothing. The checks' logic: tests/unit/plugins/module_utils/_doctor/."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
from ansible_collections.pinned.images.plugins.module_utils._doctor.facts import K3S_PIN_LABEL_KEY
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import PIN_LABEL_KEY, PIN_VALUE
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import render_pinned_images
from fixtures.ansible_runs import playbook, remove_all_images, warnings_in
from fixtures.reference import reference_path

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]
DOCS, README = ROOT / "docs" / "doctor.md", ROOT / "README.md"
COMMAND = "ansible-playbook -i inventory pinned.images.doctor -e @vars.yml"


def reports(output: str) -> dict:
    """{host: its report's lines}, from the default callback's "msg" lists of the Report task."""
    found = {}
    for host, body in re.findall(r"^ok: \[([^\]]+)\] => (\{.*?^\})", output, re.M | re.S):
        found[host] = json.loads(body)["msg"]
    return found


def test_the_doctor_names_what_voids_the_pins_on_each_node(lab, tmp_path):
    reference_path("cri-o")  # the skip without the CRI-O reference directory
    old, new, crio = (lab.runtime_node(key) for key in ("containerd-1.6", "containerd-2.1", "cri-o"))
    small = lab.images()["plain-small"].reference
    dropins = Path(crio["dropin_dir"])
    ours, later = dropins / "50-pinned-images", dropins / "99-site.conf"
    ours.write_text(render_pinned_images([small]))
    later.write_text(render_pinned_images(["quay.io/site/*"]))
    try:
        with CriClient(new["endpoint"]) as client:
            client.pull_image(small)
        # As k3s labels an airgap image it imported, and our prefetch then pinned it.
        containerd = ContainerdClient(new["endpoint"])
        with containerd:
            (record,) = [r for r in containerd.list_records() if r["name"] == small]
            labels = {K3S_PIN_LABEL_KEY: "pinned", PIN_LABEL_KEY: PIN_VALUE}
            containerd.update_labels(record, labels, labels)
        inventory = yaml.safe_load(lab.inventory_yaml(nodes=[old["name"], new["name"], crio["name"]]))
        # A host whose Python is not there, as on Talos or Bottlerocket.
        inventory["all"]["children"]["workers"]["hosts"]["no-python"] = dict(
            ansible_connection="local", ansible_become=False, ansible_python_interpreter="/nonexistent/bin/python3"
        )
        (tmp_path / "inventory").write_text(yaml.safe_dump(inventory))
        # The test's own kubelet files, never the machine's: its image GC off (a high threshold of 100), so that no
        # finding depends on this machine's disk, and no kubelet binary.
        kubelet = tmp_path / "kubelet.yaml"
        kubelet.write_text(yaml.safe_dump({"kind": "KubeletConfiguration", "imageGCHighThresholdPercent": 100}))
        (tmp_path / "vars.yml").write_text(
            yaml.safe_dump(
                {
                    "doctor_images": [small],
                    "doctor_kubelet_config": [str(kubelet)],
                    "doctor_kubelet_binary": [str(tmp_path / "no-kubelet")],
                }
            )
        )
        before = {p.name: p.read_text() for p in dropins.iterdir()}
        # docs/doctor.md's command (README's too), as written, where its inventory and vars.yml are.
        for doc in (DOCS, README):
            assert COMMAND in doc.read_text(), doc
        argv = shlex.split(COMMAND)
        proc = playbook(argv[3], options=argv[1:3] + argv[4:], cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # Findings are the report's, not Ansible's: a clean run prints no warning.
        assert warnings_in(proc.stdout + proc.stderr) == [], proc.stdout + proc.stderr
        found = reports(proc.stdout)
        assert re.fullmatch(r"%s: containerd 1\.6\.20\S* at \S+: 1 error" % old["name"], found[old["name"]][0])
        assert found[old["name"]][1].startswith("  error old_containerd: containerd 1.6.20")
        assert found[new["name"]][0].endswith(": 1 warning")
        assert found[new["name"]][1].startswith(
            f"  warning k3s_pin_label: 1 images carry both io.cattle.k3s.pinned and io.cri-containerd.pinned ({small})"
        )
        assert found[crio["name"]][0].endswith(": 1 error")
        assert found[crio["name"]][1] == (
            f"  error crio_dropin_override: CRI-O reads {later} after {ours}, and its pinned_images (1 entries) "
            f"replaces the whole list: 1 of the 1 images of {ours} are not pinned"
        )
        assert found["no-python"][:2] == ["no-python: 1 error", "  error no_python: no-python has no python3"]
        assert found["no-python"][3].endswith("the doctor has no pod mode: its checks need python3 on the node")
        # Read-only: the drop-ins and the labels as they were.
        assert {p.name: p.read_text() for p in dropins.iterdir()} == before
        with containerd:
            (record,) = [r for r in containerd.list_records() if r["name"] == small]
        assert record["labels"][K3S_PIN_LABEL_KEY] == "pinned"
    finally:
        ours.unlink(missing_ok=True)
        later.unlink(missing_ok=True)
        remove_all_images(new["endpoint"])
