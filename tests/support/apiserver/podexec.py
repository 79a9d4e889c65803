# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""``pods/exec`` of the fake API server: the command runs on this machine, as the pod's process would.

``GET`` or ``POST /api/v1/namespaces/<ns>/pods/<name>/exec?command=..&command=..&container=..&stdin=..&stdout=..
&stderr=..&tty=..`` with a WebSocket upgrade (``support.websocket``) and subprotocol ``v5.channel.k8s.io`` (kubectl
1.30+) or ``v4.channel.k8s.io`` (older clients; the first the client offers wins, as in apimachinery's wsstream).
Messages are binary, the first byte the channel: 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize (ignored); v5 adds
the CLOSE signal ``[255, channel]`` (client-go ``remotecommand`` websocket.go ``stream.Close``), which ends the
process's stdin; on v4 stdin ends when the client closes the connection. Stdin is streamed to the process as it
comes (several MB work). When the process has ended and its stdout and stderr are drained, channel 3 carries the v1
``Status`` the container runtime's streaming server writes (kubelet's cri/streaming/remotecommand, vendored by
containerd and CRI-O): ``{"metadata": {}, "status": "Success"}``, or ``Failure``/``NonZeroExitCode`` with
``details.causes [{reason: ExitCode, message: "<n>"}]`` and message ``command terminated with non-zero exit code:
%v`` of the runtime's ``error executing command %v, exit code %d`` (argv as Go prints a slice: ``[sh -c exit 3]``);
then a close frame (1000). Pings are answered (kubectl pings every 5 s and gives up without a pong). A command that
cannot be started gives the ``InternalError`` (500) status of containerd's ``... exec: "<argv0>": executable file
not found in $PATH: unknown`` (kubectl prints it and exits 1). ``tty=true`` runs without a terminal.
If the client goes away first, the process is killed; so is any still running when its pod goes (as the kubelet
kills the container: the exec ends with exit code 137) or when the server stops.

Refusals, in the order kube-apiserver checks them (pkg/registry/core/pod/strategy.go ``streamLocation``, then the
kubelet): 401 without credentials; 403 when ``server.forbid("create", "pods/exec")`` (the verb for GET and POST
since ``AuthorizePodWebsocketUpgradeCreatePermission``, default on in 1.31): ``pods "<name>" is forbidden: User
"<user>" cannot create resource "pods/exec" in API group "" in the namespace "<ns>"``; 404 ``pods "<name>" not
found``; 400 ``container <c> is not valid for pod <name>`` and ``a container name must be specified for pod
<name>, choose one of: [a b]``; 400 ``pod <name> does not have a host assigned``; the kubelet's plain-text 500
``container not found ("<c>")`` when the container is not running (kubectl: ``error: unable to upgrade connection:
container not found ("c")``). A request without an upgrade gets 400 ``Upgrade request required``. SPDY/3.1 (what
kubectl falls back to when the WebSocket upgrade fails) gets the same refusals, but is not served beyond them: 400
``SPDY/3.1 is not served by the fake API server (WebSocket only)``; ``requests[i].upgrade`` records which a client
used. (``container not found`` is the kubelet's ``GetExec`` error when it finds no running container; the
unscheduled-pod message is the one kubectl users report: ``Error from server (BadRequest): pod x does not have a
host assigned``.)

The command is ``behaviour.exec_prefix + command`` with ``behaviour.env`` (default ``PATH`` and ``HOME``) in
``behaviour.cwd`` (default ``/``), from the pod's :class:`~support.apiserver.pods.PodBehaviour`.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import socket
import subprocess
import threading

from support.apiserver.pods import exec_environment
from support.apiserver.schema import ApiError, RecordedRequest
from support.websocket import BINARY, ServerWebSocket

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE_SIGNAL = 0, 1, 2, 3, 4, 255
_TRUE = ("1", "t", "T", "TRUE", "true", "True")


