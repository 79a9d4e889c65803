# SPDX-License-Identifier: GPL-3.0-or-later
"""Nodes laid out as k3s, RKE2 and MicroK8s lay out containerd (``Lab.layout_node``: real containerd 2.1 with the
layout's socket, config file, hosts directory and flags, in a host root of its own): with no option but
``host_root``, as in pod mode, ``prefetch`` finds the socket, the config the running containerd was started with
(not the stray ``/etc/containerd/config.toml`` of the k3s layout) and its hosts directory, and its disk guard reads a
mirror-only image where containerd pulls it; ``cri_image_info`` says what it found and where from.

And the pull mode on a containerd 2.1 node: with a ``config_path`` list in transfer mode, containerd pulls from the
image's own registry whatever hosts.toml says, and the guard reads there too and says why, as the doctor's
``transfer_mode_config_path`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.ansible_runs import adhoc
from support.images import KIB
from support.node import LAB_LAYOUTS, STRAY_CONTAINERD_CONFIG, host_file, hosts_toml
from support.ports import free_port
from support.processes import write_file

MIRROR_ONLY = "mirror-only.example.invalid"


@pytest.fixture(scope="module", params=sorted(LAB_LAYOUTS))
def layout(request, lab):
    """(the layout's node entry, its layout): a mirror-only registry in its hosts directory, the lab's pull secret
    at the kubelet's path in its host root."""
    entry = lab.layout_node(request.param)
    spec = LAB_LAYOUTS[request.param]
    host = Path(entry["host_root"])
    plain = lab.state["registries"]["plain"]["url"]
    write_file(host_file(host, f"{spec.hosts_dir}/{MIRROR_ONLY}/hosts.toml"), hosts_toml(plain, None))
    auth = Path(lab.state["registries"]["auth"]["docker_config"]).read_text()
    write_file(host_file(host, "/var/lib/kubelet/config.json"), auth, 0o600)
    return entry, spec


def test_prefetch_finds_the_layout_with_no_option(lab, layout):
    entry, spec = layout
    key = entry["layout"]
    mirrored = lab.push_image(f"layouts/{key}", [64 * KIB], name=f"layout-{key}")
    private = lab.push_image(f"private/layouts-{key}", [32 * KIB], registry="auth", name=f"layout-auth-{key}")
    image = f"{MIRROR_ONLY}/layouts/{key}@{mirrored.digest}"
    rc, result, output = adhoc(
        "pinned.images.prefetch",
        dict(images=[image, private.reference], host_root=entry["host_root"], min_free="1Mi"),
    )
    assert rc == 0, output
    assert {item["image"]: item["status"] for item in result["images"]} == {
        image: "pulled",
        private.reference: "pulled",
    }
    guard = result["disk_guard"]
    assert guard["images"] == 2 and guard["pull_mode"] == "transfer"
    assert f"(from {spec.config}, the --config flag of containerd (pid {entry['pid']}))" in guard["sources_from"]
    mirror_hosts = host_file(Path(entry["host_root"]), f"{spec.hosts_dir}/{MIRROR_ONLY}/hosts.toml")
    plain = lab.state["registries"]["plain"]["url"]
    assert guard["sources"][image] == f"{plain}/v2 ({mirror_hosts})"
    # The lab's CA, copied into the hosts directory and named by its host path, read under host_root.
    assert guard["sources"][private.reference].startswith(lab.state["registries"]["auth"]["url"] + "/v2 (")
    assert result["runtime"]["endpoint"] == entry["socket"]


def test_cri_image_info_reports_the_layout_and_where_each_part_came_from(lab, layout):
    entry, spec = layout
    host = Path(entry["host_root"])
    rc, result, output = adhoc("pinned.images.cri_image_info", dict(host_root=str(host)))
    assert rc == 0, output
    found = result["layout"]
    assert found["socket"] == {
        "path": spec.socket,
        "source": "the first of the known sockets that exists (docs/nodes.md)",
    }
    assert (found["layout"], found["runtime"], found["pid"]) == (
        "microk8s" if entry["layout"] == "microk8s" else "k3s-rke2",
        "containerd",
        entry["pid"],
    )
    assert found["config"] == {"path": spec.config, "source": f"the --config flag of containerd (pid {entry['pid']})"}
    assert found["hosts"]["config_path"] == [spec.hosts_dir]
    assert found["hosts"]["config_files"] == [spec.config]
    assert found["hosts"]["pull_mode"] == "transfer" and found["hosts"]["warnings"] == []
    if entry["layout"] == "k3s":
        # The stray file is there, and loses.
        assert host_file(host, "/etc/containerd/config.toml").read_text() == STRAY_CONTAINERD_CONFIG
        assert not any(path.startswith("/etc/") for path in found["hosts"]["config_files"] + [found["config"]["path"]])


def test_transfer_mode_with_a_config_path_list_pulls_upstream_and_the_guard_says_so(lab, tmp_path):
    """containerd 2.1, config_path "<first>:<second>": the transfer service takes it as one directory name, so a
    hosts.toml that sends the plain registry to a mirror that is down is never read: containerd pulls from the
    registry itself, and the guard reads the same place and says why."""
    first, second = tmp_path / "first", tmp_path / "second"
    plain_host = lab.state["registries"]["plain"]["host"]
    dead = f"http://127.0.0.1:{free_port()}"
    write_file(first / plain_host / "hosts.toml", f'[host."{dead}"]\n  capabilities = ["pull", "resolve"]\n')
    second.mkdir()
    entry = lab.add_node("ly-transfer", runtime="containerd-2.1", config_path=f"{first}:{second}")
    record = lab.push_image("layouts/transfer", [64 * KIB], name="layout-transfer")
    rc, result, output = adhoc(
        "pinned.images.prefetch", dict(images=[record.reference], cri_socket=entry["endpoint"], min_free="1Mi")
    )
    assert rc == 0, output
    assert result["images"][0]["status"] == "pulled"
    guard = result["disk_guard"]
    assert guard["pull_mode"] == "transfer"
    assert guard["pull_mode_reason"].startswith("containerd 2.1.9")
    assert guard["sources"][record.reference].startswith(f"http://{plain_host}/v2 (")
    assert f"(from {entry['config']}, the --config flag of containerd" in guard["sources_from"]
    # The module's warning (ansible prints it, wrapped, on stderr).
    assert "containerd #12415" in " ".join(output.split())
    # The doctor reads the same pull mode and config_path, and names the list.
    # Every other file the doctor reads is the test's own (none there), never the machine's.
    own = dict(
        kubelet_config=[str(tmp_path / "kubelet.yaml")],
        kubelet_binary=[str(tmp_path / "kubelet")],
        dropin_path=str(tmp_path / "50-pinned-images"),
    )
    rc, result, output = adhoc("pinned.images.cri_image_info", dict(cri_socket=entry["endpoint"], checks=True, **own))
    assert rc == 0, output
    assert result["layout"]["hosts"]["config_path"] == [f"{first}:{second}"]
    (found,) = [item for item in result["checks"] if item["check"] == "transfer_mode_config_path"]
    assert found["severity"] == "error"
    assert f"config_path is '{first}:{second}', a list of directories (from {entry['config']}, " in found["detail"]
