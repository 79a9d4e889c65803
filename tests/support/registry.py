# SPDX-License-Identifier: GPL-3.0-or-later
"""The one docker-registry launcher: its configuration, its command line, an in-process start for tests (the lab
supervises the same command line itself, see ``support.lab``), a readiness probe and the htpasswd file."""

from __future__ import annotations

import base64
import http.client
import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.ports import free_port

START_TIMEOUT = 15.0


def registry_binary() -> str:
    """``$DOCKER_REGISTRY_BINARY``, else docker-registry from PATH (Debian's package)."""
    return os.environ.get("DOCKER_REGISTRY_BINARY") or shutil.which("docker-registry") or "/usr/bin/docker-registry"


def registry_config(
    data_dir: str,
    addr: str,
    *,
    tls: dict[str, str] | None = None,
    auth: dict[str, Any] | None = None,
    log: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A docker-registry configuration serving ``data_dir`` on ``addr``.

    ``tls``: ``certificate``, ``key`` and optionally ``clientcas`` (a CA that client certificates must chain to);
    ``auth``: the registry's ``auth`` section as is (``{"htpasswd": {...}}`` or ``{"token": {...}}``); ``log``: its
    ``log`` section (default: errors only, no access log).
    """
    config: dict[str, Any] = {
        "version": "0.1",
        "log": log or {"level": "error", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": data_dir},
            "delete": {"enabled": True},
            "cache": {"blobdescriptor": "inmemory"},
            # The purger only logs noise in registries that live minutes.
            "maintenance": {"uploadpurging": {"enabled": False}},
        },
        "http": {"addr": addr, "secret": secrets.token_hex(16)},
    }
    if tls:
        config["http"]["tls"] = {"certificate": tls["certificate"], "key": tls["key"]}
        if tls.get("clientcas"):
            config["http"]["tls"]["clientcas"] = [tls["clientcas"]]
    if auth:
        config["auth"] = auth
    return config


def write_registry_config(path: str | os.PathLike[str], config: dict[str, Any]) -> list[str]:
    """Write ``config`` to ``path`` (0600: it holds the HTTP secret); return the registry's command line."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        # JSON is YAML, so no YAML library is needed.
        handle.write(json.dumps(config, indent=2) + "\n")
    return [registry_binary(), "serve", str(path)]


def write_htpasswd(path: str | os.PathLike[str], user: str, password: str) -> None:
    """An htpasswd file (0600) with one user."""
    import bcrypt  # the registry's htpasswd accepts bcrypt only; imported here: only registries with a login need it

    # Cost 5: the registry checks the hash on every request, so a high cost slows every pull.
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(user.encode() + b":" + hashed + b"\n")


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


@dataclass
class RegistryProcess:
    """A registry started by ``start_registry``."""

    name: str  # 127.0.0.1:port, as image references name it
    scheme: str
    process: subprocess.Popen
    log_path: str

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_registry(
    directory: str, *, tls: dict[str, str] | None = None, auth: dict[str, Any] | None = None, access_log: bool = False
) -> RegistryProcess:
    """Start docker-registry on a free port with its storage, configuration and log under ``directory``; return
    once it listens. ``tls`` and ``auth`` as in ``registry_config``; ``access_log`` writes one line per request
    (method, path, status, user agent) to the log."""
    os.makedirs(directory, exist_ok=True)
    port = free_port()
    log = {"level": "error", "accesslog": {"disabled": False}} if access_log else None
    config = registry_config(os.path.join(directory, "data"), "127.0.0.1:%d" % port, tls=tls, auth=auth, log=log)
    argv = write_registry_config(Path(directory) / "config.yml", config)
    log_path = os.path.join(directory, "registry.log")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    registry = RegistryProcess("127.0.0.1:%d" % port, "https" if tls else "http", process, log_path)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            with open(log_path) as handle:
                raise RuntimeError("docker-registry exited %d: %s" % (process.returncode, handle.read()[-2000:]))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return registry
        except OSError:
            if time.monotonic() > deadline:
                registry.stop()
                raise RuntimeError("docker-registry did not listen on %s" % registry.name) from None
            time.sleep(0.05)
