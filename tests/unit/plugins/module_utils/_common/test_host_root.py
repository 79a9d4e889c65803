# SPDX-License-Identifier: GPL-3.0-or-later
"""host_root: the one mapping of node paths into a pod that mounts the host's / (a real directory tree here)."""

from __future__ import annotations

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.host_root import (
    HostRootError,
    check_host_root,
    chrooted,
    host_path,
    host_path_list,
    host_paths,
    resolved_host_path,
)


def test_paths_go_under_the_root_and_stay_as_given_without_one():
    assert host_path("/host", "/run/containerd/containerd.sock") == "/host/run/containerd/containerd.sock"
    assert host_path("/host", "unix:///var/run/crio/crio.sock") == "unix:///host/var/run/crio/crio.sock"
    assert host_path("/host", "/etc//crio/../crio/x") == "/host/etc/crio/x"
    assert host_path("/host", "/") == "/host"
    # host:port and relative paths are not node paths.
    assert host_path("/host", "127.0.0.1:5000") == "127.0.0.1:5000"
    assert host_path("/host", "relative/file") == "relative/file"
    assert host_path(None, "/etc/crio") == "/etc/crio"
    assert host_path("/host", "") == ""


def test_the_root_must_be_an_absolute_directory(tmp_path):
    assert check_host_root(None) is None
    assert check_host_root("") is None
    assert check_host_root("/") is None
    assert check_host_root(str(tmp_path) + "/") == str(tmp_path)
    with pytest.raises(HostRootError, match="host_root must be an absolute path .* got 'host'"):
        check_host_root("host")
    with pytest.raises(HostRootError, match=f"host_root {tmp_path}/missing is not a directory"):
        check_host_root(str(tmp_path / "missing"))


def test_path_options_and_config_path_lists_go_under_the_root():
    certs = ["/etc/containers/certs.d", "/etc/docker/certs.d"]
    assert host_paths("/host", certs) == ["/host/etc/containers/certs.d", "/host/etc/docker/certs.d"]
    assert host_paths("/host", None) is None
    assert host_path_list("/host", "/etc/containerd/certs.d::/etc/docker/certs.d") == (
        "/host/etc/containerd/certs.d:/host/etc/docker/certs.d"
    )
    assert host_path_list(None, "/etc/containerd/certs.d") == "/etc/containerd/certs.d"


def test_a_chrooted_command_runs_in_the_host_root():
    seen = []

    def run(argv):
        seen.append(argv)
        return 0, "", ""

    assert chrooted(None, run) is run
    assert chrooted("/host", None) is None
    assert chrooted("/host", run)(["systemctl", "reload", "crio"]) == (0, "", "")
    assert seen == [["chroot", "/host", "systemctl", "reload", "crio"]]


def test_the_hosts_symlinks_resolve_inside_the_root(tmp_path):
    root = tmp_path / "host"
    (root / "run/crio").mkdir(parents=True)
    (root / "run/crio/crio.sock").write_text("")
    (root / "var").mkdir()
    # Debian and Ubuntu: an absolute link, which the pod itself would follow to its own /run.
    (root / "var/run").symlink_to("/run")
    (root / "etc").mkdir()
    (root / "etc/up").symlink_to("../var/run/crio")
    assert resolved_host_path(str(root), "/var/run/crio/crio.sock") == f"{root}/run/crio/crio.sock"
    assert resolved_host_path(str(root), "unix:///var/run/crio/crio.sock") == f"unix://{root}/run/crio/crio.sock"
    assert resolved_host_path(str(root), "/etc/up/crio.sock") == f"{root}/run/crio/crio.sock"
    # Not there yet: kept as given; outside the root's / nothing escapes.
    assert resolved_host_path(str(root), "/var/run/new/file") == f"{root}/run/new/file"
    assert resolved_host_path(str(root), "/../../etc") == f"{root}/etc"
    # A loop: the plain mapping, as the kernel would refuse it.
    (root / "loop").symlink_to("/loop")
    assert resolved_host_path(str(root), "/loop/x") == f"{root}/loop/x"
    assert resolved_host_path(None, "/var/run/x") == "/var/run/x"
    assert resolved_host_path(str(root), "relative") == "relative"
