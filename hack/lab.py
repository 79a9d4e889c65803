#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""A throw-away lab on this machine: a plain registry, a login+TLS registry and containerd "nodes".

Everything lives under one directory (default ``<repo>/.lab``, ``--dir`` or ``$PINNED_IMAGES_LAB_DIR``);
nothing is written to system paths. See hack/README.md. Tests use the ``Lab`` class directly.
"""

from __future__ import annotations

import argparse
import base64
import copy
import gzip
import hashlib
import http.client
import io
import json
import os
import platform
import random
import re
import secrets
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO / ".lab"
ENV_DIR = "PINNED_IMAGES_LAB_DIR"
# Only a directory holding this file (or an empty one) is ever wiped, so a mistyped --dir cannot cost data.
MARKER = ".pinned-images-lab"
STATE_VERSION = 1
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
KIB = 1024
MIB = 1024 * KIB

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}
HOST_PLATFORM = "linux/" + _ARCH.get(platform.machine(), platform.machine())
# The host platform is always in the index so that the nodes (which run on this machine) resolve it.
MULTIARCH_PLATFORMS = tuple(sorted({"linux/amd64", "linux/arm64", HOST_PLATFORM}))

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
# Processes are recognised by binary name plus an argument under the lab dir, which survives a lost state file.
LAB_BINARIES = ("containerd", "docker-registry")
NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
TMPFS_SIZE = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")
# sun_path is 108 bytes including the NUL.
MAX_SOCKET_PATH = 107
# containerd binaries a node may run: Debian 12's 1.6 from PATH, or Debian trixie's 1.7 that hack/setup.sh unpacks
# (hack/trixie_debs.sh). CRI reports the image label io.cri-containerd.pinned only from 1.7.3 on.
CONTAINERD_BINARIES = {
    "system": None,
    "trixie": REPO / ".build" / "trixie" / "containerd" / "usr" / "bin" / "containerd",
}


class LabError(Exception):
    """The lab could not do what was asked; the message says why (and where the log is)."""


@dataclass
class Layer:
    digest: str
    size: int  # compressed bytes, as in the manifest
    diff_id: str  # sha256 of the uncompressed tar, as in the config's rootfs


@dataclass
class Manifest:
    platform: str
    digest: str
    image_id: str  # the config digest, which CRI reports as the image id
    layers: list[Layer]


@dataclass
class ImageRecord:
    name: str
    registry: str
    repository: str
    tag: str
    digest: str  # of the manifest, or of the index for a multi-arch image
    reference: str  # 127.0.0.1:<port>/<repository>@<digest>
    tag_reference: str  # 127.0.0.1:<port>/<repository>:<tag>
    media_type: str
    manifests: list[Manifest]  # one per platform
    # What a node of this machine pulls: the host platform's manifest (empty if the index lacks it).
    image_id: str
    layers: list[Layer]
    size: int  # compressed bytes of `layers`

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ImageRecord:
        fields = dict(data)
        fields["layers"] = [Layer(**layer) for layer in data["layers"]]
        fields["manifests"] = [
            Manifest(**{**m, "layers": [Layer(**layer) for layer in m["layers"]]}) for m in data["manifests"]
        ]
        return cls(**fields)


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _layer_blob(key: str, size: int) -> tuple[bytes, str]:
    """A gzipped tar with one file of `size` random bytes derived from `key`; returns (blob, diff_id)."""
    data = random.Random(key).randbytes(size)
    raw = io.BytesIO()
    # USTAR with zero mtime/uid/gid: the same key gives the same bytes, hence the same digests.
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("lab-%s.bin" % hashlib.sha256(key.encode()).hexdigest()[:16])
        info.size = size
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    # Level 0 (stored deflate blocks) is still gzip: random content would not shrink, and it is 7x faster.
    return gzip.compress(tar_bytes, compresslevel=0, mtime=0), _sha256(tar_bytes)


def _platform_fields(plat: str) -> dict[str, str]:
    parts = plat.split("/")
    fields = {"os": parts[0], "architecture": parts[1]}
    if len(parts) > 2:
        fields["variant"] = parts[2]
    return fields


def parse_size(text: str) -> int:
    """'65536', '64K', '1M', '2G' -> bytes."""
    match = re.fullmatch(r"([0-9]+)([kKmMgG]?)i?[bB]?", text.strip())
    if not match:
        raise ValueError("not a size: %r" % text)
    factor = {"": 1, "k": KIB, "m": MIB, "g": 1024 * MIB}[match.group(2).lower()]
    return int(match.group(1)) * factor


class _RegistryClient:
    """Registry HTTP API v2 pusher over one keep-alive connection (monolithic uploads)."""

    def __init__(self, host: str, ca: str | None, credentials: tuple[str, str] | None) -> None:
        if ca:
            self._conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, timeout=60, context=ssl.create_default_context(cafile=ca)
            )
        else:
            self._conn = http.client.HTTPConnection(host, timeout=60)
        self._headers = {}
        if credentials:
            token = base64.b64encode(("%s:%s" % credentials).encode()).decode()
            self._headers["Authorization"] = "Basic " + token

    def close(self) -> None:
        self._conn.close()

    def _request(
        self, method: str, path: str, body: bytes | None = None, headers: Mapping[str, str] | None = None
    ) -> http.client.HTTPResponse:
        self._conn.request(method, path, body=body, headers={**self._headers, **(headers or {})})
        response = self._conn.getresponse()
        response.read()
        return response

    def _expect(
        self, status: int, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> http.client.HTTPResponse:
        response = self._request(method, path, body, {"Content-Type": content_type} if content_type else None)
        if response.status != status:
            raise LabError("%s %s: HTTP %d, expected %d" % (method, path.split("?")[0], response.status, status))
        return response

    def push_blob(self, repository: str, blob: bytes) -> str:
        digest = _sha256(blob)
        if self._request("HEAD", "/v2/%s/blobs/%s" % (repository, digest)).status == 200:
            return digest
        started = self._expect(202, "POST", "/v2/%s/blobs/uploads/" % repository)
        location = urllib.parse.urlsplit(started.getheader("Location", ""))
        query = urllib.parse.parse_qsl(location.query) + [("digest", digest)]
        upload = "%s?%s" % (location.path, urllib.parse.urlencode(query))
        self._expect(201, "PUT", upload, blob, "application/octet-stream")
        return digest

    def push_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> None:
        self._expect(201, "PUT", "/v2/%s/manifests/%s" % (repository, reference), body, media_type)


def release_layer(components: Mapping[str, str], version: str, padding: int = 0, key: str = "") -> bytes:
    """An OpenShift release-manifests layer (gzip tar): image-references (an ImageStream of `components`, tag name
    to image) and release-metadata first, then `padding` random bytes in a third file, so a reader that stops
    after the manifests can be told from one that reads the whole layer."""
    stream = {
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": version, "creationTimestamp": None},
        "spec": {
            "lookupPolicy": {"local": False},
            "tags": [{"name": name, "from": {"kind": "DockerImage", "name": image}} for name, image in
                     components.items()],
        },
    }
    metadata = {"kind": "cincinnati-metadata-v0", "version": version, "previous": [], "metadata": {}}
    files = [
        ("release-manifests/image-references", json.dumps(stream, indent=2).encode()),
        ("release-manifests/release-metadata", json.dumps(metadata, indent=2).encode()),
    ]
    if padding:
        files.append(("release-manifests/0000_99_padding.bin", random.Random(key or version).randbytes(padding)))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=0, mtime=0)


def push_release_manifest(
    client: _RegistryClient, repo: str, plat: str, version: str, layers: Sequence[bytes], labelled: bool = True
) -> tuple[str, bytes]:
    """Push `layers` (gzip blobs) and a config labelled io.openshift.release=`version`; return (digest, manifest)."""
    descriptors = [{"mediaType": OCI_LAYER, "digest": client.push_blob(repo, blob), "size": len(blob)}
                   for blob in layers]
    labels = {"io.openshift.release": version} if labelled else {"io.pinned-images.lab": repo}
    config = _canonical({
        **_platform_fields(plat),
        "created": "1970-01-01T00:00:00Z",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [_sha256(gzip.decompress(blob)) for blob in layers]},
    })
    body = _canonical({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": client.push_blob(repo, config), "size": len(config)},
        "layers": descriptors,
    })
    digest = _sha256(body)
    client.push_manifest(repo, digest, body, OCI_MANIFEST)
    return digest, body


def registry_status(host: str, ca: str | None = None, credentials: tuple[str, str] | None = None) -> int:
    """HTTP status of GET /v2/ (200 open or logged in, 401 login needed); raises OSError when down."""
    if ca:
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, timeout=5, context=ssl.create_default_context(cafile=ca)
        )
    else:
        conn = http.client.HTTPConnection(host, timeout=5)
    headers = {}
    if credentials:
        headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % credentials).encode()).decode()
    try:
        conn.request("GET", "/v2/", headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


def _write(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write atomically: readers (containerd, a second lab command) never see a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)  # mkstemp creates 0600
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _free_ports(count: int) -> list[int]:
    # All sockets stay bound until every port is known, so the ports are distinct.
    sockets = []
    try:
        for _index in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _cmdline(pid: int) -> list[str]:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [arg.decode(errors="replace") for arg in handle.read().split(b"\0") if arg]
    except OSError:
        return []  # gone; a zombie's cmdline is empty too, so it counts as gone


def _owns(pid: int | None, config: str) -> bool:
    """True if `pid` is alive and is the lab process started with `config` (not a recycled pid)."""
    return bool(pid) and config in _cmdline(pid)


def lab_processes(path: Path) -> list[int]:
    """Pids of lab binaries whose arguments point into `path`, whether or not a state file knows them."""
    prefix = str(path) + "/"
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        args = _cmdline(int(entry))
        if args and os.path.basename(args[0]) in LAB_BINARIES and any(a.startswith(prefix) for a in args[1:]):
            pids.append(int(entry))
    return pids


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below `path`, deepest first, once per stacked mount."""
    prefix = str(path)
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return sorted(found, key=lambda p: p.count("/"), reverse=True)


