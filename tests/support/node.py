# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab nodes of four runtimes: which binary, the node's configuration (containerd config.toml and hosts.toml, CRI-O
crio.conf, registries.conf and signature policy), and the readiness probes.

A runtime is a key of RUNTIMES. containerd 1.6 (Debian 12) and 1.7 (trixie) read a version 2 config, 2.1 (sid) a
version 3 config; CRI-O 1.33 is unpacked from the reference directory ($PINNED_IMAGES_REFERENCE_DIR/cri-o) into
.build/cri-o, checked against its SHA256SUMS, and is reloaded by SIGHUP to the pid the lab writes to its pid file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import lzma
import os
import re
import socket
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from support.errors import LabError
from support.processes import binary, tail, write_file

REPO = Path(__file__).resolve().parents[2]
# Plugins the lab never uses (CRI uses the "native" snapshotter). Not io.containerd.runtime.v1.linux: in 1.6
# the tasks service, and through it the CRI plugin, fails to load without it.
DISABLED_PLUGINS = (
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.overlayfs",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.tracing.processor.v1.otlp",
    "io.containerd.internal.v1.tracing",
)
# The snapshotters a lab node may use (containerd_config).
SNAPSHOTTERS = ("native", "overlayfs")
# containerd 2.x enables NRI by default, whose socket is a system path (/var/run/nri).
DISABLED_PLUGINS_V3 = DISABLED_PLUGINS + ("io.containerd.nri.v1.nri",)
NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
TMPFS_SIZE = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")
# sun_path is 108 bytes including the NUL.
MAX_SOCKET_PATH = 107
REFERENCE_ENV = "PINNED_IMAGES_REFERENCE_DIR"
CRIO_BUILD = REPO / ".build" / "cri-o"


@dataclass(frozen=True)
class Runtime:
    """A runtime a lab node may run. ``kind`` is containerd or cri-o; ``path`` the binary (None: from PATH, or for
    CRI-O unpacked from the reference directory); ``pins`` says whether CRI reports its pins."""

    key: str
    kind: str
    version: str
    path: Path | None
    source: str
    pins: bool


RUNTIMES = {
    runtime.key: runtime
    for runtime in (
        Runtime("containerd-1.6", "containerd", "1.6.20", None, "Debian 12's package", False),
        Runtime(
            "containerd-1.7",
            "containerd",
            "1.7.24",
            REPO / ".build/trixie/containerd/usr/bin/containerd",
            "Debian trixie's package, hack/debian_debs.sh",
            True,
        ),
        Runtime(
            "containerd-2.1",
            "containerd",
            "2.1.9",
            REPO / ".build/sid/containerd/usr/bin/containerd",
            "Debian sid's package, hack/debian_debs.sh",
            True,
        ),
        Runtime("cri-o", "cri-o", "1.33.13", None, "$%s/cri-o, unpacked into .build/cri-o" % REFERENCE_ENV, True),
    )
}
DEFAULT_RUNTIME = "containerd-1.6"


def reference_dir() -> Path:
    """The upstream reference directory, as tests/fixtures/reference.py finds it."""
    return Path(os.environ.get(REFERENCE_ENV) or REPO.parent / "shared" / "reference")


def crio_available() -> bool:
    return (reference_dir() / "cri-o" / "SHA256SUMS").is_file()


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def crio_binaries() -> dict[str, str]:
    """{"crio": path, "pinns": path}: unpacked from the reference directory into .build/cri-o when missing or
    different, each checked against the directory's SHA256SUMS (never copied into the repository)."""
    source = reference_dir() / "cri-o"
    sums_file = source / "SHA256SUMS"
    if not sums_file.is_file():
        raise LabError("no CRI-O build at %s: set %s to the reference directory" % (source, REFERENCE_ENV))
    sums = dict(reversed(line.split()) for line in sums_file.read_text().splitlines() if line.strip())
    paths = {}
    for name in ("crio", "pinns"):
        target = CRIO_BUILD / name
        if not target.is_file() or _sha256(target) != sums[name]:
            with lzma.open(source / (name + ".xz")) as packed:
                write_file(target, packed.read(), 0o755)
            if _sha256(target) != sums[name]:
                target.unlink()
                raise LabError("%s.xz in %s does not unpack to the sha256 of its SHA256SUMS" % (name, source))
        paths[name] = str(target)
    return paths


