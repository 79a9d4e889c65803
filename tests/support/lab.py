# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab of ``hack/lab.py``: a plain registry, a login+TLS registry and containerd or CRI-O "nodes" on this machine.

Everything lives under one directory (default ``<repo>/.lab``, ``$PINNED_IMAGES_LAB_DIR`` or the ``path`` given);
nothing is written to system paths. See hack/README.md. Tests use the ``Lab`` class directly.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import yaml

from support.errors import LabError
from support.images import (
    HOST_PLATFORM,
    KIB,
    MIB,
    MULTIARCH_PLATFORMS,
    OCI_INDEX,
    OCI_MANIFEST,
    PAUSE_COMMAND,
    ImageRecord,
    canonical,
    layer_blob,
    platform_fields,
    push_busybox_image,
    push_lab_image,
    push_release_manifest,
    release_layer,
    sha256,
)
from support.node import (
    CRIO_POLICY,
    DEFAULT_RUNTIME,
    LAB_LAYOUTS,
    MAX_SOCKET_PATH,
    NODE_NAME,
    REPO,
    RUNTIMES,
    cgroup_parent,
    check_tmpfs_size,
    containerd_config,
    cri_ready,
    crio_argv,
    crio_binaries,
    crio_config,
    crio_registries_conf,
    delete_containers,
    host_file,
    hosts_toml,
    layout_argv,
    node_names,
    remove_cgroup,
    remove_sockets,
    runtime_binary,
    runtime_choices,
    shim_sockets,
)
from support.pki import make_pki
from support.ports import free_ports
from support.processes import (
    READY_TIMEOUT,
    Supervisor,
    lab_processes,
    mounts_under,
    owns,
    run,
    signal_process,
    unmount,
    write_file,
)
from support.push import PushClient
from support.registry import registry_config, registry_status, write_htpasswd, write_registry_config

DEFAULT_DIR = REPO / ".lab"
# What CRI-O logs once a SIGHUP's reload is applied.
CRIO_RELOADED = "Configuration reload completed"
ENV_DIR = "PINNED_IMAGES_LAB_DIR"
# Marks a directory as a lab's: `down` refuses to empty any other.
MARKER = ".pinned-images-lab"
STATE_VERSION = 1


