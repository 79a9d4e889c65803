# SPDX-License-Identifier: GPL-3.0-or-later
"""Docker-config parsing and the most-specific-key lookup of _registry_auth."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common import image_ref as _image_ref
from ansible_collections.pinned.images.plugins.module_utils._common.secrets import REDACTED, redact
from ansible_collections.pinned.images.plugins.module_utils._registry import auth as _registry_auth
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import (
    DockerConfig,
    RegistryAuthError,
    RegistryCredentials,
    load_docker_config,
    parse_docker_config,
)
from fixtures.bad_files import error_of

SECRET = "s3cr3t:with:colons"
# Test tables kept as data (one line a case).
CASES = Path(__file__).parent / "cases"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config(auths) -> DockerConfig:
    return parse_docker_config(json.dumps({"auths": auths}), "test.json")


# [keys in the file, image name, key expected to win or None]
LOOKUP_CASES = yaml.safe_load((CASES / "registry_auth_lookup.yaml").read_text())


@pytest.mark.parametrize("keys, name, expected", LOOKUP_CASES)
def test_most_specific_key_wins(keys, name, expected):
    cfg = config({key: {"auth": b64(f"user-{i}:pw-{i}")} for i, key in enumerate(keys)})
    creds = cfg.credentials_for(name)
    if expected is None:
        assert creds is None
    else:
        assert creds is not None
        assert creds.username == f"user-{keys.index(expected)}"


ENTRY_CASES = [
    ({"auth": b64("alice:" + SECRET)}, ("alice", SECRET, "", "")),
    ({"auth": b64("alice:")}, ("alice", "", "", "")),
    ({"auth": b64(":pw")}, ("", "pw", "", "")),
    ({"auth": "  " + b64("alice:pw") + "\n"}, ("alice", "pw", "", "")),
    ({"auth": b64("ünï:cødé")}, ("ünï", "cødé", "", "")),
    ({"username": "bob", "password": SECRET}, ("bob", SECRET, "", "")),
    ({"username": "bob", "password": "x", "auth": b64("alice:y")}, ("alice", "y", "", "")),
    ({"auth": "", "username": "bob", "password": "x"}, ("bob", "x", "", "")),
    ({"identitytoken": "idt"}, ("", "", "idt", "")),
    ({"username": "<token>", "identitytoken": "idt"}, ("<token>", "", "idt", "")),
    ({"registrytoken": "rt"}, ("", "", "", "rt")),
    ({"auth": b64("a:b"), "email": "a@example.com", "unknown": [1]}, ("a", "b", "", "")),
    ({"username": None, "password": "x"}, ("", "x", "", "")),
]


@pytest.mark.parametrize("entry, expected", ENTRY_CASES)
def test_entry_fields(entry, expected):
    creds = config({"reg.example.com": entry}).credentials_for("reg.example.com/a")
    assert (creds.username, creds.password, creds.identity_token, creds.registry_token) == expected
    assert creds.server_address == "reg.example.com"


@pytest.mark.parametrize("entry", [{}, {"email": "a@b"}, {"auth": ""}, {"username": "", "password": ""}])
def test_empty_entries_are_ignored(entry):
    cfg = config({"reg.example.com/ns": entry, "reg.example.com": {"auth": b64("host:pw")}})
    assert cfg.credentials_for("reg.example.com/ns/app").username == "host"


BAD_CASES = [
    ("[]", "top level must be a JSON object"),
    ('"text"', "top level must be a JSON object"),
    ("{", "not valid JSON"),
    ("", "not valid JSON"),
    ("{'auths': {}}", "not valid JSON"),
    ('{"auths": []}', "'auths' must be an object"),
    ('{"auths": "x"}', "'auths' must be an object"),
    ('{"auths": {"reg": "x"}}', "auths['reg'] must be an object"),
    ('{"auths": {"reg": {"auth": 5}}}', "auths['reg']: field 'auth' must be a string"),
    ('{"auths": {"reg": {"username": ["a"]}}}', "field 'username' must be a string"),
    ('{"auths": {"reg": {"password": {}}}}', "field 'password' must be a string"),
    ('{"auths": {"reg": {"identitytoken": 1}}}', "field 'identitytoken' must be a string"),
    ('{"auths": {"reg": {"registrytoken": true}}}', "field 'registrytoken' must be a string"),
    ('{"auths": {"reg": {"auth": "!!!notbase64"}}}', "auths['reg']: field 'auth' is not valid base64"),
    ('{"auths": {"reg": {"auth": "YWxpY2U6cHc"}}}', "is not valid base64"),  # missing padding
    ('{"auths": {"reg": {"auth": "%s"}}}' % b64("nocolon"), "does not decode to 'username:password'"),
    ('{"auths": {"reg": {"auth": "%s"}}}' % base64.b64encode(b"\xff\xfe:\x80").decode(), "does not decode to UTF-8"),
    ('{"auths": {"": {"auth": "%s"}}}' % b64("a:b"), "key has no registry host"),
    ('{"auths": {"https:///ns": {"auth": "%s"}}}' % b64("a:b"), "key has no registry host"),
    ("[" * 100000 + "]" * 100000, "not valid JSON"),
]


@pytest.mark.parametrize("text, message", BAD_CASES)
def test_bad_documents(text, message):
    error = error_of(RegistryAuthError, parse_docker_config, text, "/etc/pull.json")
    assert message in error
    assert error.startswith("/etc/pull.json")


def test_error_never_quotes_the_secret():
    bad = "!!" + SECRET + "!!"
    texts = [
        json.dumps({"auths": {"reg": {"auth": bad}}}),
        '{"auths": {"reg": {"auth": "%s"}} ' % bad,  # truncated JSON around the secret
        json.dumps({"auths": {"reg": {"password": SECRET, "username": 5}}}),
    ]
    for text in texts:
        with pytest.raises(RegistryAuthError) as info:
            parse_docker_config(text, "f.json")
        assert SECRET not in str(info.value)
        assert SECRET not in repr(info.value)
        # "from None" keeps the decoder's exception (which may quote input) out of tracebacks.
        assert info.value.__suppress_context__ or info.value.__context__ is None


def test_legacy_dockercfg_layout():
    cfg = parse_docker_config(json.dumps({"quay.io": {"auth": b64("old:pw")}}), "x")
    assert cfg.credentials_for("quay.io/a/b").username == "old"


@pytest.mark.parametrize("document", [{}, {"credsStore": "desktop"}, {"auths": None}, {"auths": {}}])
def test_documents_without_credentials(document):
    cfg = parse_docker_config(json.dumps(document), "x")
    assert len(cfg) == 0
    assert cfg.credentials_for("quay.io/a") is None
    assert cfg.secrets() == set()


def test_redaction_and_cri_fields():
    blob = b64("alice:" + SECRET)
    cfg = config({"reg:5000": {"auth": blob, "identitytoken": "IDTOKEN", "registrytoken": "REGTOKEN"}})
    creds = cfg.credentials_for("reg:5000/a")
    for text in (repr(creds), str(creds), f"{creds}", repr(cfg), repr([creds])):
        for secret in (SECRET, blob, "IDTOKEN", "REGTOKEN"):
            assert secret not in text
    assert "alice" in repr(creds) and REDACTED in repr(creds)
    assert creds.cri_auth_fields() == {
        "username": "alice",
        "password": SECRET,
        "identity_token": "IDTOKEN",
        "registry_token": "REGTOKEN",
    }
    assert cfg.secrets() == {SECRET, blob, "alice:" + SECRET, "IDTOKEN", "REGTOKEN"}
    message = f"pull failed: Basic {blob} rejected for alice:{SECRET} token IDTOKEN"
    scrubbed = redact(message, cfg.secrets())
    for secret in cfg.secrets():
        assert secret not in scrubbed
    assert "alice" not in scrubbed  # part of "alice:<secret>", replaced whole


def test_docker_hub_spellings_come_from_image_ref():
    assert _registry_auth.DOCKER_HUB is _image_ref.DOCKER_HUB
    assert _registry_auth.DOCKER_HUB_ALIASES is _image_ref.DOCKER_HUB_ALIASES


def test_cri_fields_only_non_empty():
    creds = RegistryCredentials(username="u", password="p")
    assert creds.cri_auth_fields() == {"username": "u", "password": "p"}
    assert creds.secrets() == {"p"}
    assert RegistryCredentials(identity_token="t").cri_auth_fields() == {"identity_token": "t"}
    assert RegistryCredentials(username="u", password="p") == RegistryCredentials(username="u", password="p")


def test_load_default_path(tmp_path):
    default = tmp_path / "config.json"
    assert len(load_docker_config(default_path=str(default))) == 0
    assert load_docker_config(default_path=str(default)).path is None
    default.write_text(json.dumps({"auths": {"quay.io": {"auth": b64("k:pw")}}}))
    cfg = load_docker_config(default_path=str(default))
    assert cfg.path == str(default)
    assert cfg.credentials_for("quay.io/x").username == "k"


def test_load_explicit_path(tmp_path):
    explicit = tmp_path / "auth.json"
    explicit.write_bytes(b"\xef\xbb\xbf" + json.dumps({"auths": {"quay.io": {"auth": b64("k:pw")}}}).encode())
    assert load_docker_config(explicit).credentials_for("quay.io/x").password == "pw"


def test_load_errors_name_the_file(bad_file):
    error = error_of(RegistryAuthError, load_docker_config, str(bad_file.path), default_path=None)
    assert str(bad_file.path) in error
    assert bad_file.message in error


def test_a_huge_key_is_cut_short_in_errors(tmp_path):
    path = tmp_path / "auth.json"
    path.write_text(json.dumps({"auths": {"q.io/" + "x" * 1_000_000: "not an object"}}))
    with pytest.raises(RegistryAuthError) as info:
        load_docker_config(path)
    assert "must be an object" in str(info.value) and len(str(info.value)) < 400


def test_a_nesting_bomb_and_a_50_mib_file_are_refused(tmp_path):
    nested = tmp_path / "nested.json"
    nested.write_text('{"auths": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(RegistryAuthError, match=f"{nested}: not valid JSON"):
        load_docker_config(nested)
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    with pytest.raises(RegistryAuthError, match=f"auth file {big} is larger than 4194304 bytes"):
        load_docker_config(big)