def runtime_binary(key: str) -> str:
    """The binary of runtime ``key`` (a key of RUNTIMES); CRI-O's is unpacked on first use."""
    if key not in RUNTIMES:
        raise LabError("unknown runtime %r: use one of %s" % (key, ", ".join(RUNTIMES)))
    runtime = RUNTIMES[key]
    if runtime.kind == "cri-o":
        return crio_binaries()["crio"]
    if runtime.path is None:
        return binary("containerd")
    if not os.access(runtime.path, os.X_OK):
        raise LabError("%s not found; run hack/setup.sh (hack/debian_debs.sh unpacks it)" % runtime.path)
    return str(runtime.path)


def runtime_choices(choices: Mapping[str, str] | None, names: Sequence[str]) -> dict[str, str]:
    """Node name -> runtime key for every node; unknown names and runtimes are errors."""
    choices = dict(choices or {})
    unknown = sorted(set(choices) - set(names))
    if unknown:
        raise LabError("--runtime-node names no node: %s (nodes: %s)" % (", ".join(unknown), ", ".join(names)))
    for choice in set(choices.values()):
        runtime_binary(choice)
    return {name: choices.get(name, DEFAULT_RUNTIME) for name in names}


def check_tmpfs_size(size: str) -> None:
    """Refuse a tmpfs size mount(8) would not take."""
    if not TMPFS_SIZE.match(size):
        raise LabError("bad tmpfs size %r: use a number with an optional k/m/g suffix, e.g. 64M" % size)


def node_names(nodes: int, control_plane: int | None = None) -> list[str]:
    """`control_plane` (default: 1 when there is a node) names cp-0.., the rest are worker-0.."""
    if control_plane is None:
        control_plane = min(1, nodes)
    if nodes < 0 or not 0 <= control_plane <= nodes:
        raise LabError("need 0 <= control_plane (%d) <= nodes (%d)" % (control_plane, nodes))
    return ["cp-%d" % i for i in range(control_plane)] + ["worker-%d" % i for i in range(nodes - control_plane)]


