# SPDX-License-Identifier: GPL-3.0-or-later
"""_prefetch/preflight: the disk guard on a real filesystem (the test's temp dir) and the runtime's pull sources.

The guard's estimate against a real registry and a full tmpfs are in tests/functional; the sources each runtime
reads, through a whole prefetch request, in tests/unit/plugins/module_utils/_runs/test_prefetch.py.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import RetryPolicy
from ansible_collections.pinned.images.plugins.module_utils._prefetch.preflight import (
    DiskGuardRefused,
    DiskGuardSettings,
    SourceSettings,
    guard_disk,
    layout_report,
    pull_sources,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import RegistriesConf

MISSING = [parse_image_ref(f"registry.example:5000/missing@sha256:{'e' * 64}")]


def settings(mode="free_only", min_free="0", image_store_path=None):
    return DiskGuardSettings(
        mode=mode,
        min_free=min_free,
        expansion_factor=2.0,
        image_store_path=image_store_path,
        docker_config=DockerConfig(),
        certs_dirs=(),
        registry_timeout=1.0,
        retry=RetryPolicy(),
    )


def test_off_reads_nothing():
    assert guard_disk(settings("off"), None, MISSING, RegistriesConf()) == (None, {})


def test_free_only_refuses_below_the_reserve_and_names_the_filesystem(tmp_path):
    guard, unreadable = guard_disk(settings(), str(tmp_path), MISSING, RegistriesConf())
    assert (guard["ok"], guard["filesystem"], guard["registry_requests"], unreadable) == (True, str(tmp_path), 0, {})
    with pytest.raises(DiskGuardRefused) as info:
        guard_disk(settings(min_free="100%"), str(tmp_path), MISSING, RegistriesConf())
    assert info.value.details["disk_guard"]["ok"] is False
    assert info.value.message.startswith("disk guard refused the prefetch, nothing was pulled: not enough free disk")


def test_image_store_path_wins_over_the_runtimes_filesystem_and_an_unreadable_one_is_named(tmp_path):
    guard, _unreadable = guard_disk(settings(image_store_path=str(tmp_path)), "/nonexistent", MISSING, RegistriesConf())
    assert guard["filesystem"] == str(tmp_path)
    with pytest.raises(CollectionError, match="cannot read the free space of the image filesystem None"):
        guard_disk(settings(), None, MISSING, RegistriesConf())


def test_the_estimate_asks_no_registry_when_nothing_is_missing(tmp_path):
    guard, _unreadable = guard_disk(settings("estimate"), str(tmp_path), [], RegistriesConf())
    assert guard["registry_requests"] == 0 and guard["message"].startswith("nothing to pull")


def test_crio_pulls_through_registries_conf_and_containerd_through_its_hosts_under_host_root(tmp_path):
    registries = RegistriesConf()
    given = SourceSettings(
        registries=registries, overrides=RegistriesConf(), containerd_config_path="/etc/c", host_root=str(tmp_path)
    )
    asked = []
    sources, files, warnings = pull_sources(given, {"runtime_name": "cri-o"}, lambda: asked.append(1) or {})
    assert (sources, files, warnings) == (registries, {"sources_from": "registries.conf: no registries.conf"}, [])
    containerd = {"runtime_name": "containerd", "runtime_version": "1.7.24"}
    sources, files, _warnings = pull_sources(given, containerd, lambda: asked.append(1) or {})
    # The option wins over CRI Status, which is not asked.
    assert (sources.config.roots, asked) == ((f"{tmp_path}/etc/c",), [])


def serving(root, socket, pid, argv):
    """``root``/proc as the kernel shows ``pid`` listening on ``socket`` with arguments ``argv``."""
    proc = root / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "unix").write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        f"0000000000000000: 00000002 00000000 00010000 0001 01 99 {socket}\n"
    )
    (proc / str(pid) / "fd").mkdir(parents=True)
    os.symlink("socket:[99]", proc / str(pid) / "fd" / "3")
    (proc / str(pid) / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")


def test_crio_the_registries_conf_its_process_names_is_read_unless_the_options_name_one(tmp_path):
    root = tmp_path / "host"
    (root / "etc/crio").mkdir(parents=True)
    (root / "etc/crio/registries.conf").write_text(
        '[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\nlocation = "m.example"\n'
    )
    serving(root, "/var/run/crio/crio.sock", 31, ["crio", "--registries-conf", "/etc/crio/registries.conf"])
    crio = {"runtime_name": "cri-o", "endpoint": f"{root}/var/run/crio/crio.sock"}
    given = SourceSettings(registries=RegistriesConf(), overrides=RegistriesConf(), host_root=str(root))
    sources, report, _warnings = pull_sources(given, crio, dict)
    assert sources.files == [f"{root}/etc/crio/registries.conf"]
    assert report["sources_from"].endswith("(the --registries-conf flag of crio (pid 31))")
    assert [
        source.reference.registry
        for source in sources.pull_sources(parse_image_ref("quay.io/a/b:v1", require_digest=False))
    ] == [
        "m.example",
        "quay.io",
    ]
    explicit = RegistriesConf(files=["/given.conf"])
    sources, report, _warnings = pull_sources(
        SourceSettings(
            registries=explicit, overrides=RegistriesConf(), host_root=str(root), registries_conf_given=True
        ),
        crio,
        dict,
    )
    assert sources is explicit and report == {"sources_from": "registries.conf: /given.conf"}


def test_containerd_k3s_layout_reads_the_config_its_process_names_and_says_so(tmp_path):
    root = tmp_path / "host"
    k3s = root / "var/lib/rancher/k3s/agent/etc/containerd"
    k3s.mkdir(parents=True)
    (k3s / "config.toml").write_text(
        'version = 3\n[plugins."io.containerd.cri.v1.images".registry]\n'
        'config_path = "/var/lib/rancher/k3s/agent/etc/containerd/certs.d"\n'
    )
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text("version = 2\n")
    socket = "/run/k3s/containerd/containerd.sock"
    serving(root, socket, 64, ["containerd", "-c", "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"])
    runtime = {"runtime_name": "containerd", "runtime_version": "2.1.9", "endpoint": f"{root}{socket}"}
    given = SourceSettings(
        registries=RegistriesConf(), overrides=RegistriesConf(), host_root=str(root), socket_source="found"
    )
    sources, report, warnings = pull_sources(given, runtime, dict)
    assert sources.config.roots == (f"{k3s}/certs.d",) and warnings == []
    assert report == {
        "sources_from": "containerd hosts.toml under config_path "
        f"{k3s}/certs.d (from /var/lib/rancher/k3s/agent/etc/containerd/config.toml, the --config flag of "
        "containerd (pid 64))",
        "pull_mode": "transfer",
        "pull_mode_reason": "containerd 2.1.9 pulls through the transfer service (no local-pull setting)",
    }
    found = layout_report(given, runtime, dict)
    assert found["layout"] == "k3s-rke2" and found["socket"] == {"path": socket, "source": "found"}
    assert found["hosts"]["config_path"] == ["/var/lib/rancher/k3s/agent/etc/containerd/certs.d"]
    assert found["hosts"]["config_files"] == ["/var/lib/rancher/k3s/agent/etc/containerd/config.toml"]


def test_the_layout_report_names_a_config_it_cannot_read_and_reports_the_rest(tmp_path):
    root = tmp_path / "host"
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text("version = 3\n[plugins\n")
    runtime = {
        "runtime_name": "containerd",
        "runtime_version": "2.1.9",
        "endpoint": f"{root}/run/containerd/containerd.sock",
    }
    given = SourceSettings(registries=RegistriesConf(), overrides=RegistriesConf(), host_root=str(root))
    found = layout_report(given, runtime, dict)
    assert found["config"]["path"] == "/etc/containerd/config.toml" and found["layout"] == "containerd"
    assert (
        "not valid TOML" in found["hosts"]["error"] and f"{root}/etc/containerd/config.toml" in found["hosts"]["error"]
    )
