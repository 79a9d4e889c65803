# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/support/cri_workloads.py without a runtime: its proto against upstream CRI, its input checks, and the
workload settings of the node configurations (tests/functional/test_cri_workloads_lab.py runs the containers)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from fixtures.reference import CRI_PROTO_PARTS, reference_path
from support import cri_workloads
from support.errors import LabError
from support.node import cgroup_parent, containerd_config, crio_config, remove_cgroup

BASE = Path("/lab/nodes/wl-1")
NODE = {"name": "cp-0", "endpoint": "unix:///lab/nodes/cp-0/containerd.sock", "root": "/lab/nodes/cp-0/root"}


def compiled(proto: Path, out: Path) -> descriptor_pb2.FileDescriptorProto:
    target = out / (proto.stem + ".pb")
    assert protoc.main(["protoc", f"-I{proto.parent}", f"--descriptor_set_out={target}", str(proto)]) == 0
    return descriptor_pb2.FileDescriptorSet.FromString(target.read_bytes()).file[0]


def test_every_rpc_message_and_field_is_upstreams_on_the_wire(tmp_path):
    ours = compiled(cri_workloads.PROTO, tmp_path)
    upstream = compiled(reference_path(*CRI_PROTO_PARTS), tmp_path)
    assert ours.package == upstream.package == "runtime.v1"
    theirs_rpcs = {m.name: (m.input_type, m.output_type) for s in upstream.service for m in s.method}
    for method in ours.service[0].method:
        assert theirs_rpcs[method.name] == (method.input_type, method.output_type), method.name
    theirs = {m.name: m for m in upstream.message_type}
    checked = 0
    for message in ours.message_type:
        # Maps are nested entry messages: compared through their field's type name.
        upstream_fields = {f.name: f for f in theirs[message.name].field}
        for f in message.field:
            u = upstream_fields[f.name]
            assert (f.number, f.type, f.label, f.type_name) == (u.number, u.type, u.label, u.type_name), (
                message.name,
                f.name,
            )
            checked += 1
    enums = {e.name: {v.name: v.number for v in e.value} for e in upstream.enum_type}
    for enum in ours.enum_type:
        assert {v.name: v.number for v in enum.value} == enums[enum.name], enum.name
    assert checked > 60


def test_a_bad_state_is_refused_naming_the_states():
    with pytest.raises(LabError, match=r"bad container state 'paused': use one of running, exited, created"):
        cri_workloads.run_container(NODE, "img", state="paused")


def test_a_node_without_workloads_is_refused_naming_the_option():
    with pytest.raises(
        LabError, match=r"node cp-0 runs no workloads: add it with Lab.add_node\(\.\.\., workloads=True\)"
    ):
        cri_workloads.run_sandbox(NODE, "pod")


@pytest.mark.parametrize("version", [2, 3])
def test_containerd_workload_config_names_the_pause_image_and_keeps_runc_under_the_node(version):
    plain = containerd_config(BASE, BASE / "containerd.sock", 1, Path("/lab/cni"), version)
    config = containerd_config(BASE, BASE / "containerd.sock", 1, Path("/lab/cni"), version, sandbox_image="h/pause:v1")
    assert "pause" not in plain and "runc" not in plain and "oom" not in plain
    plugins = tomllib.loads(config)["plugins"]
    if version == 3:
        assert plugins["io.containerd.cri.v1.images"]["pinned_images"] == {"sandbox": "h/pause:v1"}
        cri = plugins["io.containerd.cri.v1.runtime"]
    else:
        cri = plugins["io.containerd.grpc.v1.cri"]
        assert cri["sandbox_image"] == "h/pause:v1"
    assert cri["restrict_oom_score_adj"] is True
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"]["Root"] == str(BASE / "state" / "runc")
    assert Path(runc["options"]["BinaryName"]).name == "runc"


def test_crio_workload_config_runs_the_pause_images_own_command():
    plain = crio_config(BASE, BASE / "crio.sock", 1, Path("/lab/cni"), "/pinns")
    image = tomllib.loads(crio_config(BASE, BASE / "crio.sock", 1, Path("/lab/cni"), "/pinns", "h/pause:v1"))
    assert "pause" not in plain
    assert image["crio"]["image"]["pause_image"] == "h/pause:v1"
    assert image["crio"]["image"]["pause_command"] == ""


def test_a_nodes_cgroups_are_removed_deepest_first_in_every_hierarchy_and_only_its_own(tmp_path):
    parent = cgroup_parent(BASE)
    assert parent == cgroup_parent(BASE) != cgroup_parent(BASE.with_name("wl-2"))
    ours = [tmp_path / "memory" / parent.strip("/") / "pod" / "ctr", tmp_path / "unified" / parent.strip("/")]
    other = tmp_path / "memory" / "k8s.io" / "ctr"
    for path in [*ours, other]:
        path.mkdir(parents=True)
    remove_cgroup(parent, tmp_path)
    assert not any(path.exists() for path in ours) and (tmp_path / "memory").is_dir()
    assert other.is_dir()
    with pytest.raises(LabError, match="refusing to remove cgroup '/k8s.io': not a lab node's"):
        remove_cgroup("/k8s.io", tmp_path)
    assert other.is_dir()