def containerd_config(
    base: Path,
    sock: Path,
    stream_port: int,
    cni: Path,
    version: int = 2,
    config_path: str | None = None,
    sandbox_image: str | None = None,
    snapshotter: str = "native",
) -> str:
    """The config.toml of a node whose files live under ``base``, serving CRI on ``sock``; ``cni`` holds the
    shared ``bin`` and ``net.d`` directories. ``version`` 3 is containerd 2.x's layout (CRI split into the
    cri.v1.images and cri.v1.runtime plugins; pulls unpack through the transfer service). ``config_path`` is the
    CRI registry's hosts directory (default ``base/certs.d``, which the lab fills with its registries' hosts.toml).
    ``sandbox_image`` (a workload node's) is the pause image, and runc keeps its state under ``base/state/runc``.
    ``snapshotter``: "native" (the lab's: a full copy per layer, works on any filesystem) or "overlayfs" (what
    nodes run: each layer stored once; needs a root on a filesystem overlayfs takes as upper, such as ext4)."""
    if snapshotter not in SNAPSHOTTERS:
        raise LabError("snapshotter %r: the lab runs %s" % (snapshotter, " or ".join(SNAPSHOTTERS)))
    q = json.dumps  # TOML basic strings take JSON's escapes
    disabled = [
        plugin
        for plugin in (DISABLED_PLUGINS_V3 if version == 3 else DISABLED_PLUGINS)
        if plugin != "io.containerd.snapshotter.v1." + snapshotter
    ]
    runc = sandbox_v2 = sandbox_v3 = oom = ""
    if sandbox_image:
        # This machine's root lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj (the sandbox's -998).
        oom = "\n  restrict_oom_score_adj = true"
        sandbox_v2 = "\n  sandbox_image = %s%s" % (q(sandbox_image), oom)
        sandbox_v3 = '\n[plugins."io.containerd.cri.v1.images".pinned_images]\n  sandbox = %s\n' % q(sandbox_image)
        cri = '"io.containerd.cri.v1.runtime"' if version == 3 else '"io.containerd.grpc.v1.cri"'
        runc = f"""
[plugins.{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins.{cri}.containerd.runtimes.runc.options]
  BinaryName = {q(binary("runc"))}
  Root = {q(str(base / "state" / "runc"))}
"""
    head = f"""version = {version}
root = {q(str(base / "root"))}
state = {q(str(base / "state"))}
temp = {q(str(base / "tmp"))}
disabled_plugins = {q(disabled)}

[grpc]
  address = {q(str(sock))}

[ttrpc]
  address = {q(str(sock) + ".ttrpc")}

# No TCP listeners: several nodes share this machine's network namespace.
[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {q(str(base / "opt"))}
"""
    if version == 3:
        from support.images import HOST_PLATFORM

        return (
            head
            + f"""
[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "{stream_port}"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = {q(snapshotter)}

[plugins."io.containerd.cri.v1.images".registry]
  config_path = {q(config_path or str(base / "certs.d"))}
{sandbox_v3}
[plugins."io.containerd.cri.v1.runtime"]
  disable_apparmor = true
  netns_mounts_under_state_dir = true{oom}

[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = {q([str(cni / "bin")])}
  conf_dir = {q(str(cni / "net.d"))}

# CRI pulls unpack only for the snapshotters named here (default overlayfs).
[[plugins."io.containerd.transfer.v1.local".unpack_config]]
  platform = {q(HOST_PLATFORM)}
  snapshotter = {q(snapshotter)}
"""
            + runc
        )
    return (
        head
        + f"""
[plugins."io.containerd.grpc.v1.cri"]
  disable_apparmor = true
  disable_tcp_service = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "{stream_port}"{sandbox_v2}

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = {q(snapshotter)}

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = {q(str(cni / "bin"))}
  conf_dir = {q(str(cni / "net.d"))}

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = {q(config_path or str(base / "certs.d"))}
"""
        + runc
    )


def crio_config(base: Path, sock: Path, stream_port: int, cni: Path, pinns: str, pause_image: str | None = None) -> str:
    """The crio.conf of a CRI-O node whose files live under ``base``: every path CRI-O writes is its own (several
    run side by side, nothing under /etc, /var or /run), the vfs storage driver, runc and conmon from PATH, no
    NRI, no host-port mapping (no iptables here). registries.conf, the signature policy and the drop-in
    directory are flags (crio_argv). ``global_auth_file`` is the node pull secret, as on OpenShift
    (/var/lib/kubelet/config.json): containers/image drops the CRI request's credentials for a mirror on another
    host, so CRI-O authenticates to mirrors with this file only. ``pause_image`` (a workload node's) is the pause
    image, run with its own command (``pause_command = ""``)."""
    q = json.dumps
    pause = "" if not pause_image else 'pause_image = %s\npause_command = ""\n' % q(pause_image)
    run = base / "run"
    return f"""[crio]
root = {q(str(base / "root"))}
runroot = {q(str(run))}
storage_driver = "vfs"
log_dir = {q(str(base / "pods"))}
version_file = {q(str(run / "version"))}
version_file_persist = {q(str(base / "root" / "version"))}
clean_shutdown_file = {q(str(base / "root" / "clean.shutdown"))}

[crio.api]
listen = {q(str(sock))}
stream_address = "127.0.0.1"
stream_port = "{stream_port}"

[crio.runtime]
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
decryption_keys_path = {q(str(base / "keys"))}
irqbalance_config_file = {q(str(base / "irqbalance"))}
irqbalance_config_restore_file = "disable"
cdi_spec_dirs = {q([str(base / "cdi")])}
hooks_dir = {q([str(base / "hooks.d")])}
container_exits_dir = {q(str(run / "exits"))}
container_attach_socket_dir = {q(str(run))}
namespaces_dir = {q(str(run / "ns"))}
pinns_path = {q(pinns)}
default_runtime = "runc"
disable_hostport_mapping = true

[crio.runtime.runtimes.runc]
runtime_path = {q(binary("runc"))}
runtime_root = {q(str(run / "runc"))}
monitor_path = {q(binary("conmon"))}

[crio.image]
signature_policy_dir = {q(str(base / "policies"))}
global_auth_file = {q(str(base / "kubelet-config.json"))}
{pause}
[crio.network]
network_dir = {q(str(cni / "net.d"))}
plugin_dirs = {q([str(cni / "bin")])}

[crio.nri]
enable_nri = false
"""


