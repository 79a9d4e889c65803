# SPDX-License-Identifier: GPL-3.0-or-later
"""Valid and hostile input for _image_ref.parse_image_ref."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageRef,
    ImageReferenceError,
    parse_image_ref,
)

HEX = "0123456789abcdef" * 4
DIGEST = "sha256:" + HEX

# (input, require_digest, (registry, repository, tag, digest), str())
VALID = [
    ("quay.io/ns/app@" + DIGEST, True, ("quay.io", "ns/app", None, DIGEST), "quay.io/ns/app@" + DIGEST),
    ("quay.io/ns/app:v1@" + DIGEST, True, ("quay.io", "ns/app", "v1", DIGEST), "quay.io/ns/app:v1@" + DIGEST),
    ("quay.io/ns/app:v1", False, ("quay.io", "ns/app", "v1", None), "quay.io/ns/app:v1"),
    ("quay.io/ns/app", False, ("quay.io", "ns/app", None, None), "quay.io/ns/app"),
    # Docker Hub normalisation.
    ("busybox", False, ("docker.io", "library/busybox", None, None), "docker.io/library/busybox"),
    ("busybox:1.36", False, ("docker.io", "library/busybox", "1.36", None), "docker.io/library/busybox:1.36"),
    ("busybox@" + DIGEST, True, ("docker.io", "library/busybox", None, DIGEST), "docker.io/library/busybox@" + DIGEST),
    ("library/busybox", False, ("docker.io", "library/busybox", None, None), "docker.io/library/busybox"),
    ("foo/bar", False, ("docker.io", "foo/bar", None, None), "docker.io/foo/bar"),
    ("docker.io/library/busybox", False, ("docker.io", "library/busybox", None, None), "docker.io/library/busybox"),
    ("index.docker.io/x/y", False, ("docker.io", "x/y", None, None), "docker.io/x/y"),
    ("registry-1.docker.io/x/y", False, ("docker.io", "x/y", None, None), "docker.io/x/y"),
    (
        "index.docker.io/library/busybox",
        False,
        ("docker.io", "library/busybox", None, None),
        "docker.io/library/busybox",
    ),
    # Hosts: dots, ports, localhost, IPv4, IPv6 in brackets, upper case (a host, as in distribution).
    ("localhost/app", False, ("localhost", "app", None, None), "localhost/app"),
    ("localhost:5000/app:t", False, ("localhost:5000", "app", "t", None), "localhost:5000/app:t"),
    ("127.0.0.1:5000/a/b@" + DIGEST, True, ("127.0.0.1:5000", "a/b", None, DIGEST), "127.0.0.1:5000/a/b@" + DIGEST),
    ("[::1]:5000/a/b:t", False, ("[::1]:5000", "a/b", "t", None), "[::1]:5000/a/b:t"),
    ("[fd00::1]/a", False, ("[fd00::1]", "a", None, None), "[fd00::1]/a"),
    ("registry:5000/a", False, ("registry:5000", "a", None, None), "registry:5000/a"),
    ("Foo/bar", False, ("Foo", "bar", None, None), "Foo/bar"),
    ("my-reg.example.com/a", False, ("my-reg.example.com", "a", None, None), "my-reg.example.com/a"),
    # Without a slash a colon is a tag, never a port.
    ("registry:5000", False, ("docker.io", "library/registry", "5000", None), "docker.io/library/registry:5000"),
    # Path component separators.
    (
        "quay.io/a.b/c_d/e__f/g-h/i--j",
        False,
        ("quay.io", "a.b/c_d/e__f/g-h/i--j", None, None),
        "quay.io/a.b/c_d/e__f/g-h/i--j",
    ),
    ("quay.io/a/b/c/d/e/f", False, ("quay.io", "a/b/c/d/e/f", None, None), "quay.io/a/b/c/d/e/f"),
    # Tags: 128 characters, letters of both cases, leading underscore or digit.
    ("quay.io/a:" + "T" * 128, False, ("quay.io", "a", "T" * 128, None), "quay.io/a:" + "T" * 128),
    ("quay.io/a:_x.Y-1", False, ("quay.io", "a", "_x.Y-1", None), "quay.io/a:_x.Y-1"),
    ("quay.io/a:0", False, ("quay.io", "a", "0", None), "quay.io/a:0"),
    # Path exactly 255 characters: the host is not counted (distribution/reference v0.6.0).
    (
        "quay.example.com/" + "a" * 255,
        False,
        ("quay.example.com", "a" * 255, None, None),
        "quay.example.com/" + "a" * 255,
    ),
    # Ports are digits, any number of them, as in the grammar.
    ("quay.io:123456/a", False, ("quay.io:123456", "a", None, None), "quay.io:123456/a"),
    # An image id is refused only as the whole reference.
    ("docker.io/" + HEX, False, ("docker.io", "library/" + HEX, None, None), "docker.io/library/" + HEX),
]


@pytest.mark.parametrize("value, require_digest, fields, text", VALID)
def test_valid(value, require_digest, fields, text):
    ref = parse_image_ref(value, require_digest=require_digest)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == fields
    assert ref.name == f"{fields[0]}/{fields[1]}"
    assert str(ref) == text
    # A normalised reference parses to itself.
    assert parse_image_ref(str(ref), require_digest=require_digest) == ref


def test_default_requires_digest():
    with pytest.raises(ImageReferenceError, match="not pinned by digest"):
        parse_image_ref("quay.io/a:v1")
    assert parse_image_ref("quay.io/a@" + DIGEST) == ImageRef("quay.io", "a", None, DIGEST)


# (input, require_digest, fragment of the message)
INVALID = [
    ("", False, "is empty"),
    (None, False, "must be a string"),
    (b"quay.io/a", False, "must be a string"),
    (42, False, "must be a string"),
    ("x" * 10240, False, "10240 characters long"),
    ("quay.io/a@" + DIGEST + "x" * 10000, True, "characters long"),
    # Whitespace and control characters anywhere.
    (" quay.io/a@" + DIGEST, True, "whitespace"),
    ("quay.io/a@" + DIGEST + " ", True, "whitespace"),
    ("quay.io/a@" + DIGEST + "\n", True, "whitespace"),
    ("quay.io/a\n@" + DIGEST, True, "whitespace"),
    ("quay.io/a:t\tag", False, "whitespace"),
    ("quay.io/a\r", False, "whitespace"),
    ("quay.io/a\x00", False, "control characters"),
    ("quay.io/a\x7f", False, "control characters"),
    ("quay.io/a\u00a0b", False, "whitespace"),
    ("quay.io/a\u2028", False, "whitespace"),
    # Digests.
    ("quay.io/a@sha256:" + HEX.upper(), True, "64 lower-case hex digits"),
    ("quay.io/a@sha256:" + HEX[:63], True, "64 lower-case hex digits"),
    ("quay.io/a@sha256:" + HEX + "0", True, "64 lower-case hex digits"),
    ("quay.io/a@sha256:" + HEX[:63] + "g", True, "64 lower-case hex digits"),
    ("quay.io/a@sha512:" + HEX * 2, True, "allowed is sha256:"),
    ("quay.io/a@" + HEX, True, "allowed is sha256:"),
    ("quay.io/a@", True, "has digest ''"),
    ("quay.io/a@sha256:", True, "64 lower-case hex digits"),
    ("quay.io/a@" + DIGEST + "@" + DIGEST, True, "more than one '@'"),
    ("quay.io/a@@" + DIGEST, True, "more than one '@'"),
    ("@" + DIGEST, True, "no repository name"),
    # Tags.
    ("quay.io/a:", False, "invalid tag ''"),
    ("quay.io/a:.t", False, "invalid tag '.t'"),
    ("quay.io/a:-t", False, "invalid tag '-t'"),
    ("quay.io/a:t/x", False, "invalid path component"),
    ("quay.io/a:" + "t" * 129, False, "invalid tag"),
    ("quay.io/a:t+1", False, "invalid tag"),
    ("quay.io/a:tag:again", False, "invalid path component"),
    (":tag", False, "no repository name"),
    # Hosts and ports.
    ("quay.io:/a", False, "invalid registry host 'quay.io:'"),
    ("quay.io:abc/a", False, "invalid registry host"),
    ("-quay.io/a", False, "invalid registry host"),
    ("quay-.io/a", False, "invalid registry host"),
    ("quay..io/a", False, "invalid registry host"),
    ("[]/a", False, "invalid registry host"),
    ("[zz::1]/a", False, "invalid registry host"),
    ("[::1/a", False, "invalid registry host"),
    ("[fe80::1%eth0]/a", False, "invalid registry host"),
    ("qu_ay.io/a", False, "invalid registry host"),
    ("\u00e9.io/a", False, "invalid registry host"),
    # Path components.
    ("quay.io/A", False, "invalid path component 'A'"),
    ("quay.io/a//b", False, "invalid path component ''"),
    ("quay.io/a/", False, "invalid path component ''"),
    ("/a", False, "invalid path component ''"),
    ("quay.io/", False, "invalid path component ''"),
    ("quay.io/-a", False, "invalid path component"),
    ("quay.io/a-", False, "invalid path component"),
    ("quay.io/a___b", False, "invalid path component"),
    ("quay.io/a..b", False, "invalid path component"),
    ("quay.io/a._b", False, "invalid path component"),
    ("quay.io/\u00e9", False, "invalid path component"),
    ("quay.io/a$(reboot)", False, "invalid path component"),
    ("quay.io/../etc/passwd", False, "invalid path component"),
    ("q.io/" + "a" * 256, False, "repository path of 256 characters; at most 255"),
    ("docker.io/" + "a" * 248, False, "repository path of 256 characters"),  # library/ counts
    (HEX * 1, False, "64-hex image id"),
]


@pytest.mark.parametrize("value, require_digest, fragment", INVALID)
def test_invalid(value, require_digest, fragment):
    with pytest.raises(ImageReferenceError) as info:
        parse_image_ref(value, require_digest=require_digest)
    message = str(info.value)
    assert fragment in message
    # Hostile input is quoted shortened and escaped: no raw newlines, never kilobytes.
    assert "\n" not in message and len(message) < 400


def test_refuses_exactly_whitespace_and_control_characters():
    # Every code point up to the ideographic space (U+3000): Unicode whitespace (U+0085, U+00A0, U+2028, ...) and
    # ASCII controls are refused, nothing else is refused for that reason.
    refused = set()
    for code in range(0x3001):
        try:
            parse_image_ref(f"quay.io/a{chr(code)}b:tag", require_digest=False)
        except ImageReferenceError as exc:
            if "whitespace or control" in str(exc):
                refused.add(code)
    assert refused == {code for code in range(0x3001) if chr(code).isspace() or code < 32 or code == 127}


def test_error_derives_from_the_collection_root():
    assert issubclass(ImageReferenceError, CollectionError)


# Docker Hub repositories named with an explicit host and a single component belong under library/,
# as in distribution's ParseNormalizedNamed (and as CRI runtimes report them in repo_digests).
@pytest.mark.parametrize("value", ["docker.io/busybox", "index.docker.io/busybox", "registry-1.docker.io/busybox"])
def test_explicit_docker_hub_single_component_gets_library(value):
    assert parse_image_ref(value, require_digest=False).name == "docker.io/library/busybox"
