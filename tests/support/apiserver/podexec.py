# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""``pods/exec`` of the fake API server: the command runs on this machine, as the pod's process would.

``GET`` or ``POST /api/v1/namespaces/<ns>/pods/<name>/exec?command=..&command=..&container=..&stdin=..&stdout=..
&stderr=..&tty=..`` with a WebSocket upgrade (``support.websocket``) and subprotocol ``v5.channel.k8s.io`` (kubectl
1.30+) or ``v4.channel.k8s.io`` (older clients; the first the client offers wins, as in apimachinery's wsstream).
Messages are binary, the first byte the channel: 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize (ignored); v5 adds
the CLOSE signal ``[255, channel]`` (client-go ``remotecommand`` websocket.go ``stream.Close``), which ends the
process's stdin; on v4 stdin ends when the client closes the connection. Right after the handshake an empty message
goes on the lowest writable channel (stdout, else stderr, else error), as the kubelet's cri/streaming websocket.go
and the API server's stream translator (apiserver util/proxy websocket.go) send it "to notify the client the
connection is established". Stdin is streamed to the process as it comes (several MB work). When the process has
ended and its stdout and stderr are drained, channel 3 carries a v1 ``Status``, then a close frame (1000).

Who writes that status depends on the subprotocol, as in kube-apiserver 1.30+ (``TranslateStreamCloseWebsocketRequests``
on by default): a v5 request ends in the API server's stream translator (apiserver util/proxy streamtranslator.go),
which goes on to the kubelet over SPDY; a v4 request is proxied to the kubelet, whose streaming server (cri/streaming
remotecommand, vendored by containerd and CRI-O) writes the status itself.

* Success: ``{"metadata": {}, "status": "Success"}``.
* Exit code n: ``Failure``/``NonZeroExitCode`` with ``details.causes [{reason: ExitCode, message: "<n>"}]``. The
  message on v4 is the runtime's ``command terminated with non-zero exit code: error executing command [sh -c exit 3],
  exit code 3`` (argv as Go prints a slice); on v5 it is the translator's ``codeExitToStatusError``, ``command
  terminated with non-zero exit code: %v`` of client-go's ``CodeExitError`` (``command terminated with exit code 3``).
* A command that cannot be started: the ``InternalError`` (500) of the runtime's ``error executing command in
  container: ...`` (containerd: ``exec: "<argv0>": executable file not found in $PATH: unknown``; for a path,
  ``stat <path>: no such file or directory``; ``permission denied``). On v5 the translator wraps it again
  (``apierrors.NewInternalError`` of the SPDY executor's error, which client-go's ``errorDecoderV4`` made of the
  status message): ``Internal error occurred: Internal error occurred: error executing command ...``.

Pings are answered (kubectl pings every 5 s and gives up without a pong). ``tty=true`` runs without a terminal. If the
client goes away first, the process is killed; so is any still running when its pod goes (as the kubelet kills the
container: the exec ends with exit code 137) or when the server stops. Each command runs in its own process group
and the whole group is killed, as the container's cgroup is.

Refusals, in the order kube-apiserver checks them (pkg/registry/core/pod/strategy.go ``streamLocation``, then the
kubelet): 401 without credentials; 403 when ``server.forbid("create", "pods/exec")`` (the verb for GET and POST
since ``AuthorizePodWebsocketUpgradeCreatePermission``, default on in 1.31): ``pods "<name>" is forbidden: User
"<user>" cannot create resource "pods/exec" in API group "" in the namespace "<ns>"``; 404 ``pods "<name>" not
found``; 400 ``container <c> is not valid for pod <name>`` and ``a container name must be specified for pod
<name>, choose one of: [a b]`` (`` or one of the init containers: [..]`` when it has some); 400 ``pod <name> does
not have a host assigned``. When the container is not running the kubelet answers a plain-text 500 ``container not
found ("<c>")`` (its ``GetExec`` error): on v4 (and SPDY) that is the answer to the upgrade; on v5 the translator
has already completed the WebSocket handshake, and writes on channel 3 the ``InternalError`` of the SPDY executor's
``unable to upgrade connection: container not found ("c")`` (kubectl 1.30+: ``error: Internal error occurred: unable
to upgrade connection: container not found ("c")``). A request without an upgrade gets 400 ``Upgrade request
required``; a method other than GET and POST 405. SPDY/3.1 (what kubectl falls back to when the WebSocket upgrade
fails) gets the same refusals, but is not served beyond them: 400 ``SPDY/3.1 is not served by the fake API server
(WebSocket only)``; ``requests[i].upgrade`` records which a client used. A WebSocket subprotocol no real server
serves gets 403 with an empty body (golang.org/x/net/websocket's answer to wsstream's handshake error); the ones the
kubelet serves but the fake does not (none, ``channel.k8s.io``, ``base64.channel.k8s.io``,
``v4.base64.channel.k8s.io``) get 400 ``subprotocol "<p>" is not served by the fake API server (v5.channel.k8s.io
and v4.channel.k8s.io only)``. (The unscheduled-pod message is the one kubectl users report: ``Error from server
(BadRequest): pod x does not have a host assigned``.)

Query values are read as apimachinery's query conversion reads them: the first of repeated values, and a boolean
is false only for ``0`` or ``false`` (any case).

The command is ``behaviour.exec_prefix + command`` with ``behaviour.env`` (default ``PATH`` and ``HOME``, a directory
under the server's ``tmp_path``) in ``behaviour.cwd`` (default ``/``), from the pod's
:class:`~support.apiserver.pods.PodBehaviour`.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import socket
import subprocess
import threading

from support.apiserver.pods import PodBehaviour, exec_environment, kill_group
from support.apiserver.schema import ApiError, RecordedRequest
from support.websocket import BINARY, ServerWebSocket

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"
PROTOCOLS = (V5, V4)
# What the kubelet's streaming server also negotiates (cri/streaming remotecommand websocket.go), not served here.
KUBELET_ONLY_PROTOCOLS = ("", "channel.k8s.io", "base64.channel.k8s.io", "v4.base64.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE_SIGNAL = 0, 1, 2, 3, 4, 255


def query_bool(values):
    """apimachinery's Convert_Slice_string_To_bool: the first value; false only for "0" or "false" (any case)."""
    return bool(values) and values[0] != "0" and values[0].lower() != "false"


def _plain(handler, status, text):
    data = text.encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "text/plain; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def internal_error(message):
    """apierrors.NewInternalError(err): its Status, whose message adds the prefix and whose cause is the error."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def _check(api, user, namespace, name, container):
    """The pod, its behaviour and the container, or ApiError / (status, text) as the server and kubelet refuse."""
    api.pods.authorize(user, "create", "pods/exec", namespace, name)
    pod = api.pods.objects.get((namespace, name))
    if pod is None:
        raise api.pods.not_found(name)
    spec = pod["spec"]
    containers = [c["name"] for c in spec.get("containers") or []]
    init = [c["name"] for c in spec.get("initContainers") or []]
    ephemeral = [c["name"] for c in spec.get("ephemeralContainers") or []]
    if not container:
        if len(containers) != 1:
            message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
            if init:
                message += f" or one of the init containers: [{' '.join(init)}]"
            raise ApiError(400, "BadRequest", message)
        container = containers[0]
    elif container not in containers + init + ephemeral:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
    if not spec.get("nodeName"):
        raise ApiError(400, "BadRequest", f"pod {name} does not have a host assigned")
    statuses = {
        s["name"]: s
        for group in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
        for s in (pod.get("status") or {}).get(group) or []
    }
    if "running" not in ((statuses.get(container) or {}).get("state") or {}):
        return (pod, None, container), f'container not found ("{container}")'
    return (pod, api.pods.behaviour_of(namespace, name), container), None


def _chosen_protocol(offered):
    """wsstream's handshake: the first offered protocol the server serves; none offered is "" (see the docstring)."""
    for protocol in offered or [""]:
        if protocol in PROTOCOLS or protocol in KUBELET_ONLY_PROTOCOLS:
            return protocol
    return None


def serve_exec(handler, namespace, name, pairs):
    """Answer one exec request on ``handler`` (a ``BaseHTTPRequestHandler``); runs the session to its end."""
    api = handler.api
    query = {}
    for key, value in pairs:
        query.setdefault(key, []).append(value)
    first = {k: v[0] for k, v in query.items()}
    upgrade = (handler.headers.get("Upgrade") or "").strip()
    offered = [p.strip() for p in (handler.headers.get("Sec-WebSocket-Protocol") or "").split(",") if p.strip()]
    record = RecordedRequest(handler.command, handler.path.split("?")[0], first, None, None, None)
    record.upgrade = upgrade
    record.command = list(query.get("command") or [])
    record.subprotocols = offered
    user = handler._user()
    record.user = user
    handler.close_connection = True
    websocket = upgrade.lower() == "websocket"
    chosen = _chosen_protocol(offered) if websocket else None
    path = handler.path.split("?")[0]
    if any(handler.command == method and path.startswith(prefix) for method, prefix in api.held):
        # server.hold(): a server that never answers, for exec as for the rest.
        api.requests.append(record)
        api._release.wait()
        return
    try:
        with api._lock:
            api.requests.append(record)
            if user is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            for hook in list(api.before_request):
                hook(record)
            if handler.command not in ("GET", "POST"):
                raise ApiError(
                    405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                )
            target, refusal = _check(api, user, namespace, name, first.get("container"))
            if refusal is None and not upgrade:
                raise ApiError(400, "BadRequest", "Upgrade request required")
            if refusal is None and not websocket:
                raise ApiError(400, "BadRequest", f"{upgrade} is not served by the fake API server (WebSocket only)")
    except ApiError as exc:
        record.status = exc.code
        handler._send(exc.code, exc.status())
        return
    key = handler.headers.get("Sec-WebSocket-Key")
    if refusal is not None and chosen != V5:
        # Proxied to the kubelet (v4, SPDY), whose refusal comes back as the answer to the upgrade.
        record.status = 500
        _plain(handler, 500, refusal)
        return
    if not key:
        record.status = 400
        _plain(handler, 400, "")
        return
    if chosen is None:
        record.status = 403
        _plain(handler, 403, "")
        return
    if chosen not in PROTOCOLS:
        record.status = 400
        _plain(handler, 400, f'subprotocol "{chosen}" is not served by the fake API server ({V5} and {V4} only)')
        return
    record.status = 101
    record.subprotocol = chosen
    handler.send_response(101)
    for header, value in ServerWebSocket.handshake_headers(key, chosen):
        handler.send_header(header, value)
    handler.end_headers()
    handler.wfile.flush()
    pod, behaviour, _container = target
    session = _Session(
        handler,
        ServerWebSocket(handler.rfile, handler.wfile),
        chosen,
        query,
        behaviour or PodBehaviour.running(),
        (namespace, name, pod["metadata"]["uid"]),
    )
    if refusal is not None:
        # v5: the translator's SPDY executor could not upgrade to the kubelet.
        session.refuse(internal_error(f"unable to upgrade connection: {refusal}"))
        return
    session.run()


class _Session:
    def __init__(self, handler, ws, protocol, query, behaviour, pod):
        self.handler, self.ws, self.protocol = handler, ws, protocol
        self.namespace, self.name, self.pod_uid = pod
        self.command = list(query.get("command") or [])
        self.stdin, self.stdout, self.stderr = (query_bool(query.get(k)) for k in ("stdin", "stdout", "stderr"))
        self.behaviour = behaviour
        self.stdin_queue = queue.Queue()
        self.finished = threading.Event()
        self.closer = None
        self._closer_lock = threading.Lock()
        self.drained = False
        self._connected()

    def _send(self, channel, data):
        return self.ws.send(BINARY, bytes([channel]) + data)

    def _connected(self):
        lowest = STDOUT if self.stdout else STDERR if self.stderr else ERROR
        self._send(lowest, b"")

    def _status(self, status):
        self._send(ERROR, json.dumps(status).encode())
        if not self.ws.close():
            return
        # The client answers a close with its own; one that does not is cut off after a while.
        with self._closer_lock:
            if self.drained:
                return
            self.closer = threading.Timer(5, self._cut)
            self.closer.daemon = True
            self.closer.start()

    def refuse(self, status):
        """End the session with ``status`` without running anything."""
        self._status(status)
        self._drain(None)

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
            if self.protocol == V5:
                message = f"command terminated with exit code {code}"
            else:
                message = f"error executing command [{' '.join(self.command)}], exit code {code}"
            self._status(
                {
                    "metadata": {},
                    "status": "Failure",
                    "message": f"command terminated with non-zero exit code: {message}",
                    "reason": "NonZeroExitCode",
                    "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
                }
            )
        self.finished.set()

    def _start_failure(self, error):
        """The runtime's text (containerd's) for a command it cannot start."""
        argv0 = self.command[0] if self.command else ""
        cwd = self.behaviour.cwd or "/"
        if getattr(error, "filename", None) == cwd:
            why = f"the fake API server cannot enter the behaviour's cwd {cwd}: {error.strerror}"
        elif isinstance(error, PermissionError):
            why = f'exec: "{argv0}": permission denied'
        elif "/" in argv0:
            why = f'exec: "{argv0}": stat {argv0}: no such file or directory'
        else:
            why = f'exec: "{argv0}": executable file not found in $PATH'
        inner = (
            "error executing command in container: failed to exec in container: failed to start exec "
            f'"{secrets.token_hex(32)}": OCI runtime exec failed: exec failed: unable to start container process: '
            f"{why}: unknown"
        )
        status = internal_error(inner)
        if self.protocol == V5:
            status = internal_error(status["message"])
        return status

    def run(self):
        behaviour = self.behaviour
        argv = list(behaviour.exec_prefix) + self.command
        pods = self.handler.api.pods
        try:
            if not self.command:
                raise FileNotFoundError("")
            process = subprocess.Popen(  # noqa: S603 - the test's own command, on the test's own machine
                argv,
                stdin=subprocess.PIPE if self.stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE if self.stdout else subprocess.DEVNULL,
                stderr=subprocess.PIPE if self.stderr else subprocess.DEVNULL,
                env=exec_environment(behaviour, pods.home()),
                cwd=behaviour.cwd or "/",
                # Its own group, so that killing it reaches what it started (the kubelet kills the whole cgroup).
                start_new_session=True,
            )
        except OSError as error:
            self.refuse(self._start_failure(error))
            return
        with self.handler.api._lock:
            live = pods.objects.get((self.namespace, self.name))
            pods.processes.add(process)
            if live is not None and live["metadata"]["uid"] == self.pod_uid and not pods.stopped:
                pods.pod_processes.setdefault(self.pod_uid, set()).add(process)
            else:
                # The pod went between the checks and the start (or the server stops): no container to run it in.
                kill_group(process)
        try:
            self._serve(process)
        finally:
            with self.handler.api._lock:
                pods.processes.discard(process)
                mine = pods.pod_processes.get(self.pod_uid)
                if mine is not None:
                    mine.discard(process)
                    if not mine:
                        del pods.pod_processes[self.pod_uid]

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
            kill_group(process)
        self.finished.wait(10)
        with self._closer_lock:
            if self.closer is not None:
                self.closer.cancel()

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
            elif data[0] == CLOSE_SIGNAL and self.protocol == V5:
                # client-go's stream.Close sends exactly [255, channel]; a real v5 server drops anything else.
                if len(data) != 2 or data[1] > RESIZE:
                    break
                if data[1] == STDIN:
                    self.stdin_queue.put(None)
            elif data[0] > RESIZE:
                break
        with self._closer_lock:
            self.drained = True
            if self.closer is not None:
                self.closer.cancel()

    def _cut(self):
        # The client did not answer our close: end the read (socket.socket.shutdown, not SSLSocket's, which unwraps).
        try:
            socket.socket.shutdown(self.handler.connection, socket.SHUT_RDWR)
        except OSError:
            pass
