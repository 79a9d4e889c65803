# SPDX-License-Identifier: GPL-3.0-or-later
"""_cri/layout: the known sockets in their order, and the runtime's files from the process serving the socket (a real
process started here, and /proc trees under a host root), then its defaults, then the layout's defaults."""

from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.pinned.images.plugins.module_utils._cri.layout import (
    SOCKET_LAYOUTS,
    find_layout,
    find_socket,
    layout_of_socket,
)

K3S_SOCKET = "/run/k3s/containerd/containerd.sock"
K3S_CONFIG = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
RKE2_CONFIG = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"


def touch(root, path, text=""):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def serving(root, socket, pid, argv):
    """``root``/proc as the kernel shows a process ``pid`` listening on ``socket`` with arguments ``argv``."""
    proc = root / "proc"
    (proc / "net").mkdir(parents=True, exist_ok=True)
    (proc / "net" / "unix").write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        f"0000000000000000: 00000002 00000000 00010000 0001 01 4242 {socket}\n"
    )
    (proc / str(pid) / "fd").mkdir(parents=True)
    os.symlink("socket:[4242]", proc / str(pid) / "fd" / "7")
    (proc / str(pid) / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")


def test_sockets_are_tried_in_the_documented_order(tmp_path):
    assert [layout.name for layout in SOCKET_LAYOUTS] == ["cri-o", "containerd", "k3s-rke2", "microk8s"]
    assert find_socket(str(tmp_path))[0] is None
    touch(tmp_path, "/var/snap/microk8s/common/run/containerd.sock")
    assert find_socket(str(tmp_path))[0].name == "microk8s"
    touch(tmp_path, K3S_SOCKET)
    layout, looked = find_socket(str(tmp_path))
    assert layout.name == "k3s-rke2" and looked[2] == f"{tmp_path}{K3S_SOCKET}"
    assert layout_of_socket(K3S_SOCKET, str(tmp_path)).name == "k3s-rke2"
    assert layout_of_socket("/elsewhere.sock", str(tmp_path)) is None


def test_k3s_the_config_of_the_serving_process_wins_over_a_stray_default(tmp_path):
    touch(tmp_path, "/etc/containerd/config.toml", "version = 2\n")
    touch(tmp_path, K3S_CONFIG, "version = 3\n")
    serving(tmp_path, K3S_SOCKET, 555, ["containerd", "-c", K3S_CONFIG, "-a", K3S_SOCKET])
    found = find_layout(K3S_SOCKET, str(tmp_path), "containerd", socket_source="found")
    assert (found.layout, found.pid, found.config.path) == ("k3s-rke2", 555, K3S_CONFIG)
    assert found.config.source == "the --config flag of containerd (pid 555)"
    assert found.report()["socket"] == {"path": K3S_SOCKET, "source": "found"}
    # The option wins over the process.
    given = find_layout(K3S_SOCKET, str(tmp_path), "containerd", "/opt/c.toml")
    assert (given.config.path, given.config.source) == ("/opt/c.toml", "the containerd_config option")


def test_without_a_process_the_layouts_defaults_count_never_the_stray_file(tmp_path):
    touch(tmp_path, "/etc/containerd/config.toml", "version = 2\n")
    touch(tmp_path, RKE2_CONFIG, "version = 3\n")
    found = find_layout(K3S_SOCKET, str(tmp_path), "containerd")
    assert (found.pid, found.config.path) == (None, RKE2_CONFIG)
    assert found.config.source.startswith("a default path of the k3s-rke2 layout (no process found")
    # No default of the layout exists: containerd's built-in defaults (no file).
    os.remove(tmp_path / RKE2_CONFIG.lstrip("/"))
    assert find_layout(K3S_SOCKET, str(tmp_path), "containerd").config is None


def test_a_process_without_the_flag_reads_its_runtimes_default(tmp_path):
    serving(tmp_path, "/run/containerd/containerd.sock", 77, ["/usr/bin/containerd"])
    found = find_layout("/run/containerd/containerd.sock", str(tmp_path), "containerd")
    assert found.config.path == "/etc/containerd/config.toml"
    assert found.config.source == "containerd's default (containerd (pid 77) runs without --config)"


def test_crio_flags_name_its_files(tmp_path):
    serving(
        tmp_path,
        "/var/run/crio/crio.sock",
        88,
        ["/usr/bin/crio", "--config-dir=/etc/crio/elsewhere.d", "--registries-conf", "/etc/r.conf"],
    )
    found = find_layout("/var/run/crio/crio.sock", str(tmp_path))
    report = found.report()
    assert (report["runtime"], report["pid"]) == ("cri-o", 88)
    assert report["config_dir"] == {"path": "/etc/crio/elsewhere.d", "source": "the --config-dir flag of crio (pid 88)"}
    assert report["registries_conf"]["path"] == "/etc/r.conf"
    assert report["config"] == {
        "path": "/etc/crio/crio.conf",
        "source": "CRI-O's default (crio (pid 88) runs without --config)",
    }
    assert report["registries_conf_dir"]["path"] == "/etc/containers/registries.conf.d"


def test_a_real_process_serving_a_socket_is_read_from_this_machines_proc(tmp_path):
    socket = tmp_path / "rt.sock"
    server = (
        "import socket, sys, time\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", server, str(socket), "--config", "/etc/rt/config.toml"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        found = find_layout(str(socket), None, "containerd")
        assert (found.layout, found.pid, found.config.path) == ("unknown", child.pid, "/etc/rt/config.toml")
    finally:
        child.kill()
        child.wait()
    # Gone: nothing serves it.
    assert find_layout(str(socket), None, "containerd").pid is None
