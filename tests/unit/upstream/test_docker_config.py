# SPDX-License-Identifier: GPL-3.0-or-later
"""containers/image ``pkg/docker/config`` test tables against ``_registry.auth`` (credential lookup).

Mapping in upstream-vectors/containers/README.md: ``load_docker_config(file).credentials_for(key)`` stands for
``getCredentialsWithHomeDir(key)``; upstream's empty credentials are None here.
"""

from __future__ import annotations

import base64
import json

import pytest
from vectors import check, json_cases, load_json, note_transcription_excluded

from ansible_collections.pinned.images.plugins.module_utils._registry.auth import (
    RegistryAuthError,
    load_docker_config,
)

SOURCE = "auth"
FILE = ("containers", "docker_config.json")


def _credentials(creds):
    if creds is None:
        return None
    return {"username": creds.username, "password": creds.password, "identity_token": creds.identity_token}


def _lookup(text, key: str, root):
    """Credentials for ``key`` from the auth file ``text`` (None: no file at all)."""
    path = root / "auth.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    return load_docker_config(str(path) if text is not None else None, default_path=str(root / "absent.json"))


def _lookup_order(case: dict, root) -> list:
    """Which key wins, then which once that one is removed, and so on (upstream's TestAuthKeyLookupOrder)."""
    keys = list(case["keys"])
    order = []
    while keys:
        auths = {k: {"auth": base64.b64encode(f"user-{k}:pw".encode()).decode()} for k in keys}
        text = json.dumps(auths if case["legacy"] else {"auths": auths})
        creds = _lookup(text, case["key"], root).credentials_for(case["key"])
        if creds is None:
            break
        winner = creds.username[len("user-") :]
        order.append(winner)
        keys.remove(winner)
    return order


def compare(case: dict, files: dict, root) -> tuple:
    expect = case["expect"]
    if case["kind"] == "lookup_order":
        got = _lookup_order(case, root)
        return got == expect["order"], f"order {got}"
    if "auth_json" in case:
        text = json.dumps(case["auth_json"])
    elif "auth_text" in case:
        text = case["auth_text"]
    else:
        text = files[case["auth_file"]] if case["auth_file"] else None
    try:
        got = _credentials(_lookup(text, case["key"], root).credentials_for(case["key"]))
    except RegistryAuthError as exc:
        return bool(expect.get("error")), f"error {exc}"
    if expect.get("error"):
        return False, f"credentials {got}"
    return got == expect["credentials"], f"credentials {got}"


@pytest.mark.parametrize("case", json_cases(*FILE))
def test_docker_config(case, tmp_path):
    document = load_json(*FILE)
    note_transcription_excluded(SOURCE, document)
    files = document["files"]
    agrees, detail = compare(case, files, tmp_path)
    check(SOURCE, case["id"], agrees, f"key {case.get('key')!r}: expected {case['expect']}, got {detail}")