class Lab(Supervisor):
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
        write_file(self.state_file, json.dumps(self.state, indent=2, sort_keys=True) + "\n")

    def running(self) -> bool:
        """A finished `up` whose registries and nodes are all alive."""
        state = self.state
        return bool(state.get("ready")) and all(
            owns(entry.get("pid"), entry["config"])
            for entry in [*state.get("registries", {}).values(), *state.get("nodes", {}).values()]
        )

    def status(self) -> dict[str, Any]:
        """The state plus ``running`` flags for the lab, each registry and each node."""
        status = copy.deepcopy(self.state)
        for entry in [*status.get("registries", {}).values(), *status.get("nodes", {}).values()]:
            entry["running"] = owns(entry.get("pid"), entry["config"])
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

    def inventory(self, python: str | None = None, nodes: Sequence[str] | None = None) -> dict[str, Any]:
        """An Ansible inventory of the nodes (``inventory`` command), or of ``nodes`` only (a test's own, whatever
        other tests added to the session's lab); makes each node's drop-in directory.

        Every node is a host with the local connection (the nodes are processes on this machine), its own CRI
        socket, and its own CRI-O drop-in path and prefetch progress file under the lab directory, so the
        ``pinned.images.node`` role can run on all of them at once. Groups: ``control_plane`` and ``workers``.
        CRI-O nodes pin as a real one does (``node_pin: auto``): through the drop-in in their ``--config-dir``,
        reloaded by SIGHUP to the pid in their pid file (there is no systemd here), their pulls guarded with their
        own registries.conf; containerd 1.7 and 2.1 nodes with the image label (``node_pin: auto`` too). On
        containerd 1.6, which cannot pin, the drop-in is forced on (``node_pin: true``) and nothing is reloaded, so
        the tests see the text CRI-O would read; a run with ``node_pin: auto`` gets the reason instead. Pulls
        authenticate with the lab's docker config; the lab runs as root already, so nothing becomes root
        (``ansible_become``). Control-plane nodes pace their pulls by the latency of their own directory's disk,
        with a bound of 1 s.
        """
        if not self.state.get("nodes"):
            raise LabError("no lab at %s" % self.path)
        groups: dict[str, dict[str, Any]] = {"control_plane": {}, "workers": {}}
        for name, node in self.state["nodes"].items():
            if nodes is not None and name not in nodes:
                continue
            base = Path(node["root"]).parent
            dropin_dir = Path(node.get("dropin_dir") or base / "crio.conf.d")
            dropin_dir.mkdir(parents=True, exist_ok=True)
            group = "control_plane" if node["role"] == "control-plane" else "workers"
            host = groups[group][name] = {
                "node_cri_socket": node["endpoint"],
                "node_dropin_path": str(dropin_dir / "50-pinned-images"),
                "node_progress_file": str(base / "prefetch-progress.json"),
                # Each node's own lock and record, never the machine's /var/lib/pinned-images/state.
                "node_state_dir": str(base / "state"),
                "node_pull_secret_path": str(base / "pull-secret.json"),
                # The pace of a control-plane node probes the node's own directory, never the machine's etcd.
                "node_pace_path": str(base),
            }
            if node.get("pid_file"):
                host.update(
                    node_crio_reload="signal",
                    node_crio_pid_file=node["pid_file"],
                    node_prefetch_options={"registries_conf": node["registries_conf"]},
                )
            if RUNTIMES[node["runtime"]].pins:
                host["node_pin"] = "auto"
        return {
            "all": {
                "vars": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": python or sys.executable,
                    "ansible_become": False,
                    "node_auth_file": self.state["registries"]["auth"]["docker_config"],
                    "node_pin": "true",
                    "node_crio_reload": "none",
                    # This machine's disk is shared with whatever else runs on it: a bound its latency does not
                    # reach keeps the pace on (samples, report, waits) without waiting on other work.
                    # tests/functional/test_pace_lab.py makes the latency high on purpose.
                    "node_pace_bound_ms": 1000,
                    # The lab's own private Python directory: never the machine's (/var/lib/pinned-images/python,
                    # which a node_deps run on this machine creates and whose protobuf may not match the venv's).
                    "node_python_deps_dir": str(self.path / "python"),
                },
                "children": {group: {"hosts": hosts} for group, hosts in groups.items()},
            }
        }

    def inventory_yaml(self, python: str | None = None, nodes: Sequence[str] | None = None) -> str:
        """:meth:`inventory` as YAML."""
        return yaml.safe_dump(self.inventory(python, nodes), default_flow_style=False, sort_keys=False)

    def write_inventory(
        self, path: str | os.PathLike[str] | None = None, python: str | None = None, nodes: Sequence[str] | None = None
    ) -> Path:
        """Write :meth:`inventory` (of ``nodes`` only, when given) as YAML to `path` (default
        ``<lab>/inventory.yml``); return the path."""
        target = Path(path) if path else self.path / "inventory.yml"
        header = "# Ansible inventory of the pinned.images lab at %s (hack/lab.py inventory)\n" % self.path
        write_file(target, header + self.inventory_yaml(python, nodes))
        return target

    # ---- up / down ---------------------------------------------------------------------------------------

    def up(
        self,
        nodes: int = 2,
        control_plane: int | None = None,
        tmpfs_nodes: Mapping[str, str] | None = None,
        bulk: int = 0,
        bulk_size: int = 64 * KIB,
        runtimes: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Start registries, nodes and the default images; a running lab is left alone and returned.

        `tmpfs_nodes` maps node names to a tmpfs size ("64M") for their runtime's root; `runtimes` maps node names
        to a key of RUNTIMES (default "containerd-1.6").
        """
        if self.running():
            return self.status()
        names = node_names(nodes, control_plane)
        tmpfs = dict(tmpfs_nodes or {})
        unknown = sorted(set(tmpfs) - set(names))
        if unknown:
            raise LabError("--tmpfs-node names no node: %s (nodes: %s)" % (", ".join(unknown), ", ".join(names)))
        for size in tmpfs.values():
            check_tmpfs_size(size)
        binaries = runtime_choices(runtimes, names)
        started = time.monotonic()
        self._reset()
        try:
            plain_port, auth_port, *stream_ports = free_ports(2 + len(names))
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
            make_pki(self.path / "pki", prefix="pinned.images lab")
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
        # Workload nodes' containers first: they outlive their runtime, shims and conmons.
        node_dirs = sorted(self.path.glob("nodes/*"))
        sockets = [socket for base in node_dirs for socket in shim_sockets(base)]
        # A node whose runc state cannot be listed must not stop the rest of down: raised at the end.
        problems = []
        for base in node_dirs:
            try:
                delete_containers(base)
            except LabError as err:
                problems.append(str(err))
        # Only children not yet reaped: a reaped child's pid may already belong to someone else.
        self._kill(lab_processes(self.path) + [p.pid for p in self._children.values() if p.poll() is None])
        self._children.clear()
        remove_sockets(sockets)
        for base in node_dirs:
            remove_cgroup(cgroup_parent(base))
        for point in mounts_under(self.path):
            unmount(point)
        if keep:
            if self.state:
                for entry in [*self.state["registries"].values(), *self.state["nodes"].values()]:
                    entry["pid"] = None
                self.state["ready"] = False
                self._save()
        else:
            shutil.rmtree(self.path, ignore_errors=not self.path.exists())
            self.state = {}
        if problems:
            raise LabError("down finished, but: " + "; ".join(problems))

    def _reset(self) -> None:
        """Clear whatever a killed or half-finished run left: processes, mounts, sockets, files."""
        self.down()
        self.path.mkdir(parents=True, exist_ok=True)
        write_file(self.path / MARKER, "pinned.images lab; `python hack/lab.py down` removes this directory\n")
        (self.path / "logs").mkdir()

    def _is_ready(self, entry: dict[str, Any]) -> bool:
        if "socket" in entry:
            return cri_ready(entry)
        try:
            return registry_status(entry["host"], entry["ca"]) in (200, 401)
        except OSError:
            return False

    # ---- registries --------------------------------------------------------------------------------------

    def _configure_registry(self, name: str, port: int) -> None:
        base = self.path / "registries" / name
        base.mkdir(parents=True)
        host = "127.0.0.1:%d" % port
        tls = name == "auth"
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
        log = {"level": "info", "formatter": "text", "fields": {"service": "lab-registry-" + name}}
        tls_files, auth = None, None
        if tls:
            pki = self.path / "pki"
            tls_files = {"certificate": str(pki / "server.crt"), "key": str(pki / "server.key")}
            auth = {"htpasswd": {"realm": "pinned.images lab", "path": str(base / "htpasswd")}}
            entry.update(self._make_credentials(host, base / "htpasswd"))
            entry["ca"] = str(pki / "ca.crt")
        config = registry_config(entry["data"], host, tls=tls_files, auth=auth, log=log)
        entry["argv"] = write_registry_config(entry["config"], config)
        self.state["registries"][name] = entry

    def _make_credentials(self, host: str, htpasswd: Path) -> dict[str, Any]:
        auth = self.path / "auth"
        auth.mkdir(mode=0o700)
        username, password = "lab-" + secrets.token_hex(3), secrets.token_urlsafe(18)
        try:
            write_htpasswd(htpasswd, username, password)
        except ImportError as exc:
            raise LabError("the lab needs the 'bcrypt' package: run it with .venv/bin/python") from exc
        write_file(auth / "credentials.json", json.dumps({"username": username, "password": password}) + "\n", 0o600)
        for file_name, secret in (("config.json", password), ("bad-config.json", password + "-wrong")):
            token = base64.b64encode(("%s:%s" % (username, secret)).encode()).decode()
            write_file(auth / file_name, json.dumps({"auths": {host: {"auth": token}}}, indent=2) + "\n", 0o600)
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
        if owns(entry.get("pid"), entry["config"]):
            self._kill([entry["pid"]])
        entry["pid"] = None
        self._save()

    def start_registry(self, name: str) -> None:
        entry = self.state["registries"][name]
        if owns(entry.get("pid"), entry["config"]):
            return
        self._launch(entry, entry["name"])
        self._save()
        self._wait_ready([entry])

    # ---- nodes -------------------------------------------------------------------------------------------

    def _configure_node(
        self,
        name: str,
        stream_port: int,
        tmpfs_size: str | None,
        runtime: str = DEFAULT_RUNTIME,
        config_path: str | None = None,
        workloads: bool = False,
        snapshotter: str = "native",
    ) -> dict[str, Any]:
        if not NODE_NAME.match(name):
            raise LabError("bad node name %r: lower-case letters, digits and '-'" % name)
        kind = RUNTIMES[runtime].kind
        if kind != "containerd" and snapshotter != "native":
            raise LabError("snapshotter %r is containerd's; node %s runs %s" % (snapshotter, name, runtime))
        base = self.path / "nodes" / name
        sock = base / ("crio.sock" if kind == "cri-o" else "containerd.sock")
        if len(str(sock) + ".ttrpc") > MAX_SOCKET_PATH:
            raise LabError("socket path %s is too long for a unix socket; use a shorter --dir" % sock)
        for sub in ("root", "state", "tmp", "opt", "certs.d"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        if tmpfs_size:
            run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % tmpfs_size, "lab-" + name, base / "root"])
        (self.path / "cni" / "bin").mkdir(parents=True, exist_ok=True)
        (self.path / "cni" / "net.d").mkdir(parents=True, exist_ok=True)
        entry: dict[str, Any] = {
            "name": name,
            "role": "control-plane" if name.startswith("cp-") else "worker",
            "runtime": runtime,
            "socket": str(sock),
            "endpoint": "unix://%s" % sock,
            "root": str(base / "root"),
            "state": str(base / "state"),
            "stream_port": stream_port,
            "tmpfs": tmpfs_size,
        }
        # Only a workload node names a pause image: CRI reports it pinned once a sandbox has pulled it.
        pause = self.workload_images()["pause"].tag_reference if workloads else None
        if workloads:
            entry.update(workloads=True, pause_image=pause, pods=str(base / "pods"), cgroup_parent=cgroup_parent(base))
        if kind == "cri-o":
            binaries = crio_binaries()
            entry.update(
                config=str(base / "crio.conf"),
                dropin_dir=str(base / "crio.conf.d"),
                registries_conf=str(base / "registries.conf"),
                policy=str(base / "policy.json"),
                pid_file=str(base / "crio.pid"),
                global_auth_file=str(base / "kubelet-config.json"),
            )
            auth = self.state["registries"]["auth"]["docker_config"]
            write_file(Path(entry["global_auth_file"]), Path(auth).read_text(), 0o600)
            Path(entry["dropin_dir"]).mkdir(exist_ok=True)
            write_file(
                Path(entry["config"]),
                crio_config(base, sock, stream_port, self.path / "cni", binaries["pinns"], pause),
            )
            write_file(Path(entry["registries_conf"]), crio_registries_conf(list(self.state["registries"].values())))
            write_file(Path(entry["policy"]), CRIO_POLICY)
            entry["argv"] = crio_argv(binaries["crio"], entry)
        else:
            self._write_hosts(base / "certs.d")
            version = 3 if RUNTIMES[runtime].version.startswith("2.") else 2
            entry.update(config=str(base / "config.toml"), certs_d=config_path or str(base / "certs.d"))
            write_file(
                base / "config.toml",
                containerd_config(base, sock, stream_port, self.path / "cni", version, config_path, pause, snapshotter),
            )
            entry["argv"] = [runtime_binary(runtime), "--config", entry["config"]]
        self.state["nodes"][name] = entry
        return entry

    def runtime_node(self, runtime: str) -> dict[str, Any]:
        """The node ``rt-<runtime>`` (dots dropped) of a key of RUNTIMES, added to the running lab on first use:
        tests of one runtime share it."""
        name = "rt-" + runtime.replace(".", "")
        return self.state["nodes"].get(name) or self.add_node(name, runtime=runtime)

    def layout_node(self, layout: str) -> dict[str, Any]:
        """The node ``ly-<layout>`` (a key of LAB_LAYOUTS: k3s, rke2, microk8s), added on first use: containerd 2.1
        with the layout's socket, config file (the lab's settings at the layout's paths), hosts directory (a
        hosts.toml per lab registry, the CA copied in) and flags, in a host root of its own (``host_root``: its
        state entry's ``host_root``, with ``proc`` linked to this machine's /proc). Tests of one layout share it."""
        name = "ly-" + layout
        if name in self.state.get("nodes", {}):
            return self.state["nodes"][name]
        if not self.running():
            raise LabError("the lab at %s is not running" % self.path)
        if layout not in LAB_LAYOUTS:
            raise LabError("unknown layout %r: use one of %s" % (layout, ", ".join(LAB_LAYOUTS)))
        spec = LAB_LAYOUTS[layout]
        base = self.path / "nodes" / name
        host = base / "h"
        socket = host_file(host, spec.socket)
        if len(str(socket)) > MAX_SOCKET_PATH:
            raise LabError("socket path %s is too long for a unix socket; use a shorter --dir" % socket)
        for directory in ("run", "var/lib", "etc"):
            (host / directory).mkdir(parents=True, exist_ok=True)
        # As on Debian and every systemd host; /proc is this machine's, where the layout's containerd runs.
        for link, target in (("var/run", "/run"), ("proc", "/proc"), *[(p.lstrip("/"), t) for p, t in spec.links]):
            (host / link).parent.mkdir(parents=True, exist_ok=True)
            if not (host / link).is_symlink():
                os.symlink(target, host / link)
        for path, text in spec.extra_files:
            write_file(host_file(host, path), text)
        self._write_layout_hosts(host, spec.hosts_dir)
        port = free_ports(1)[0]
        config = containerd_config(Path(spec.root), Path(spec.socket), port, self.path / "cni", 3, spec.hosts_dir)
        write_file(host_file(host, spec.config), spec.header + config)
        entry: dict[str, Any] = {
            "name": name,
            "role": "worker",
            "runtime": "containerd-2.1",
            "layout": layout,
            "host_root": str(host),
            "socket": str(socket),
            "endpoint": "unix://%s" % socket,
            "root": str(host_file(host, spec.root)),
            "state": str(host_file(host, spec.state)),
            "stream_port": port,
            "tmpfs": None,
            "config": spec.config,
            "certs_d": str(host_file(host, spec.hosts_dir)),
            "dropin_dir": str(base / "crio.conf.d"),
            "argv": layout_argv(runtime_binary("containerd-2.1"), host, spec),
        }
        (self.path / "cni" / "bin").mkdir(parents=True, exist_ok=True)
        (self.path / "cni" / "net.d").mkdir(parents=True, exist_ok=True)
        self.state["nodes"][name] = entry
        self._launch(entry, "node-" + name)
        self._save()
        try:
            self._wait_ready([entry])
        except LabError:
            self._kill([entry["pid"]])
            del self.state["nodes"][name]
            self._save()
            raise
        return entry

    def _write_layout_hosts(self, host: Path, hosts_dir: str) -> None:
        """A hosts.toml per lab registry in the layout's hosts directory, the CA copied beside it and named by its
        host path (as k3s writes them from registries.yaml)."""
        for entry in self.state["registries"].values():
            directory = hosts_dir + "/" + entry["host"]
            ca = None
            if entry["ca"]:
                ca = directory + "/ca.crt"
                write_file(host_file(host, ca), Path(entry["ca"]).read_text())
            write_file(host_file(host, directory + "/hosts.toml"), hosts_toml(entry["url"], ca))

    def workload_node(self, runtime: str) -> dict[str, Any]:
        """The workload node ``wl-<runtime>`` (dots dropped; see ``add_node``'s ``workloads``) of a key of
        RUNTIMES, added on first use: tests of one runtime share it."""
        name = "wl-" + runtime.replace(".", "")
        return self.state["nodes"].get(name) or self.add_node(name, runtime=runtime, workloads=True)

    def workload_images(self) -> dict[str, ImageRecord]:
        """{"pause": the workload nodes' pause image, "busybox": a runnable image}, both busybox images in the
        plain registry (``lab/pause:v1``, ``lab/busybox:v1``), pushed on first use. ``push_runnable_image``
        makes more."""
        images = self.images()
        if "plain-pause" not in images:
            self.push_runnable_image("lab/pause", cmd=PAUSE_COMMAND, name="plain-pause")
        if "plain-busybox" not in images:
            self.push_runnable_image("lab/busybox", name="plain-busybox")
        images = self.images()
        return {"pause": images["plain-pause"], "busybox": images["plain-busybox"]}

    def push_runnable_image(
        self,
        repo: str,
        tag: str = "v1",
        cmd: Sequence[str] = ("/bin/sleep", "2147483647"),
        registry: str = "plain",
        name: str | None = None,
    ) -> ImageRecord:
        """Push a busybox image (sh, sleep, true, kill in /bin) whose default command is ``cmd``; each repo and
        tag has its own layer, hence its own image id. Recorded in the state under ``name`` (default
        "<registry>/<repo>:<tag>")."""
        client = self._client(registry)
        try:
            record = push_busybox_image(
                client, client.host, registry, repo, tag, cmd, name or "%s/%s:%s" % (registry, repo, tag)
            )
        finally:
            client.close()
        self.state["images"][record.name] = asdict(record)
        self._save()
        return record

    def add_http_registry(self, name: str, host: str) -> None:
        """Let node ``name`` pull from the plain-HTTP registry at ``host`` (a test's proxy): a hosts.toml for
        containerd (re-read on every pull), a registries.conf entry for CRI-O, which SIGHUP makes it read."""
        entry = self._node(name)
        if entry.get("registries_conf"):
            conf = Path(entry["registries_conf"])
            write_file(conf, conf.read_text() + "\n[[registry]]\nlocation = %s\ninsecure = true\n" % json.dumps(host))
            self.reload_node(name)
        else:
            write_file(Path(entry["certs_d"]) / host / "hosts.toml", hosts_toml("http://" + host, None))

    def reload_node(self, name: str) -> None:
        """SIGHUP to a CRI-O node (as ``systemctl reload crio``), and wait until it has re-read its drop-ins and
        registries.conf."""
        entry = self._node(name)
        if not entry.get("pid_file") or not owns(entry["pid"], entry["config"]):
            raise LabError("%s is not a running CRI-O node" % name)
        done = self.reloads(name, CRIO_RELOADED)
        deadline = time.monotonic() + READY_TIMEOUT
        while self.reloads(name, CRIO_RELOADED) == done:
            if time.monotonic() > deadline:
                raise LabError("%s did not reload within %ds; log %s" % (name, READY_TIMEOUT, entry["log"]))
            # Again every second: a SIGHUP that comes while a reload runs is merged into it.
            os.kill(entry["pid"], signal.SIGHUP)
            resend = time.monotonic() + 1
            while self.reloads(name, CRIO_RELOADED) == done and time.monotonic() < resend:
                time.sleep(0.02)

    def reloads(self, name: str, line: str = "Reloading configuration") -> int:
        """How often a CRI-O node's log says ``line``: by default, how many SIGHUPs it took."""
        try:
            return Path(self._node(name)["log"]).read_text(errors="replace").count(line)
        except OSError:
            return 0

    def _write_hosts(self, certs_d: Path) -> None:
        # containerd re-reads these on every pull, so a test may edit a node's copy (e.g. to add a mirror).
        for entry in self.state["registries"].values():
            write_file(certs_d / entry["host"] / "hosts.toml", hosts_toml(entry["url"], entry["ca"]))

    def add_node(
        self,
        name: str,
        tmpfs_size: str | None = None,
        runtime: str = DEFAULT_RUNTIME,
        config_path: str | None = None,
        workloads: bool = False,
        snapshotter: str = "native",
    ) -> dict[str, Any]:
        """Start one more node (running `runtime`, a key of RUNTIMES) on the running lab; returns its state
        entry. ``config_path`` (containerd): the node's registry hosts directory (or ``:``-separated list) instead
        of its own ``certs.d``. ``workloads``: the node runs pod sandboxes and containers (support.cri_workloads)
        with the lab's pause image (``workload_images``) and runc, every runc and pod log path its own.
        ``snapshotter`` (containerd): "native" or "overlayfs" (support.node.containerd_config)."""
        if not self.running():
            raise LabError("the lab at %s is not running" % self.path)
        if name in self.state["nodes"]:
            raise LabError("node %s exists" % name)
        if tmpfs_size:
            check_tmpfs_size(tmpfs_size)
        runtime_binary(runtime)
        entry = self._configure_node(name, free_ports(1)[0], tmpfs_size, runtime, config_path, workloads, snapshotter)
        self._launch(entry, "node-" + name)
        self._save()
        try:
            self._wait_ready([entry])
        except LabError:
            # Undo it whole, so the lab still counts as running and a retry with the same name works.
            self._kill([entry["pid"]])
            for point in mounts_under(Path(entry["root"])):
                unmount(point)
            del self.state["nodes"][name]
            self._save()
            raise
        return entry

    def restart_node(self, name: str) -> dict[str, Any]:
        """Stop a node's runtime and start it again on the same root (its images, labels and drop-ins stay)."""
        self.stop_node(name)
        return self.start_node(name)

    def stop_node(self, name: str, kill: bool = False) -> None:
        """Stop a node's runtime (SIGTERM, then SIGKILL); ``kill`` sends SIGKILL at once, as a crash would."""
        entry = self._node(name)
        if owns(entry["pid"], entry["config"]):
            if kill:
                signal_process(entry["pid"], signal.SIGKILL)
            self._kill([entry["pid"]])
        entry["pid"] = None
        self._save()

    def start_node(self, name: str) -> dict[str, Any]:
        """Start a stopped node's runtime again on the same root; a running one is left alone."""
        entry = self._node(name)
        if not owns(entry["pid"], entry["config"]):
            self._launch(entry, "node-" + name)
            self._save()
            self._wait_ready([entry])
        return entry

    def _node(self, name: str) -> dict[str, Any]:
        if name not in self.state.get("nodes", {}):
            raise LabError("no node %s (nodes: %s)" % (name, ", ".join(self.state.get("nodes", {})) or "none"))
        return self.state["nodes"][name]

    # ---- images ------------------------------------------------------------------------------------------

    def _client(self, registry: str) -> PushClient:
        entry = self.state["registries"][registry]
        return PushClient(entry["host"], ca=entry["ca"], basic=self.credentials() if entry["tls"] else None)

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
            record = push_lab_image(
                client, self.seed, client.host, registry, repo, tag, layer_sizes, shared_layers or {}, platforms, name
            )
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
        clients: list[PushClient] = []

        def push(index: int) -> ImageRecord:
            if not hasattr(local, "client"):
                local.client = self._client(registry)
                clients.append(local.client)
            repo = "%s/img-%04d" % (prefix, index)
            return push_lab_image(
                local.client,
                self.seed,
                local.client.host,
                registry,
                repo,
                "v1",
                [size],
                {},
                None,
                "%s-%04d" % (prefix, index),
            )

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
                other, _diff_id = layer_blob("%d:%s:%s:unrelated" % (self.seed, plat, repo), unrelated)
                layer = release_layer(listed, version, padding, "%d:%s:%s" % (self.seed, plat, version))
                layer_size = len(layer)
                manifests[plat], bodies[plat] = push_release_manifest(
                    client, repo, plat, version, [other, layer], labelled
                )
            if platforms:
                index = canonical(
                    {
                        "schemaVersion": 2,
                        "mediaType": OCI_INDEX,
                        "manifests": [
                            {
                                "mediaType": OCI_MANIFEST,
                                "digest": manifests[p],
                                "size": len(bodies[p]),
                                "platform": platform_fields(p),
                            }
                            for p in platforms
                        ],
                    }
                )
                client.push_manifest(repo, tag, index, OCI_INDEX)
                digest = sha256(index)
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


@contextlib.contextmanager
def started_lab(path: str | os.PathLike[str], **up_args: Any) -> Iterator[Lab]:
    """A lab brought up in `path` with `up_args` (see :meth:`Lab.up`), and down again however the block ends."""
    lab = Lab(path)
    lab.up(**up_args)
    try:
        yield lab
    finally:
        lab.down()
