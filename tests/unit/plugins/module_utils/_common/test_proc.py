# SPDX-License-Identifier: GPL-3.0-or-later
"""_common/proc: the process serving a unix socket, found in this machine's real /proc (the test listens itself), and
in a /proc tree laid out as the kernel lays it out, under a host root (what a pod sees at /host/proc)."""

from __future__ import annotations

import os
import socket

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.proc import (
    cmdline,
    flag_value,
    listening_inodes,
    serving_pid,
    socket_holders,
)

HEADER = "Num       RefCount Protocol Flags    Type St Inode Path\n"


def unix_line(inode, path, flags="00010000"):
    return f"0000000000000000: 00000002 00000000 {flags} 0001 01 {inode} {path}\n"


def fake_proc(root, lines, holders, argv=None):
    """``root``/proc with one net/unix table, and pids whose fd 3 is ``socket:[inode]`` ({pid: inode})."""
    proc = root / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "unix").write_text(HEADER + "".join(lines))
    for pid, inode in holders.items():
        (proc / str(pid) / "fd").mkdir(parents=True)
        os.symlink("/dev/null", proc / str(pid) / "fd" / "0")
        os.symlink(f"socket:[{inode}]", proc / str(pid) / "fd" / "3")
        (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in (argv or {}).get(pid, [])) + b"\0")
    return str(proc)


def test_the_test_process_is_found_serving_its_own_socket(tmp_path):
    path = str(tmp_path / "served.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        # Bound but not listening: not a server.
        assert serving_pid("/proc", path) is None
        listener.listen(1)
        assert serving_pid("/proc", path) == os.getpid()
    # Closed: nothing serves it.
    assert serving_pid("/proc", path) is None


def test_on_the_node_a_socket_named_through_a_link_is_found_serving(tmp_path):
    # As /var/run/crio/crio.sock names /run/crio/crio.sock: the kernel's table holds the name it was bound at.
    (tmp_path / "run").mkdir()
    os.symlink(tmp_path / "run", tmp_path / "var-run")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "run" / "served.sock"))
        listener.listen(1)
        assert serving_pid("/proc", str(tmp_path / "var-run" / "served.sock")) == os.getpid()


def test_under_a_host_root_the_hosts_listener_is_found_by_its_host_path(tmp_path):
    root = tmp_path / "host"
    # Debian's /var/run is /run: CRI-O bound /run/crio/crio.sock, the default names /var/run/crio/crio.sock.
    (root / "var").mkdir(parents=True)
    os.symlink("/run", root / "var" / "run")
    proc = fake_proc(
        root,
        [
            unix_line(11, "/run/crio/crio.sock"),
            unix_line(12, "/run/crio/crio.sock", flags="00000000"),
            unix_line(13, "/run/other/crio.sock"),
        ],
        {1: 11, 700: 11, 800: 12, 900: 13},
        {700: ["/usr/bin/crio", "--config-dir", "/etc/crio/other.d"]},
    )
    assert listening_inodes(proc, "/var/run/crio/crio.sock", str(root)) == {11}
    assert socket_holders(proc, {11}) == [1, 700]
    # systemd (pid 1) holds a socket it activates; the runtime is the other holder.
    assert serving_pid(proc, "/var/run/crio/crio.sock", str(root)) == 700
    assert serving_pid(proc, "/run/none.sock", str(root)) is None
    assert cmdline(proc, 700) == ["/usr/bin/crio", "--config-dir", "/etc/crio/other.d"]
    assert cmdline(proc, 12345) == []


def test_an_unreadable_proc_finds_nothing(tmp_path):
    assert serving_pid(str(tmp_path / "no-proc"), "/run/containerd/containerd.sock") is None


@pytest.mark.parametrize(
    "argv, names, value",
    [
        (["containerd", "-c", "/a.toml"], ("--config", "-c"), "/a.toml"),
        (["containerd", "--config=/b.toml"], ("--config", "-c"), "/b.toml"),
        (["containerd", "-config", "/c.toml", "--config", "/d.toml"], ("--config", "-c"), "/d.toml"),
        (["containerd", "--address", "/x.sock"], ("--config", "-c"), None),
        (["containerd", "--", "--config", "/e.toml"], ("--config",), None),
        (["containerd", "--config"], ("--config",), None),
        (["crio", "--registries-conf", "/r.conf", "--config-dir", "/d"], ("--registries-conf",), "/r.conf"),
    ],
)
def test_flag_values_as_go_parses_them(argv, names, value):
    assert flag_value(argv, names) == value


def test_of_two_runtimes_bound_at_one_path_the_one_whose_socket_is_seen_here_wins(tmp_path):
    """Two runtimes bind /run/k3s/containerd/containerd.sock, each in its own mount namespace: each one's view
    (``/proc/<pid>/root``) tells which file is the one under the host root."""
    root, other = tmp_path / "host", tmp_path / "other"
    for base in (root, other):
        (base / "run/k3s/containerd").mkdir(parents=True)
        (base / "run/k3s/containerd/containerd.sock").write_text("")
    socket = "/run/k3s/containerd/containerd.sock"
    proc = fake_proc(root, [unix_line(21, socket), unix_line(22, socket)], {300: 21, 400: 22})
    os.symlink(other, root / "proc/300/root")
    os.symlink(root, root / "proc/400/root")
    assert serving_pid(proc, socket, str(root)) == 400
    # One view unreadable, the other another file: the unreadable one.
    os.remove(root / "proc/400/root")
    assert serving_pid(proc, socket, str(root)) == 400
    # Neither readable: the first holder.
    os.remove(root / "proc/300/root")
    assert serving_pid(proc, socket, str(root)) == 300
