# SPDX-License-Identifier: GPL-3.0-or-later
"""The project's CRI proto must match the upstream runtime.v1 API on the wire.

Both protos are compiled with protoc (grpc_tools) into descriptor sets; every message, field and RPC the project
declares must exist upstream with the same name, number, type, label and message type. The committed stubs must
also carry exactly the project's proto, so a stale regeneration fails here too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from fixtures.reference import CRI_PROTO_PARTS, reference_path

ROOT = Path(__file__).resolve().parents[5]
PROJECT_PROTO = ROOT / "protos" / "cri_image.proto"


def compile_proto(proto: Path, out: Path) -> descriptor_pb2.FileDescriptorProto:
    target = out / (proto.stem + ".pb")
    status = protoc.main(["protoc", f"-I{proto.parent}", f"--descriptor_set_out={target}", str(proto)])
    assert status == 0, f"protoc failed on {proto}"
    descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(target.read_bytes())
    return descriptor_set.file[0]


def messages(file_proto) -> dict:
    found = {}

    def walk(prefix, message_types):
        for message in message_types:
            name = f"{prefix}.{message.name}"
            found[name] = message
            walk(name, message.nested_type)

    walk("." + file_proto.package, file_proto.message_type)
    return found


def services(file_proto) -> dict:
    return {
        f"/{file_proto.package}.{service.name}/{method.name}": (method.input_type, method.output_type)
        for service in file_proto.service
        for method in service.method
    }


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("protos")
    return compile_proto(PROJECT_PROTO, out), compile_proto(reference_path(*CRI_PROTO_PARTS), out)


def test_same_package(compiled):
    ours, upstream = compiled
    assert ours.package == upstream.package == "runtime.v1"


def test_every_rpc_exists_upstream_with_same_types(compiled):
    ours, upstream = compiled
    upstream_rpcs = services(upstream)
    assert set(services(ours)) == {
        "/runtime.v1.RuntimeService/Version",
        "/runtime.v1.RuntimeService/Status",
        "/runtime.v1.RuntimeService/ListContainers",
        "/runtime.v1.ImageService/ListImages",
        "/runtime.v1.ImageService/ImageStatus",
        "/runtime.v1.ImageService/PullImage",
        "/runtime.v1.ImageService/RemoveImage",
        "/runtime.v1.ImageService/ImageFsInfo",
    }
    for path, types in services(ours).items():
        assert upstream_rpcs.get(path) == types, path


def test_every_field_matches_upstream(compiled):
    ours, upstream = compiled
    upstream_messages = messages(upstream)
    checked = 0
    for name, message in messages(ours).items():
        assert name in upstream_messages, f"{name} is not an upstream message"
        upstream_fields = {field.number: field for field in upstream_messages[name].field}
        for field in message.field:
            other = upstream_fields.get(field.number)
            assert other is not None, f"{name}.{field.name} = {field.number} does not exist upstream"
            assert (field.name, field.type, field.label, field.type_name) == (
                other.name,
                other.type,
                other.label,
                other.type_name,
            ), f"{name}.{field.name} differs from upstream"
            checked += 1
        assert message.options.map_entry == upstream_messages[name].options.map_entry, name
    assert checked >= 40


def test_every_enum_matches_upstream(compiled):
    """ContainerState (ListContainers, for the prune): the same values under the same numbers."""
    ours, upstream = compiled
    upstream_enums = {enum.name: {v.name: v.number for v in enum.value} for enum in upstream.enum_type}
    ours_enums = {enum.name: {v.name: v.number for v in enum.value} for enum in ours.enum_type}
    assert "ContainerState" in ours_enums
    for name, values in ours_enums.items():
        assert upstream_enums.get(name) == values, name


def test_the_prune_reads_the_containers_fields(compiled):
    """The Container fields the prune matches images with are declared (image, image_ref, image_id, state)."""
    ours, _upstream = compiled
    fields = {field.name: field.number for field in messages(ours)[".runtime.v1.Container"].field}
    assert {"id": 1, "image": 4, "image_ref": 5, "state": 6, "image_id": 10}.items() <= fields.items()


def test_committed_stubs_carry_this_proto(compiled):
    from ansible_collections.pinned.images.plugins.module_utils._cri.cri_proto import cri_image_pb2

    ours, _upstream = compiled
    expected = descriptor_pb2.FileDescriptorProto()
    expected.CopyFrom(ours)
    # protoc adds json_name only to descriptor sets, not to the descriptors it embeds in generated code.
    for message in messages(expected).values():
        for field in message.field:
            field.ClearField("json_name")
    committed = descriptor_pb2.FileDescriptorProto.FromString(cri_image_pb2.DESCRIPTOR.serialized_pb)
    assert committed == expected, "plugins/module_utils/_cri/cri_proto is stale: run hack/gen_protos.sh"


def test_secret_fields_are_redacted_in_debug_output():
    from ansible_collections.pinned.images.plugins.module_utils._cri.cri_proto import cri_image_pb2

    password_options = cri_image_pb2.AuthConfig.DESCRIPTOR.fields_by_name["password"].GetOptions()
    assert password_options.debug_redact