def crio_argv(crio: str, entry: Mapping[str, Any]) -> list[str]:
    return [
        crio,
        "--config",
        entry["config"],
        "--config-dir",
        entry["dropin_dir"],
        "--registries-conf",
        entry["registries_conf"],
        "--signature-policy",
        entry["policy"],
    ]


def crio_registries_conf(registries: Sequence[Mapping[str, Any]]) -> str:
    """The lab's registries.conf for a CRI-O node. Both registries are ``insecure``: http for the plain one, and
    for the login one a certificate of the lab's CA, which containers/image would look for under
    /etc/containers/certs.d (a system path). A test may add mirrors and SIGHUP the node."""
    lines = ["unqualified-search-registries = []", ""]
    for entry in registries:
        lines += ["[[registry]]", "location = %s" % json.dumps(entry["host"]), "insecure = true", ""]
    return "\n".join(lines)


# The lab's signature policy: accept anything (the lab's images are unsigned).
CRIO_POLICY = json.dumps({"default": [{"type": "insecureAcceptAnything"}]}) + "\n"


def hosts_toml(url: str, ca: str | None) -> str:
    """The hosts.toml that sends a node's pulls from the registry at ``url`` (trusting ``ca``)."""
    ca_line = "\n  ca = %s" % json.dumps(ca) if ca else ""
    return f"""server = "{url}"

[host."{url}"]
  capabilities = ["pull", "resolve"]{ca_line}
"""