def node_names(nodes: int, control_plane: int | None = None) -> list[str]:
    """`control_plane` (default: 1 when there is a node) names cp-0.., the rest are worker-0.."""
    if control_plane is None:
        control_plane = min(1, nodes)
    if nodes < 0 or not 0 <= control_plane <= nodes:
        raise LabError("need 0 <= control_plane (%d) <= nodes (%d)" % (control_plane, nodes))
    return ["cp-%d" % i for i in range(control_plane)] + ["worker-%d" % i for i in range(nodes - control_plane)]


class Lab:
    """One lab directory. ``up()`` starts (or attaches to) it, ``down()`` removes it."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, seed: int | None = None) -> None:
        self.path = Path(path or os.environ.get(ENV_DIR) or DEFAULT_DIR).resolve()
        self.state: dict[str, Any] = self._load()
        self.seed = seed if seed is not None else self.state.get("seed", 0)
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # ---- state -------------------------------------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.path / "state.json"

    def _load(self) -> dict[str, Any]:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def _save(self) -> None:
        _write(self.state_file, json.dumps(self.state, indent=2, sort_keys=True) + "\n")

    def running(self) -> bool:
        """A finished `up` whose registries and nodes are all alive."""
        state = self.state
        return bool(state.get("ready")) and all(
            _owns(entry.get("pid"), entry["config"])
            for entry in [*state.get("registries", {}).values(), *state.get("nodes", {}).values()]
        )

    def status(self) -> dict[str, Any]:
        """The state plus ``running`` flags for the lab, each registry and each node."""
        status = copy.deepcopy(self.state)
        for entry in [*status.get("registries", {}).values(), *status.get("nodes", {}).values()]:
            entry["running"] = _owns(entry.get("pid"), entry["config"])
        status["running"] = self.running()
        return status

    def credentials(self) -> tuple[str, str]:
        """(username, password) of the login registry, read from its 0600 file."""
        data = json.loads(Path(self.state["registries"]["auth"]["credentials"]).read_text())
        return data["username"], data["password"]

    def images(self) -> dict[str, ImageRecord]:
        return {name: ImageRecord.from_dict(data) for name, data in self.state.get("images", {}).items()}

    def bulk(self, prefix: str = "bulk") -> list[ImageRecord]:
        return [ImageRecord.from_dict(data) for data in self.state.get("bulk", {}).get(prefix, [])]

    def env(self) -> dict[str, str]:
        """Shell variables describing the lab (``env`` command)."""
        registries, nodes = self.state["registries"], self.state["nodes"]
        auth = registries["auth"]
        env = {
            ENV_DIR: str(self.path),
            "PINNED_IMAGES_LAB_PLAIN_REGISTRY": registries["plain"]["host"],
            "PINNED_IMAGES_LAB_AUTH_REGISTRY": auth["host"],
            "PINNED_IMAGES_LAB_CA": auth["ca"],
            "PINNED_IMAGES_LAB_CREDENTIALS": auth["credentials"],
            "PINNED_IMAGES_LAB_DOCKER_CONFIG": auth["docker_config"],
            "PINNED_IMAGES_LAB_BAD_DOCKER_CONFIG": auth["bad_docker_config"],
            "PINNED_IMAGES_LAB_NODES": " ".join(nodes),
        }
        for name, node in nodes.items():
            env["PINNED_IMAGES_LAB_NODE_%s" % name.upper().replace("-", "_")] = node["endpoint"]
        if nodes:
            # crictl reads this; point it at the first node.
            env["CONTAINER_RUNTIME_ENDPOINT"] = next(iter(nodes.values()))["endpoint"]
        return env

    def inventory(self, python: str | None = None) -> dict[str, Any]:
        """An Ansible inventory of the nodes (``inventory`` command); makes each node's drop-in directory.

        Every node is a host with the local connection (the nodes are processes on this machine), its own CRI
        socket, and its own CRI-O drop-in path and prefetch progress file under the lab directory, so the
        ``pinned.images.node`` role can run on all of them at once. Groups: ``control_plane`` and ``workers``.
        The containerd nodes have no CRI-O: pinning is forced on (``node_pin``) and nothing is reloaded, so the
        drop-in shows what CRI-O would read; nodes running containerd 1.7 (``trixie``) pin with the image label
        instead, as a real containerd node does (``node_pin: auto``). Pulls authenticate with the lab's docker config; the lab runs as
        root already, so nothing becomes root (``ansible_become``).
        """
        if not self.state.get("nodes"):
            raise LabError("no lab at %s" % self.path)
        groups: dict[str, dict[str, Any]] = {"control_plane": {}, "workers": {}}
        for name, node in self.state["nodes"].items():
            base = Path(node["root"]).parent
            dropin_dir = base / "crio.conf.d"
            dropin_dir.mkdir(parents=True, exist_ok=True)
            group = "control_plane" if node["role"] == "control-plane" else "workers"
            groups[group][name] = {
                "node_cri_socket": node["endpoint"],
                "node_dropin_path": str(dropin_dir / "50-pinned-images"),
                "node_progress_file": str(base / "prefetch-progress.json"),
                "node_pull_secret_path": str(base / "pull-secret.json"),
            }
            if node.get("containerd", "system") != "system":
                groups[group][name]["node_pin"] = "auto"
        return {
            "all": {
                "vars": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": python or sys.executable,
                    "ansible_become": False,
                    "node_auth_file": self.state["registries"]["auth"]["docker_config"],
                    "node_pin": "true",
                    "node_crio_reload": "none",
                },
                "children": {group: {"hosts": hosts} for group, hosts in groups.items()},
            }
        }

    def write_inventory(self, path: str | os.PathLike[str] | None = None, python: str | None = None) -> Path:
        """Write :meth:`inventory` as YAML to `path` (default ``<lab>/inventory.yml``); return the path."""
        target = Path(path) if path else self.path / "inventory.yml"
        header = "# Ansible inventory of the pinned.images lab at %s (hack/lab.py inventory)\n" % self.path
        _write(target, header + _to_yaml(self.inventory(python)))
        return target

    # ---- up / down ---------------------------------------------------------------------------------------

    def up(
        self,
        nodes: int = 2,
        control_plane: int | None = None,
        tmpfs_nodes: Mapping[str, str] | None = None,
        bulk: int = 0,
        bulk_size: int = 64 * KIB,
        containerd_nodes: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Start registries, nodes and the default images; a running lab is left alone and returned.

        `tmpfs_nodes` maps node names to a tmpfs size ("64M") for their containerd root; `containerd_nodes` maps
        node names to a key of CONTAINERD_BINARIES (default "system").
        """
        if self.running():
            return self.status()
        names = node_names(nodes, control_plane)
        tmpfs = dict(tmpfs_nodes or {})
        unknown = sorted(set(tmpfs) - set(names))
        if unknown:
            raise LabError("--tmpfs-node names no node: %s (nodes: %s)" % (", ".join(unknown), ", ".join(names)))
        for size in tmpfs.values():
            _check_tmpfs_size(size)
        binaries = _containerd_choices(containerd_nodes, names)
        started = time.monotonic()
        self._reset()
        try:
            plain_port, auth_port, *stream_ports = _free_ports(2 + len(names))
            self.state = {
                "version": STATE_VERSION,
                "dir": str(self.path),
                "seed": self.seed,
                "platform": HOST_PLATFORM,
                "ready": False,
                "registries": {},
                "nodes": {},
                "images": {},
                "bulk": {},
            }
            self._make_pki()
            self._configure_registry("plain", plain_port)
            self._configure_registry("auth", auth_port)
            for name, port in zip(names, stream_ports):
                self._configure_node(name, port, tmpfs.get(name), binaries[name])
            for name in self.state["registries"]:
                self._launch(self.state["registries"][name], "registry-" + name)
            for name in names:
                self._launch(self.state["nodes"][name], "node-" + name)
            self._save()
            self._wait_ready(self.state["registries"].values(), self.state["nodes"].values())
            self._push_defaults()
            if bulk:
                self.push_bulk(bulk, bulk_size)
            self.state["ready"] = True
            self.state["up_seconds"] = round(time.monotonic() - started, 2)
            self._save()
        except BaseException:
            # Keep the directory: its logs say what went wrong; the next `up` starts clean.
            self.down(keep=True)
            raise
        return self.status()

    def down(self, keep: bool = False) -> None:
        """Stop every lab process, unmount tmpfs roots, and remove the directory unless `keep`."""
        # Checked before anything is killed or unmounted: `--dir /tmp` must not touch what others run there.
        if self.path.exists() and any(self.path.iterdir()) and not (self.path / MARKER).exists():
            raise LabError("%s is not empty and is not a lab directory; pick another --dir" % self.path)
        # Only children not yet reaped: a reaped child's pid may already belong to someone else.
        self._kill(lab_processes(self.path) + [p.pid for p in self._children.values() if p.poll() is None])
        self._children.clear()
        for point in mounts_under(self.path):
            _unmount(point)
        if keep:
            if self.state:
                for entry in [*self.state["registries"].values(), *self.state["nodes"].values()]:
                    entry["pid"] = None
                self.state["ready"] = False
                self._save()
        else:
            shutil.rmtree(self.path, ignore_errors=not self.path.exists())
            self.state = {}

    def _reset(self) -> None:
        """Clear whatever a killed or half-finished run left: processes, mounts, sockets, files."""
        self.down()
        self.path.mkdir(parents=True, exist_ok=True)
        _write(self.path / MARKER, "pinned.images lab; `python hack/lab.py down` removes this directory\n")
        (self.path / "logs").mkdir()

    # ---- processes ---------------------------------------------------------------------------------------

    def _launch(self, entry: dict[str, Any], log_name: str) -> None:
        if entry.get("socket"):
            # A stale socket from a killed run would make the readiness probe lie.
            Path(entry["socket"]).unlink(missing_ok=True)
            Path(entry["socket"] + ".ttrpc").unlink(missing_ok=True)
        log = open(self.path / "logs" / (log_name + ".log"), "ab")
        with log:
            # Own session: `down` kills the whole group, and the lab outlives the `up` command.
            child = subprocess.Popen(
                entry["argv"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.path,
                start_new_session=True,
            )
        self._children[child.pid] = child
        entry["pid"] = child.pid
        entry["log"] = log.name

    def _kill(self, pids: list[int]) -> None:
        pids = sorted(set(pids))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                _signal(pid, sig)
            deadline = time.monotonic() + STOP_TIMEOUT
            while pids and time.monotonic() < deadline:
                pids = [pid for pid in pids if self._alive(pid)]
                if pids:
                    time.sleep(0.02)
            if not pids:
                return
        raise LabError("processes survived SIGKILL: %s" % pids)

    def _alive(self, pid: int) -> bool:
        child = self._children.get(pid)
        if child is not None:
            return child.poll() is None  # also reaps our own children
        return bool(_cmdline(pid))

    def _wait_ready(self, *groups: Any) -> None:
        pending = [entry for group in groups for entry in group]
        deadline = time.monotonic() + READY_TIMEOUT
        while pending:
            for entry in list(pending):
                if not self._alive(entry["pid"]):
                    raise LabError("%s exited at start-up; log %s:\n%s" % (entry["name"], entry["log"], _tail(entry)))
                if _ready(entry):
                    pending.remove(entry)
            if pending and time.monotonic() > deadline:
                names = ", ".join(e["name"] for e in pending)
                raise LabError("not ready after %ds: %s; see %s/logs" % (READY_TIMEOUT, names, self.path))
            if pending:
                time.sleep(0.02)

    # ---- registries --------------------------------------------------------------------------------------

    def _make_pki(self) -> None:
        pki = self.path / "pki"
        pki.mkdir(mode=0o700)
        # P-256 keys: generated in milliseconds, unlike RSA.
        key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _run(
            ["openssl", "req", "-x509", *key, "-keyout", pki / "ca.key", "-out", pki / "ca.crt", "-days", "30"]
            + ["-subj", "/CN=pinned.images lab CA", "-addext", "basicConstraints=critical,CA:TRUE"]
            + ["-addext", "keyUsage=critical,keyCertSign,cRLSign"]
        )
        _run(
            ["openssl", "req", "-new", *key, "-keyout", pki / "server.key", "-out", pki / "server.csr"]
            + ["-subj", "/CN=127.0.0.1"]
        )
        _write(
            pki / "server.ext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
            "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n",
        )
        _run(
            ["openssl", "x509", "-req", "-in", pki / "server.csr", "-CA", pki / "ca.crt", "-CAkey", pki / "ca.key"]
            + ["-set_serial", "0x" + secrets.token_hex(8), "-days", "30", "-out", pki / "server.crt"]
            + ["-extfile", pki / "server.ext"]
        )

    def _configure_registry(self, name: str, port: int) -> None:
        base = self.path / "registries" / name
        host = "127.0.0.1:%d" % port
        tls = name == "auth"
        config: dict[str, Any] = {
            "version": "0.1",
            "log": {"level": "info", "formatter": "text", "fields": {"service": "lab-registry-" + name}},
            "storage": {
                "filesystem": {"rootdirectory": str(base / "data")},
                "delete": {"enabled": True},
                "cache": {"blobdescriptor": "inmemory"},
                # The purger only logs noise in a lab that lives minutes.
                "maintenance": {"uploadpurging": {"enabled": False}},
            },
            "http": {"addr": host, "secret": secrets.token_hex(16)},
        }
        entry: dict[str, Any] = {
            "name": "registry-" + name,
            "host": host,
            "port": port,
            "url": ("https://" if tls else "http://") + host,
            "tls": tls,
            "ca": None,
            "data": str(base / "data"),
            "config": str(base / "config.yml"),
        }
        if tls:
            pki = self.path / "pki"
            config["http"]["tls"] = {"certificate": str(pki / "server.crt"), "key": str(pki / "server.key")}
            config["auth"] = {"htpasswd": {"realm": "pinned.images lab", "path": str(base / "htpasswd")}}
            entry.update(self._make_credentials(host, base / "htpasswd"))
            entry["ca"] = str(pki / "ca.crt")
        # JSON is YAML, so no YAML library is needed; 0600 because it holds the HTTP secret.
        _write(base / "config.yml", json.dumps(config, indent=2) + "\n", 0o600)
        entry["argv"] = [_binary("docker-registry"), "serve", entry["config"]]
        self.state["registries"][name] = entry

    def _make_credentials(self, host: str, htpasswd: Path) -> dict[str, Any]:
        try:
            import bcrypt  # the registry's htpasswd accepts bcrypt only
        except ImportError as exc:
            raise LabError("the lab needs the 'bcrypt' package: run it with .venv/bin/python") from exc
        auth = self.path / "auth"
        auth.mkdir(mode=0o700)
        username, password = "lab-" + secrets.token_hex(3), secrets.token_urlsafe(18)
        # Cost 5: the registry checks the hash on every request, so a high cost slows every pull.
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()
        _write(htpasswd, "%s:%s\n" % (username, hashed), 0o600)
        _write(auth / "credentials.json", json.dumps({"username": username, "password": password}) + "\n", 0o600)
        for file_name, secret in (("config.json", password), ("bad-config.json", password + "-wrong")):
            token = base64.b64encode(("%s:%s" % (username, secret)).encode()).decode()
            _write(auth / file_name, json.dumps({"auths": {host: {"auth": token}}}, indent=2) + "\n", 0o600)
        return {
            "username": username,
            "credentials": str(auth / "credentials.json"),
            "docker_config": str(auth / "config.json"),
            "bad_docker_config": str(auth / "bad-config.json"),
            "htpasswd": str(htpasswd),
        }

    def stop_registry(self, name: str) -> None:
        """Stop registry `name` ("plain" or "auth"); `start_registry` brings it back on the same port."""
        entry = self.state["registries"][name]
        if _owns(entry.get("pid"), entry["config"]):
            self._kill([entry["pid"]])
        entry["pid"] = None
        self._save()

    def start_registry(self, name: str) -> None:
        entry = self.state["registries"][name]
        if _owns(entry.get("pid"), entry["config"]):
            return
        self._launch(entry, entry["name"])
        self._save()
        self._wait_ready([entry])

    # ---- nodes -------------------------------------------------------------------------------------------

    def _configure_node(
        self, name: str, stream_port: int, tmpfs_size: str | None, containerd: str = "system"
    ) -> dict[str, Any]:
        if not NODE_NAME.match(name):
            raise LabError("bad node name %r: lower-case letters, digits and '-'" % name)
        base = self.path / "nodes" / name
        sock = base / "containerd.sock"
        if len(str(sock) + ".ttrpc") > MAX_SOCKET_PATH:
            raise LabError("socket path %s is too long for a unix socket; use a shorter --dir" % sock)
        for sub in ("root", "state", "tmp", "opt", "certs.d"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        if tmpfs_size:
            _run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % tmpfs_size, "lab-" + name, base / "root"])
        self._write_hosts(base / "certs.d")
        (self.path / "cni" / "bin").mkdir(parents=True, exist_ok=True)
        (self.path / "cni" / "net.d").mkdir(parents=True, exist_ok=True)
        q = json.dumps  # TOML basic strings take JSON's escapes
        config = f"""version = 2
root = {q(str(base / "root"))}
state = {q(str(base / "state"))}
temp = {q(str(base / "tmp"))}
disabled_plugins = {q(list(DISABLED_PLUGINS))}

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

[plugins."io.containerd.grpc.v1.cri"]
  disable_apparmor = true
  disable_tcp_service = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "{stream_port}"

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "native"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = {q(str(self.path / "cni" / "bin"))}
  conf_dir = {q(str(self.path / "cni" / "net.d"))}

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = {q(str(base / "certs.d"))}
"""
        _write(base / "config.toml", config)
        entry = {
            "name": name,
            "role": "control-plane" if name.startswith("cp-") else "worker",
            "socket": str(sock),
            "endpoint": "unix://%s" % sock,
            "config": str(base / "config.toml"),
            "root": str(base / "root"),
            "state": str(base / "state"),
            "certs_d": str(base / "certs.d"),
            "stream_port": stream_port,
            "tmpfs": tmpfs_size,
            "containerd": containerd,
            "argv": [containerd_binary(containerd), "--config", str(base / "config.toml")],
        }
        self.state["nodes"][name] = entry
        return entry

    def _write_hosts(self, certs_d: Path) -> None:
        # containerd re-reads these on every pull, so a test may edit a node's copy (e.g. to add a mirror).
        for entry in self.state["registries"].values():
            ca = "\n  ca = %s" % json.dumps(entry["ca"]) if entry["ca"] else ""
            hosts = f"""server = "{entry['url']}"

[host."{entry['url']}"]
  capabilities = ["pull", "resolve"]{ca}
"""
            _write(certs_d / entry["host"] / "hosts.toml", hosts)

    def add_node(self, name: str, tmpfs_size: str | None = None, containerd: str = "system") -> dict[str, Any]:
        """Start one more node (running the `containerd` binary of CONTAINERD_BINARIES) on the running lab;
        returns its state entry."""
        if not self.running():
            raise LabError("the lab at %s is not running" % self.path)
        if name in self.state["nodes"]:
            raise LabError("node %s exists" % name)
        if tmpfs_size:
            _check_tmpfs_size(tmpfs_size)
        containerd_binary(containerd)
        entry = self._configure_node(name, _free_ports(1)[0], tmpfs_size, containerd)
        self._launch(entry, "node-" + name)
        self._save()
        try:
            self._wait_ready([entry])
        except LabError:
            # Undo it whole, so the lab still counts as running and a retry with the same name works.
            self._kill([entry["pid"]])
            for point in mounts_under(Path(entry["root"])):
                _unmount(point)
            del self.state["nodes"][name]
            self._save()
            raise
        return entry

    def restart_node(self, name: str) -> dict[str, Any]:
        """Stop a node's containerd and start it again on the same root (its images and labels stay)."""
        entry = self.state["nodes"][name]
        self._kill([entry["pid"]] if _owns(entry["pid"], entry["config"]) else [])
        self._launch(entry, "node-" + name)
        self._save()
        self._wait_ready([entry])
        return entry

    # ---- images ------------------------------------------------------------------------------------------

    def _client(self, registry: str) -> _RegistryClient:
        entry = self.state["registries"][registry]
        return _RegistryClient(entry["host"], entry["ca"], self.credentials() if entry["tls"] else None)

    def push_image(
        self,
        repo: str,
        layer_sizes: Sequence[int] = (64 * KIB,),
        shared_layers: Mapping[str, int] | None = None,
        tag: str = "v1",
        registry: str = "plain",
        platforms: Sequence[str] | None = None,
        name: str | None = None,
    ) -> ImageRecord:
        """Build and push one image; recorded in the state under `name` (default "<registry>/<repo>:<tag>").

        Layers: first `shared_layers` ({key: size}: the same key and size give the same blob in any image and
        either registry), then one own layer per `layer_sizes`. `platforms` (e.g. ["linux/amd64",
        "linux/arm64"]) makes a multi-arch index; None pushes one manifest for this machine's platform.
        Content depends only on the lab's seed, repo, tag, platform and sizes.
        """
        client = self._client(registry)
        try:
            record = self._push(client, registry, repo, tag, layer_sizes, shared_layers or {}, platforms, name)
        finally:
            client.close()
        self.state["images"][record.name] = asdict(record)
        self._save()
        return record

    def push_bulk(
        self, n: int, size: int = 64 * KIB, prefix: str = "bulk", registry: str = "plain", workers: int = 4
    ) -> list[ImageRecord]:
        """Push `n` distinct one-layer images `<prefix>/img-NNNN:v1`; recorded under state["bulk"][prefix].

        A new prefix gives images no node has yet; the same prefix and size give the same digests.
        """
        local = threading.local()
        clients: list[_RegistryClient] = []

        def push(index: int) -> ImageRecord:
            if not hasattr(local, "client"):
                local.client = self._client(registry)
                clients.append(local.client)
            repo = "%s/img-%04d" % (prefix, index)
            return self._push(local.client, registry, repo, "v1", [size], {}, None, "%s-%04d" % (prefix, index))

        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                records = list(pool.map(push, range(n)))
        finally:
            for client in clients:
                client.close()
        self.state["bulk"][prefix] = [asdict(record) for record in records]
        self._save()
        return records

    def push_release(
        self,
        components: Mapping[str, str] | Mapping[str, Mapping[str, str]],
        version: str = "4.99.0",
        repo: str = "ocp/release",
        tag: str | None = None,
        registry: str = "plain",
        platforms: Sequence[str] | None = None,
        padding: int = 0,
        unrelated: int = 64 * KIB,
        labelled: bool = True,
    ) -> dict[str, Any]:
        """Build and push an OpenShift release image; recorded under state["releases"][<repo>:<tag>].

        Layers: an unrelated one of `unrelated` bytes, then the release-manifests layer (see `release_layer`).
        With `platforms`, `components` maps each platform to its own {tag name: image} and an OCI index is pushed.
        Returns {reference, tag_reference, digest, manifests: {platform: digest}, layer_size}.
        """
        tag = tag or version
        host = self.state["registries"][registry]["host"]
        per_platform = {p: components[p] for p in platforms} if platforms else {HOST_PLATFORM: components}
        client = self._client(registry)
        try:
            manifests, bodies, layer_size = {}, {}, 0
            for plat, listed in per_platform.items():
                other, _diff_id = _layer_blob("%d:%s:%s:unrelated" % (self.seed, plat, repo), unrelated)
                layer = release_layer(listed, version, padding, "%d:%s:%s" % (self.seed, plat, version))
                layer_size = len(layer)
                manifests[plat], bodies[plat] = push_release_manifest(client, repo, plat, version, [other, layer],
                                                                      labelled)
            if platforms:
                index = _canonical({
                    "schemaVersion": 2,
                    "mediaType": OCI_INDEX,
                    "manifests": [{"mediaType": OCI_MANIFEST, "digest": manifests[p], "size": len(bodies[p]),
                                   "platform": _platform_fields(p)} for p in platforms],
                })
                client.push_manifest(repo, tag, index, OCI_INDEX)
                digest = _sha256(index)
            else:
                client.push_manifest(repo, tag, bodies[HOST_PLATFORM], OCI_MANIFEST)
                digest = manifests[HOST_PLATFORM]
        finally:
            client.close()
        record = {
            "reference": "%s/%s@%s" % (host, repo, digest),
            "tag_reference": "%s/%s:%s" % (host, repo, tag),
            "digest": digest,
            "manifests": manifests,
            "layer_size": layer_size,
        }
        self.state.setdefault("releases", {})["%s:%s" % (repo, tag)] = record
        self._save()
        return record

    def _push(
        self,
        client: _RegistryClient,
        registry: str,
        repo: str,
        tag: str,
        layer_sizes: Sequence[int],
        shared_layers: Mapping[str, int],
        platforms: Sequence[str] | None,
        name: str | None,
    ) -> ImageRecord:
        host = self.state["registries"][registry]["host"]
        manifests, bodies = [], []
        for plat in platforms or [HOST_PLATFORM]:
            specs = [("shared:%s" % key, size) for key, size in shared_layers.items()]
            specs += [("%s:%s:%d" % (repo, tag, i), size) for i, size in enumerate(layer_sizes)]
            layers = []
            for key, size in specs:
                blob, diff_id = _layer_blob("%d:%s:%s:%d" % (self.seed, plat, key, size), size)
                layers.append(Layer(client.push_blob(repo, blob), len(blob), diff_id))
            config = _canonical(
                {
                    **_platform_fields(plat),
                    "created": "1970-01-01T00:00:00Z",
                    "config": {"Labels": {"io.pinned-images.lab": "%s:%s" % (repo, tag)}},
                    "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
                }
            )
            config_digest = client.push_blob(repo, config)
            body = _canonical(
                {
                    "schemaVersion": 2,
                    "mediaType": OCI_MANIFEST,
                    "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config)},
                    "layers": [{"mediaType": OCI_LAYER, "digest": x.digest, "size": x.size} for x in layers],
                }
            )
            manifests.append(Manifest(plat, _sha256(body), config_digest, layers))
            bodies.append(body)
        if platforms is None:
            body, media_type = bodies[0], OCI_MANIFEST
        else:
            for manifest, child in zip(manifests, bodies):
                client.push_manifest(repo, manifest.digest, child, OCI_MANIFEST)
            index = {
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": [
                    {
                        "mediaType": OCI_MANIFEST,
                        "digest": manifest.digest,
                        "size": len(child),
                        "platform": _platform_fields(manifest.platform),
                    }
                    for manifest, child in zip(manifests, bodies)
                ],
            }
            body, media_type = _canonical(index), OCI_INDEX
        client.push_manifest(repo, tag, body, media_type)
        digest = _sha256(body)
        local = next((m for m in manifests if m.platform == HOST_PLATFORM), None)
        return ImageRecord(
            name=name or "%s/%s:%s" % (registry, repo, tag),
            registry=registry,
            repository=repo,
            tag=tag,
            digest=digest,
            reference="%s/%s@%s" % (host, repo, digest),
            tag_reference="%s/%s:%s" % (host, repo, tag),
            media_type=media_type,
            manifests=manifests,
            image_id=local.image_id if local else "",
            layers=local.layers if local else [],
            size=sum(layer.size for layer in local.layers) if local else 0,
        )

    def _push_defaults(self) -> None:
        base = {"base": 1 * MIB}
        for registry, prefix in (("plain", "lab"), ("auth", "private")):
            self.push_image(prefix + "/small", [64 * KIB], registry=registry, name=registry + "-small")
            self.push_image(prefix + "/shared-a", [256 * KIB], base, registry=registry, name=registry + "-shared-a")
            self.push_image(
                prefix + "/shared-b", [128 * KIB, 64 * KIB], base, registry=registry, name=registry + "-shared-b"
            )
            self.push_image(
                prefix + "/multiarch",
                [128 * KIB],
                registry=registry,
                platforms=MULTIARCH_PLATFORMS,
                name=registry + "-multiarch",
            )


