# SPDX-License-Identifier: GPL-3.0-or-later
"""The project's containerd images proto: the committed stubs carry exactly it, and its service, methods and field
numbers are containerd's (api/services/images/v1/images.proto, api/types/descriptor.proto,
google/protobuf/field_mask.proto). The upstream proto is not among the reference files; the lab tests in
tests/functional/test_containerd_pins_lab.py prove the wire format against real containerd 1.6 and 1.7.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from ansible_collections.pinned.images.plugins.module_utils._cri.containerd_proto import containerd_images_pb2

PROTO = Path(__file__).resolve().parents[5] / "protos" / "containerd_images.proto"
T = descriptor_pb2.FieldDescriptorProto
# containerd's numbers and types: (message, field) -> (number, type, repeated).
UPSTREAM_FIELDS = {
    ("Descriptor", "media_type"): (1, T.TYPE_STRING, False),
    ("Descriptor", "digest"): (2, T.TYPE_STRING, False),
    ("Descriptor", "size"): (3, T.TYPE_INT64, False),
    ("FieldMask", "paths"): (1, T.TYPE_STRING, True),
    ("Image", "name"): (1, T.TYPE_STRING, False),
    ("Image", "labels"): (2, T.TYPE_MESSAGE, True),
    ("Image", "target"): (3, T.TYPE_MESSAGE, False),
    ("GetImageRequest", "name"): (1, T.TYPE_STRING, False),
    ("GetImageResponse", "image"): (1, T.TYPE_MESSAGE, False),
    ("ListImagesRequest", "filters"): (1, T.TYPE_STRING, True),
    ("ListImagesResponse", "images"): (1, T.TYPE_MESSAGE, True),
    ("UpdateImageRequest", "image"): (1, T.TYPE_MESSAGE, False),
    ("UpdateImageRequest", "update_mask"): (2, T.TYPE_MESSAGE, False),
    ("UpdateImageResponse", "image"): (1, T.TYPE_MESSAGE, False),
}


def compiled(tmp_path) -> descriptor_pb2.FileDescriptorProto:
    target = tmp_path / "containerd_images.pb"
    status = protoc.main(["protoc", f"-I{PROTO.parent}", f"--descriptor_set_out={target}", str(PROTO)])
    assert status == 0
    return descriptor_pb2.FileDescriptorSet.FromString(target.read_bytes()).file[0]


def test_service_and_methods_are_containerds(tmp_path):
    ours = compiled(tmp_path)
    assert ours.package == "containerd.services.images.v1"
    assert [(s.name, sorted(m.name for m in s.method)) for s in ours.service] == [("Images", ["Get", "List", "Update"])]


def test_fields_have_containerds_numbers(tmp_path):
    ours = compiled(tmp_path)
    found = {
        (message.name, field.name): (field.number, field.type, field.label == T.LABEL_REPEATED)
        for message in ours.message_type
        for field in message.field
    }
    assert found == UPSTREAM_FIELDS
    labels_entry = next(m for m in ours.message_type if m.name == "Image").nested_type[0]
    assert labels_entry.options.map_entry
    assert [(f.name, f.type) for f in labels_entry.field] == [("key", T.TYPE_STRING), ("value", T.TYPE_STRING)]


def test_committed_stubs_carry_this_proto(tmp_path):
    expected = compiled(tmp_path)
    # protoc adds json_name only to descriptor sets, not to the descriptors it embeds in generated code.
    for message in [*expected.message_type, *(n for m in expected.message_type for n in m.nested_type)]:
        for field in message.field:
            field.ClearField("json_name")
    committed = descriptor_pb2.FileDescriptorProto.FromString(containerd_images_pb2.DESCRIPTOR.serialized_pb)
    assert committed == expected, "plugins/module_utils/_cri/containerd_proto is stale: run hack/gen_protos.sh"