def _plain(handler, status, text):
    data = text.encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "text/plain; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _check(api, user, namespace, name, container):
    """The pod, its behaviour and the container, or ApiError / (status, text) as the server and kubelet refuse."""
    api.pods.authorize(user, "create", "pods/exec", namespace, name)
    pod = api.pods.objects.get((namespace, name))
    if pod is None:
        raise api.pods.not_found(name)
    containers = [c["name"] for c in pod["spec"].get("containers") or []]
    if not container:
        if len(containers) != 1:
            raise ApiError(
                400,
                "BadRequest",
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]",
            )
        container = containers[0]
    elif container not in containers + [c["name"] for c in pod["spec"].get("initContainers") or []]:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
    if not pod["spec"].get("nodeName"):
        raise ApiError(400, "BadRequest", f"pod {name} does not have a host assigned")
    statuses = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
    if "running" not in ((statuses.get(container) or {}).get("state") or {}):
        return None, f'container not found ("{container}")'
    return (pod, api.pods.behaviour_of(namespace, name), container), None


def serve_exec(handler, namespace, name, pairs):
    """Answer one exec request on ``handler`` (a ``BaseHTTPRequestHandler``); runs the session to its end."""
    api = handler.api
    query = {}
    for key, value in pairs:
        query.setdefault(key, []).append(value)
    flat = {k: v[-1] for k, v in query.items()}
    upgrade = (handler.headers.get("Upgrade") or "").strip()
    offered = [p.strip() for p in (handler.headers.get("Sec-WebSocket-Protocol") or "").split(",") if p.strip()]
    record = RecordedRequest(handler.command, handler.path.split("?")[0], flat, None, None, None)
    record.upgrade = upgrade
    record.command = list(query.get("command") or [])
    record.subprotocols = offered
    user = handler._user()
    record.user = user
    handler.close_connection = True
    try:
        with api._lock:
            api.requests.append(record)
            if user is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            for hook in list(api.before_request):
                hook(record)
            target, refusal = _check(api, user, namespace, name, flat.get("container"))
            if refusal is None and not upgrade:
                raise ApiError(400, "BadRequest", "Upgrade request required")
            if refusal is None and upgrade.lower() != "websocket":
                raise ApiError(400, "BadRequest", f"{upgrade} is not served by the fake API server (WebSocket only)")
    except ApiError as exc:
        record.status = exc.code
        handler._send(exc.code, exc.status())
        return
    if refusal is not None:
        record.status = 500
        _plain(handler, 500, refusal)
        return
    chosen = next((p for p in offered if p in PROTOCOLS), None)
    key = handler.headers.get("Sec-WebSocket-Key")
    if chosen is None or not key:
        record.status = 400
        _plain(handler, 400, f"requested protocol(s) are not supported: {offered}; supports {list(PROTOCOLS)}")
        return
    record.status = 101
    record.subprotocol = chosen
    handler.send_response(101)
    for header, value in ServerWebSocket.handshake_headers(key, chosen):
        handler.send_header(header, value)
    handler.end_headers()
    handler.wfile.flush()
    pod, behaviour, _container = target
    _Session(
        handler, ServerWebSocket(handler.rfile, handler.wfile), chosen, query, behaviour, pod["metadata"]["uid"]
    ).run()