def _to_yaml(value: Any, indent: int = 0) -> str:
    """YAML block style for dicts of dicts and scalars (strings as JSON strings, which YAML reads the same)."""
    lines = []
    pad = "  " * indent
    for key, item in value.items():
        if isinstance(item, dict):
            lines.append("%s%s:%s" % (pad, key, "" if item else " {}"))
            if item:
                lines.append(_to_yaml(item, indent + 1).rstrip("\n"))
        else:
            lines.append("%s%s: %s" % (pad, key, json.dumps(item)))
    return "\n".join(lines) + "\n"


def _check_tmpfs_size(size: str) -> None:
    if not TMPFS_SIZE.match(size):
        raise LabError("bad tmpfs size %r: use a number with an optional k/m/g suffix, e.g. 64M" % size)


def _binary(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise LabError("%s not found; run hack/setup.sh" % name)
    return path


def containerd_binary(choice: str) -> str:
    """The containerd binary named by `choice`, a key of CONTAINERD_BINARIES."""
    if choice not in CONTAINERD_BINARIES:
        raise LabError("unknown containerd %r: use one of %s" % (choice, ", ".join(CONTAINERD_BINARIES)))
    path = CONTAINERD_BINARIES[choice]
    if path is None:
        return _binary("containerd")
    if not os.access(path, os.X_OK):
        raise LabError("%s not found; run hack/setup.sh (hack/trixie_debs.sh containerd unpacks it)" % path)
    return str(path)


def _containerd_choices(choices: Mapping[str, str] | None, names: Sequence[str]) -> dict[str, str]:
    """Node name -> containerd choice for every node; unknown names and choices are errors."""
    choices = dict(choices or {})
    unknown = sorted(set(choices) - set(names))
    if unknown:
        raise LabError("--containerd-node names no node: %s (nodes: %s)" % (", ".join(unknown), ", ".join(names)))
    for choice in set(choices.values()):
        containerd_binary(choice)
    return {name: choices.get(name, "system") for name in names}


def _run(argv: list[Any]) -> None:
    result = subprocess.run([_binary(argv[0]), *map(str, argv[1:])], capture_output=True, text=True, check=False)
    if result.returncode:
        raise LabError("%s failed (%d): %s" % (" ".join(map(str, argv[:3])), result.returncode, result.stderr.strip()))


def _signal(pid: int, sig: int) -> None:
    try:
        # Lab processes lead their own group; anything else is signalled alone, never our own group.
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _unmount(point: str) -> None:
    if subprocess.run(["umount", point], capture_output=True, check=False).returncode:
        # Busy (a process we do not know still uses it): detach now, the kernel frees it later.
        _run(["umount", "-l", point])


def _ready(entry: Mapping[str, Any]) -> bool:
    try:
        if "socket" not in entry:
            return registry_status(entry["host"], entry["ca"]) in (200, 401)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(entry["socket"])
    except OSError:
        return False
    # containerd serves even when a plugin failed to load; the lab is useless without CRI.
    try:
        listing = subprocess.run(
            [_binary("ctr"), "--address", entry["socket"], "plugins", "ls", "id==cri"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.split()
    except subprocess.TimeoutExpired:
        return False
    if listing[-1:] != ["ok"]:
        raise LabError("the CRI plugin of %s did not load; log %s:\n%s" % (entry["name"], entry["log"], _tail(entry)))
    return True


def _tail(entry: Mapping[str, Any], lines: int = 20) -> str:
    try:
        return "\n".join(Path(entry["log"]).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ---- CLI -------------------------------------------------------------------------------------------------


def _print_human(status: Mapping[str, Any], out=sys.stdout) -> None:
    def alive(entry: Mapping[str, Any]) -> str:
        return "up (pid %s)" % entry["pid"] if entry.get("running") else "DOWN"

    print("lab %s: %s" % (status["dir"], "running" if status["running"] else "NOT running"), file=out)
    if status.get("up_seconds") is not None:
        print("  started in %.1fs, platform %s" % (status["up_seconds"], status["platform"]), file=out)
    print("registries:", file=out)
    for name, reg in status["registries"].items():
        print("  %-6s %-28s %s" % (name, reg["url"], alive(reg)), file=out)
    auth = status["registries"].get("auth")
    if auth:
        print("auth registry (user %s):" % auth["username"], file=out)
        for label, key in (
            ("CA", "ca"),
            ("credentials", "credentials"),
            ("docker config", "docker_config"),
            ("bad docker config", "bad_docker_config"),
        ):
            print("  %-18s %s" % (label, auth[key]), file=out)
    print("nodes:", file=out)
    for name, node in status["nodes"].items():
        extra = "  tmpfs %s" % node["tmpfs"] if node["tmpfs"] else ""
        extra += "  containerd %s" % node["containerd"] if node.get("containerd", "system") != "system" else ""
        print("  %-10s %-13s %s  %s%s" % (name, node["role"], node["endpoint"], alive(node), extra), file=out)
    print("images:", file=out)
    for name, image in status["images"].items():
        print("  %-17s %s" % (name, image["reference"]), file=out)
        print("  %-17s %s" % ("", image["tag_reference"]), file=out)
    for prefix, records in status.get("bulk", {}).items():
        print("bulk %s: %d images, e.g. %s" % (prefix, len(records), records[0]["reference"]), file=out)


def _tmpfs_arg(text: str) -> tuple[str, str]:
    name, sep, size = text.partition(":")
    if not sep or not name or not TMPFS_SIZE.match(size):
        raise argparse.ArgumentTypeError("expected NAME:SIZE, e.g. worker-0:64M")
    return name, size


def _containerd_arg(text: str) -> tuple[str, str]:
    name, sep, choice = text.partition(":")
    if not sep or not name or choice not in CONTAINERD_BINARIES:
        raise argparse.ArgumentTypeError("expected NAME:%s, e.g. worker-0:trixie" % "|".join(CONTAINERD_BINARIES))
    return name, choice


def _size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def main(argv: Sequence[str] | None = None) -> int:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", help="lab directory (default: $%s or <repo>/.lab)" % ENV_DIR)
    parser = argparse.ArgumentParser(prog="lab.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", parents=[common], help="start the lab (a running lab is only printed)")
    up.add_argument("--nodes", type=int, default=2, help="containerd nodes (default 2)")
    up.add_argument("--control-plane", type=int, help="the first K nodes are cp-i, the rest worker-i (default 1)")
    up.add_argument(
        "--tmpfs-node",
        type=_tmpfs_arg,
        action="append",
        default=[],
        metavar="NAME:SIZE",
        help="put that node's containerd root on a tmpfs of SIZE (e.g. worker-0:64M); repeatable",
    )
    up.add_argument(
        "--containerd-node",
        type=_containerd_arg,
        action="append",
        default=[],
        metavar="NAME:BINARY",
        help="run that node with containerd BINARY: system (Debian 12's 1.6) or trixie (1.7); repeatable",
    )
    up.add_argument("--bulk", type=int, default=0, metavar="N", help="also push N small distinct images")
    up.add_argument("--bulk-size", type=_size_arg, default=64 * KIB, metavar="SIZE", help="bulk layer size (64K)")
    up.add_argument("--seed", type=int, default=0, help="seed of the image content (default 0)")
    up.add_argument("--json", action="store_true", help="print the state as JSON")
    down = commands.add_parser("down", parents=[common], help="stop everything and remove the directory")
    down.add_argument("--keep", action="store_true", help="keep the directory (logs, registry data)")
    status = commands.add_parser("status", parents=[common], help="print the lab; exit 1 unless it runs")
    status.add_argument("--json", action="store_true", help="print the state as JSON")
    commands.add_parser("env", parents=[common], help='print shell exports: eval "$(hack/lab.py env)"')
    inventory = commands.add_parser("inventory", parents=[common], help="write an Ansible inventory of the nodes")
    inventory.add_argument("-o", "--output", help="file to write (default <lab>/inventory.yml; - for stdout)")
    inventory.add_argument("--python", help="ansible_python_interpreter of the nodes (default: this python)")
    args = parser.parse_args(argv)

    try:
        lab = Lab(args.dir, seed=getattr(args, "seed", None))
        if args.command == "up":
            if lab.running():
                print("lab.py: already running at %s; nothing started" % lab.path, file=sys.stderr)
            result = lab.up(
                args.nodes, args.control_plane, dict(args.tmpfs_node), args.bulk, args.bulk_size,
                containerd_nodes=dict(args.containerd_node),
            )
        elif args.command == "down":
            lab.down(keep=args.keep)
            return 0
        elif not lab.state:
            print("lab.py: no lab at %s" % lab.path, file=sys.stderr)
            return 1
        elif args.command == "env":
            for key, value in lab.env().items():
                print("export %s=%s" % (key, shlex.quote(value)))
            return 0
        elif args.command == "inventory":
            if args.output == "-":
                sys.stdout.write(_to_yaml(lab.inventory(args.python)))
            else:
                print(lab.write_inventory(args.output, args.python))
            return 0
        else:
            result = lab.status()
    except LabError as exc:
        print("lab.py: error: %s" % exc, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        _print_human(result)
    return 0 if result["running"] else 1


if __name__ == "__main__":
    sys.exit(main())
