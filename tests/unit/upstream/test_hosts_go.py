# SPDX-License-Identifier: GPL-3.0-or-later
"""containerd's own hosts tests (core/remotes/docker/config/hosts_test.go) against ``_registry.containerd_hosts``.

The table is transcribed in ``data/containerd_hosts.json`` (provenance in its ``source``), which lives in this
repository: containerd's test file is not among the reference files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vectors import check

from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import (
    configure_hosts,
    load_host_dir,
    parse_hosts_file,
    uses_http_fallback,
)

SOURCE = "containerd"
TABLE = json.loads((Path(__file__).parent / "data" / "containerd_hosts.json").read_text(encoding="utf-8"))


def _shape(config) -> dict:
    """A HostConfig in the table's terms."""
    return {
        "scheme": config.scheme,
        "host": config.host,
        "path": config.path,
        "capabilities": sorted(config.capabilities),
        "ca": list(config.ca) if config.ca is not None else None,
        "client": [list(pair) for pair in config.client] if config.client is not None else None,
        "skip_verify": config.skip_verify,
        "header": {name: list(values) for name, values in config.header},
        "dial_timeout_seconds": config.dial_timeout,
    }


def compare(case: dict, tmp_path: Path) -> tuple:
    expect = case["expect"]
    if case["kind"] == "parse_hosts_file":
        hosts = parse_hosts_file("", TABLE["files"][case["hosts_toml"]])
        if len(hosts) != case["count"]:
            return False, f"{len(hosts)} hosts"
        got = _shape(hosts[case["index"]])
        want = dict(expect, capabilities=sorted(expect["capabilities"]))
        return got == want, f"{got}"
    if case["kind"] == "default_hosts":
        got = [
            {"scheme": c.scheme, "host": c.host, "path": c.path, "capabilities": sorted(c.capabilities)}
            for c in configure_hosts(case["host"], [])
        ]
        want = [dict(e, capabilities=sorted(e["capabilities"])) for e in expect]
        return got == want, f"{got}"
    if case["kind"] == "http_fallback":
        hosts = configure_hosts(case["host"], [])
        fallback = len(hosts) == 1 and uses_http_fallback(hosts[0])
        got = {"scheme": "https" if fallback else hosts[0].scheme, "uses_fallback": fallback}
        return got == expect, f"{got}"
    if case["kind"] == "load_cert_files":
        directory = tmp_path / case["host"]
        directory.mkdir()
        for name in case["files"]:
            (directory / name).write_text("not read: only the names count\n")
        configs = load_host_dir(str(directory))
        got = {
            "ca": [Path(p).name for p in configs[0].ca or ()],
            "client": [[Path(p).name for p in pair] for pair in configs[0].client or ()],
        }
        return len(configs) == 1 and got == expect, f"{len(configs)} entries, first {got}"
    raise AssertionError(f"unknown case kind {case['kind']!r}")


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in TABLE["cases"]])
def test_containerd_hosts(case, tmp_path):
    agrees, detail = compare(case, tmp_path)
    check(SOURCE, case["id"], agrees, f"expected {case['expect']}, got {detail}")