class _Session:
    def __init__(self, handler, ws, protocol, query, behaviour, pod_uid):
        self.handler, self.ws, self.protocol, self.pod_uid = handler, ws, protocol, pod_uid
        self.command = list(query.get("command") or [])
        flags = {k: (v[-1] in _TRUE) for k, v in query.items() if k in ("stdin", "stdout", "stderr")}
        self.stdin, self.stdout, self.stderr = (flags.get(k, False) for k in ("stdin", "stdout", "stderr"))
        self.behaviour = behaviour
        self.stdin_queue = queue.Queue()
        self.finished = threading.Event()
        self.closer = None

    def _send(self, channel, data):
        return self.ws.send(BINARY, bytes([channel]) + data)

    def _status(self, status):
        self._send(ERROR, json.dumps(status).encode())
        self.ws.close()
        # The client answers a close with its own; one that does not is cut off after a while.
        self.closer = threading.Timer(5, self._cut)
        self.closer.daemon = True
        self.closer.start()

    def _pump(self, pipe, channel):
        while True:
            data = os.read(pipe.fileno(), 65536)
            if not data:
                break
            self._send(channel, data)
        pipe.close()

    def _feed(self, pipe):
        try:
            while True:
                chunk = self.stdin_queue.get()
                if chunk is None:
                    break
                pipe.write(chunk)
                pipe.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            try:
                pipe.close()
            except OSError:
                pass

    def _finish(self, process, pumps):
        process.wait()
        for pump in pumps:
            pump.join()
        code = process.returncode
        if code == 0:
            self._status({"metadata": {}, "status": "Success"})
        else:
            # A signal: the runtime reports 128 + its number, as a shell does.
            code = code if code > 0 else 128 - code
            self._status(
                {
                    "metadata": {},
                    "status": "Failure",
                    "message": "command terminated with non-zero exit code: error executing command "
                    f"[{' '.join(self.command)}], exit code {code}",
                    "reason": "NonZeroExitCode",
                    "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
                }
            )
        self.finished.set()

    def run(self):
        behaviour = self.behaviour
        argv = list(behaviour.exec_prefix) + self.command
        try:
            if not self.command:
                raise FileNotFoundError("")
            process = subprocess.Popen(  # noqa: S603 - the test's own command, on the test's own machine
                argv,
                stdin=subprocess.PIPE if self.stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE if self.stdout else subprocess.DEVNULL,
                stderr=subprocess.PIPE if self.stderr else subprocess.DEVNULL,
                env=exec_environment(behaviour),
                cwd=behaviour.cwd or "/",
            )
        except OSError:
            # containerd's text for a missing executable, wrapped by the streaming server as apierrors.NewInternalError
            # of "error executing command in container: %v".
            inner = (
                "error executing command in container: failed to exec in container: failed to start exec "
                f'"{secrets.token_hex(32)}": OCI runtime exec failed: exec failed: unable to start container process: '
                f'exec: "{self.command[0] if self.command else ""}": executable file not found in $PATH: unknown'
            )
            self._status(
                {
                    "metadata": {},
                    "status": "Failure",
                    "message": f"Internal error occurred: {inner}",
                    "reason": "InternalError",
                    "details": {"causes": [{"message": inner}]},
                    "code": 500,
                }
            )
            self._drain(None)
            return
        pods = self.handler.api.pods
        with self.handler.api._lock:
            pods.processes.add(process)
            pods.pod_processes.setdefault(self.pod_uid, set()).add(process)
        try:
            self._serve(process)
        finally:
            with self.handler.api._lock:
                pods.processes.discard(process)
                pods.pod_processes.get(self.pod_uid, set()).discard(process)

    def _serve(self, process):
        pumps = []
        for pipe, channel in ((process.stdout, STDOUT), (process.stderr, STDERR)):
            if pipe is not None:
                pumps.append(threading.Thread(target=self._pump, args=(pipe, channel), daemon=True))
        feeder = None
        if process.stdin is not None:
            feeder = threading.Thread(target=self._feed, args=(process.stdin,), daemon=True)
            feeder.start()
        for pump in pumps:
            pump.start()
        threading.Thread(target=self._finish, args=(process, pumps), daemon=True).start()
        self._drain(process)
        self.stdin_queue.put(None)
        if process.poll() is None and not self.finished.is_set():
            process.kill()
        self.finished.wait(10)

    def _drain(self, process):
        """Read the client's messages until it closes (or is cut off after our close)."""
        while True:
            message = self.ws.receive()
            if message is None:
                break
            data = message[1]
            if not data:
                continue
            if data[0] == STDIN:
                self.stdin_queue.put(data[1:])
            elif data[0] == CLOSE_SIGNAL and self.protocol.startswith("v5") and data[1:2] == bytes([STDIN]):
                self.stdin_queue.put(None)
        if self.closer is not None:
            self.closer.cancel()

    def _cut(self):
        # The client did not answer our close: end the read (socket.socket.shutdown, not SSLSocket's, which unwraps).
        try:
            socket.socket.shutdown(self.handler.connection, socket.SHUT_RDWR)
        except OSError:
            pass