def pin_args(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned.images.prefetch arguments that pin on the node ``entry`` as a real node of its runtime does
    (``pin: auto``): for CRI-O its drop-in, reloaded by SIGHUP to its pid file, and its registries.conf."""
    args: dict[str, Any] = {"cri_socket": entry["endpoint"], "pin": "auto"}
    if entry.get("pid_file"):
        args.update(
            dropin_path=str(Path(entry["dropin_dir"]) / "50-pinned-images"),
            crio_reload="signal",
            crio_pid_file=entry["pid_file"],
            registries_conf=entry["registries_conf"],
        )
    return args


def cri_ready(entry: Mapping[str, Any]) -> bool:
    """True when the node's socket answers and (containerd) its CRI plugin loaded: containerd serves even when it
    did not. CRI-O opens its socket only once its CRI server runs. A containerd workload node also has to answer
    RuntimeService calls: after a restart it refuses them until it has recovered its containers."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(entry["socket"])
    except OSError:
        return False
    if RUNTIMES[entry.get("runtime", DEFAULT_RUNTIME)].kind == "cri-o":
        return True
    try:
        listing = subprocess.run(
            [binary("ctr"), "--address", entry["socket"], "plugins", "ls", "id==cri"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.split()
    except subprocess.TimeoutExpired:
        return False
    if listing[-1:] != ["ok"]:
        raise LabError("the CRI plugin of %s did not load; log %s:\n%s" % (entry["name"], entry["log"], tail(entry)))
    if entry.get("workloads"):
        from support.cri_workloads import runtime_ready

        return runtime_ready(entry)
    return True


# Where the kernel's cgroup hierarchies are mounted (v1 controllers, and the v2 tree or its "unified" mount).
CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_parent(base: Path) -> str:
    """The cgroup parent of a workload node's pods (relative to each hierarchy's root): one of its own, so that
    ``remove_cgroup`` removes only what the node made. runc cannot keep cgroups out of the system tree."""
    return "/pinned-images-lab-" + hashlib.sha256(str(base).encode()).hexdigest()[:12]


def runc_roots(base: Path) -> list[Path]:
    """The runc state directories of the node under ``base``: containerd's per namespace, CRI-O's runtime_root."""
    return sorted(base.glob("state/runc/*")) + [path for path in [base / "run" / "runc"] if path.is_dir()]


def runc_containers(base: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(runc root, ``runc list`` entry: ``id``, ``pid``, ``status``, ...) of every container of the node under
    ``base``."""
    found = []
    for root in runc_roots(base):
        listing = subprocess.run(
            [binary("runc"), "--root", str(root), "list", "--format", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        if listing.returncode:
            raise LabError("runc --root %s list failed: %s" % (root, listing.stderr.strip()))
        found += [(root, container) for container in json.loads(listing.stdout or "null") or []]
    return found


def delete_containers(base: Path) -> list[str]:
    """Kill and delete every container runc knows under ``base`` (``runc delete --force``, which kills every process
    of its cgroup): containers outlive their runtime, whose shims and conmons are not of its process group. The
    ids deleted."""
    deleted = []
    for root, container in runc_containers(base):
        subprocess.run(
            [binary("runc"), "--root", str(root), "delete", "--force", container["id"]],
            capture_output=True,
            check=False,
        )
        deleted.append(container["id"])
    return deleted


def shim_sockets(base: Path) -> list[Path]:
    """The sockets of the containerd shims of the node under ``base`` (each task's ``address`` file names its
    socket, in ``/run/containerd/s/``): a shim killed by signal leaves its socket behind."""
    found = []
    for address in base.glob("state/io.containerd.runtime.v2.task/*/*/address"):
        with contextlib.suppress(OSError):
            text = address.read_text().strip()
            if text.startswith("unix://"):
                found.append(Path(text[len("unix://") :]))
    return found


def remove_sockets(paths: Sequence[Path]) -> None:
    """Unlink the sockets ``paths`` that still exist (only sockets)."""
    for path in paths:
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(path.lstat().st_mode):
                path.unlink()


def remove_cgroup(parent: str, root: Path = CGROUP_ROOT) -> None:
    """Remove the empty cgroup directories of ``parent`` (see ``cgroup_parent``) in every hierarchy under ``root``,
    deepest first; a cgroup that still has processes stays (the kernel refuses)."""
    relative = parent.strip("/")
    if not relative.startswith("pinned-images-lab-"):
        raise LabError("refusing to remove cgroup %r: not a lab node's" % parent)
    for top in list(root.glob(relative)) + list(root.glob("*/" + relative)):
        for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                path.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


# ---- distribution layouts ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabLayout:
    """A node laid out as a distribution lays its containerd out: the host paths of its socket, config file, hosts
    directory and containerd's root and state, and the flags it starts containerd with. The lab builds its files in
    a directory that is the node's host root (``host_root`` of the modules), and runs containerd in a private mount
    namespace where that directory's ``run`` and ``var`` are ``/run`` and ``/var``, so containerd, its flags and
    its config name the distribution's own paths (as a pod with the host's / at /host sees a real node)."""

    key: str
    socket: str
    config: str
    hosts_dir: str
    root: str
    state: str
    # containerd's flags as the distribution passes them (the config flag first), after the binary.
    flags: tuple[str, ...]
    # Symbolic links of the layout (host path -> target), e.g. MicroK8s's snap revision.
    links: tuple[tuple[str, str], ...] = ()
    # Files a host of that layout often has besides (host path -> text), e.g. a stray distribution config.
    extra_files: tuple[tuple[str, str], ...] = ()
    header: str = ""


_K3S = "/var/lib/rancher/k3s/agent"
_RKE2 = "/var/lib/rancher/rke2/agent"
# MicroK8s's $SNAP_DATA (a revision, with `current` linking to it) and $SNAP_COMMON.
_SNAP_DATA, _SNAP_COMMON = "/var/snap/microk8s/8147", "/var/snap/microk8s/common"
# What Debian's containerd package installs, which k3s never reads (issue 33's stray file).
STRAY_CONTAINERD_CONFIG = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = ""\n'
LAB_LAYOUTS = {
    layout.key: layout
    for layout in (
        # k3s's agent: pkg/agent/containerd (flags), templates (config-v3.toml.tmpl), registries.yaml -> certs.d.
        LabLayout(
            "k3s",
            "/run/k3s/containerd/containerd.sock",
            f"{_K3S}/etc/containerd/config.toml",
            f"{_K3S}/etc/containerd/certs.d",
            f"{_K3S}/containerd",
            "/run/k3s/containerd",
            (
                "-c",
                f"{_K3S}/etc/containerd/config.toml",
                "-a",
                "/run/k3s/containerd/containerd.sock",
                "--state",
                "/run/k3s/containerd",
                "--root",
                f"{_K3S}/containerd",
            ),
            extra_files=(
                ("/etc/containerd/config.toml", STRAY_CONTAINERD_CONFIG),
                ("/etc/rancher/k3s/registries.yaml", "mirrors: {}\n"),
            ),
            header="# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\n",
        ),
        # RKE2 runs k3s's agent code with its own data directory; the socket is k3s's.
        LabLayout(
            "rke2",
            "/run/k3s/containerd/containerd.sock",
            f"{_RKE2}/etc/containerd/config.toml",
            f"{_RKE2}/etc/containerd/certs.d",
            f"{_RKE2}/containerd",
            "/run/k3s/containerd",
            (
                "-c",
                f"{_RKE2}/etc/containerd/config.toml",
                "-a",
                "/run/k3s/containerd/containerd.sock",
                "--state",
                "/run/k3s/containerd",
                "--root",
                f"{_RKE2}/containerd",
            ),
            header="# File generated by rke2. DO NOT EDIT. Use config-v3.toml.tmpl instead.\n",
        ),
        # MicroK8s: microk8s-resources/default-args/containerd and containerd-template.toml rendered to
        # containerd.toml, certs.d beside it.
        LabLayout(
            "microk8s",
            f"{_SNAP_COMMON}/run/containerd.sock",
            f"{_SNAP_DATA}/args/containerd.toml",
            f"{_SNAP_DATA}/args/certs.d",
            f"{_SNAP_COMMON}/var/lib/containerd",
            f"{_SNAP_COMMON}/run/containerd",
            (
                "--config",
                f"{_SNAP_DATA}/args/containerd.toml",
                "--root",
                f"{_SNAP_COMMON}/var/lib/containerd",
                "--state",
                f"{_SNAP_COMMON}/run/containerd",
                "--address",
                f"{_SNAP_COMMON}/run/containerd.sock",
            ),
            links=(("/var/snap/microk8s/current", "8147"),),
        ),
    )
}


def layout_argv(containerd: str, host: Path, layout: LabLayout) -> list[str]:
    """containerd started as the layout starts it, in a private mount namespace whose /run and /var are the host
    root's (``unshare`` execs the shell, which execs containerd: one pid, no mount outside the namespace)."""
    binds = 'mount --bind "$1/run" /run && mount --bind "$1/var" /var && shift && exec "$@"'
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        binds,
        "sh",
        str(host),
        containerd,
        *layout.flags,
    ]


def host_file(host: Path, path: str) -> Path:
    """The file of the host path ``path`` in the host root ``host``."""
    return host / path.lstrip("/")
