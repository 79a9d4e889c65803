# SPDX-License-Identifier: GPL-3.0-or-later
"""Pod sandboxes and containers on lab nodes, made through CRI as a kubelet makes them.

A node here is a lab node's state entry (``Lab.workload_node(runtime)`` or ``Lab.add_node(..., workloads=True)``:
its runtime has the lab's pause image and runc, every path under the node's directory). Sandboxes share the
node's network, PID and IPC namespaces (NamespaceOption NODE), so no CNI plugin is needed.

The calls go over gRPC with the messages of ``cri_runtime.proto`` (beside this file), compiled by protoc at first
use into a private descriptor pool: the collection's own CRI stubs (``protos/cri_image.proto``, package
runtime.v1 too) stay loaded in the same process without a clash. Debian packages no crictl.
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_tools import protoc

from support.errors import LabError
from support.processes import tail

PROTO = Path(__file__).with_name("cri_runtime.proto")
SERVICE = "/runtime.v1.RuntimeService/"
NAMESPACE = "pinned-images-lab"
# Marks what this module made, so a node's leftovers can be found (remove_workloads).
LABEL = "io.pinned-images.lab/workload"
HOST_NAMESPACES = {"network": "NODE", "pid": "NODE", "ipc": "NODE"}
STATES = ("running", "exited", "created")
RUNNING_COMMAND = ("/bin/sleep", "2147483647")
EXITED_COMMAND = ("/bin/true",)
EXIT_TIMEOUT = 30.0
CALL_TIMEOUT = 60.0
READY_PROBE_TIMEOUT = 2.0
_names = itertools.count()


@functools.lru_cache(maxsize=None)
def _pool() -> descriptor_pool.DescriptorPool:
    with tempfile.TemporaryDirectory(prefix="cri-runtime-") as out:
        target = os.path.join(out, "cri_runtime.pb")
        if protoc.main(["protoc", "-I%s" % PROTO.parent, "--descriptor_set_out=%s" % target, str(PROTO)]) != 0:
            raise LabError("protoc could not compile %s" % PROTO)
        with open(target, "rb") as handle:
            descriptors = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for file_proto in descriptors.file:
        pool.Add(file_proto)
    return pool


def _message(name: str) -> Any:
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName("runtime.v1." + name))


@functools.lru_cache(maxsize=None)
def _channel(endpoint: str) -> grpc.Channel:
    return grpc.insecure_channel(endpoint)


def call(
    node: Mapping[str, Any], method: str, request: Mapping[str, Any] | None = None, timeout: float = CALL_TIMEOUT
) -> dict[str, Any]:
    """The RuntimeService ``method`` of ``node`` with ``request`` (a dict of the proto's field names); its
    response as a dict (field names of the proto, enums by name, unset fields as their defaults: a created
    container's ``state`` is CONTAINER_CREATED, enum value 0). A gRPC error becomes a
    LabError naming the node, the method, the runtime's message and the tail of the node's log."""
    request_type, response_type = _message(method + "Request"), _message(method + "Response")
    stub: Callable[..., Any] = _channel(node["endpoint"]).unary_unary(
        SERVICE + method,
        request_serializer=request_type.SerializeToString,
        response_deserializer=response_type.FromString,
    )
    try:
        response = stub(json_format.ParseDict(dict(request or {}), request_type()), timeout=timeout)
    except grpc.RpcError as err:
        raise LabError(
            "%s %s on %s: %s %s; log %s:\n%s"
            % (node["name"], method, node["endpoint"], err.code().name, err.details(), node.get("log"), tail(node))
        ) from err
    return json_format.MessageToDict(
        response, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def runtime_ready(node: Mapping[str, Any]) -> bool:
    """True once the node's RuntimeService answers: after a restart containerd answers "server is not initialized
    yet" until it has recovered its sandboxes and containers (the lab's readiness probe of workload nodes)."""
    try:
        call(node, "ListPodSandbox", timeout=READY_PROBE_TIMEOUT)
    except LabError:
        return False
    return True


def _unique(prefix: str) -> str:
    return "%s-%d-%d" % (prefix, os.getpid(), next(_names))


@dataclass
class Sandbox:
    """A pod sandbox made by ``run_sandbox``."""

    node: Mapping[str, Any] = field(repr=False)
    id: str
    name: str
    config: dict[str, Any] = field(repr=False)

    def stop(self) -> None:
        call(self.node, "StopPodSandbox", {"pod_sandbox_id": self.id})

    def remove(self) -> None:
        """Stop and remove the sandbox with its containers."""
        self.stop()
        call(self.node, "RemovePodSandbox", {"pod_sandbox_id": self.id})


@dataclass
class Container:
    """A container made by ``run_container``. ``image_ref`` is the image id the runtime lists it with (``image_id``);
    ``sandbox`` is its own sandbox, which ``remove`` removes too, or None (the caller's)."""

    node: Mapping[str, Any] = field(repr=False)
    id: str
    name: str
    pod_sandbox_id: str
    image_ref: str
    sandbox: Sandbox | None = field(default=None, repr=False)

    def status(self) -> dict[str, Any]:
        """CRI ContainerStatus: ``state`` (CONTAINER_RUNNING, ...), ``exit_code``, ``image_ref``, ``reason``."""
        return call(self.node, "ContainerStatus", {"container_id": self.id})["status"]

    def stop(self) -> None:
        """Stop it now (timeout 0: SIGKILL at once, as the kubelet does past a pod's grace period)."""
        call(self.node, "StopContainer", {"container_id": self.id, "timeout": 0})

    def remove(self) -> None:
        """Stop and remove the container, and its own sandbox if ``run_container`` made one."""
        self.stop()
        call(self.node, "RemoveContainer", {"container_id": self.id})
        if self.sandbox is not None:
            self.sandbox.remove()


def _sandbox_config(node: Mapping[str, Any], name: str) -> dict[str, Any]:
    uid = _unique(name)
    return {
        "metadata": {"name": name, "uid": uid, "namespace": NAMESPACE, "attempt": 0},
        "log_directory": str(Path(node["pods"]) / uid),
        "labels": {LABEL: name},
        "linux": {"cgroup_parent": node["cgroup_parent"], "security_context": {"namespace_options": HOST_NAMESPACES}},
    }


def run_sandbox(node: Mapping[str, Any], name: str) -> Sandbox:
    """RunPodSandbox on ``node``: a ready sandbox ``name`` in the node's own namespaces."""
    if not node.get("workloads"):
        raise LabError("node %s runs no workloads: add it with Lab.add_node(..., workloads=True)" % node["name"])
    config = _sandbox_config(node, name)
    Path(config["log_directory"]).mkdir(parents=True, exist_ok=True)
    response = call(node, "RunPodSandbox", {"config": config})
    return Sandbox(node, response["pod_sandbox_id"], name, config)


def run_container(
    node: Mapping[str, Any],
    image: str,
    *,
    state: str = "running",
    name: str | None = None,
    sandbox: Sandbox | None = None,
    command: Sequence[str] | None = None,
) -> Container:
    """A container of ``image`` (a reference the node has: CRI does not pull here) in ``sandbox``, or in a
    sandbox of its own. ``state``: "created" (made, never started), "running" (started; default command
    ``sleep``), "exited" (started, default command ``true``, returned once the runtime reports it exited 0).
    ``command`` replaces the default (busybox images of ``Lab.push_runnable_image`` have sh, sleep, true, kill)."""
    if state not in STATES:
        raise LabError("bad container state %r: use one of %s" % (state, ", ".join(STATES)))
    name = name or _unique("workload")
    pod = sandbox if sandbox is not None else run_sandbox(node, name + "-pod")
    own = None if sandbox is not None else pod
    try:
        config = {
            "metadata": {"name": name, "attempt": 0},
            "image": {"image": image, "user_specified_image": image},
            "command": list(command or (EXITED_COMMAND if state == "exited" else RUNNING_COMMAND)),
            "labels": {LABEL: name},
            "log_path": name + ".log",
            "linux": {"security_context": {"namespace_options": HOST_NAMESPACES}},
        }
        request = {"pod_sandbox_id": pod.id, "config": config, "sandbox_config": pod.config}
        container_id = call(node, "CreateContainer", request)["container_id"]
        container = Container(node, container_id, name, pod.id, "", own)
        try:
            if state != "created":
                call(node, "StartContainer", {"container_id": container_id})
            if state == "exited":
                _wait_exited(container)
            container.image_ref = image_id(_listed(node, container_id))
        except BaseException:
            container.sandbox = None
            container.remove()
            raise
    except BaseException:
        if own is not None:
            own.remove()
        raise
    return container


def _wait_exited(container: Container) -> None:
    deadline = time.monotonic() + EXIT_TIMEOUT
    while True:
        status = container.status()
        if status.get("state") == "CONTAINER_EXITED":
            if status.get("exit_code", 0) != 0:
                raise LabError("container %s exited %d: %s" % (container.name, status["exit_code"], status))
            return
        if time.monotonic() > deadline:
            raise LabError("container %s has not exited after %ds: %s" % (container.name, EXIT_TIMEOUT, status))
        time.sleep(0.05)


def _listed(node: Mapping[str, Any], container_id: str) -> dict[str, Any]:
    listed = call(node, "ListContainers", {"filter": {"id": container_id}}).get("containers", [])
    if len(listed) != 1:
        raise LabError("%s ListContainers does not list container %s once: %s" % (node["name"], container_id, listed))
    return listed[0]


def image_id(listed: Mapping[str, Any]) -> str:
    """The image id of a container of ListContainers, as ListImages gives it: containerd (1.6 to 2.1) reports it as
    ``image_ref``, CRI-O 1.33 as ``image_id`` (its ``image_ref`` is a repo digest). ContainerStatus' ``image_ref``
    is a repo digest on both."""
    return str(listed.get("image_id") or listed["image_ref"])


def list_containers(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """CRI ListContainers of ``node``: every container, each a dict (``id``, ``pod_sandbox_id``, ``image_ref``,
    ``state``, ``metadata``, ``labels``, ...)."""
    return call(node, "ListContainers").get("containers", [])


def list_sandboxes(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """CRI ListPodSandbox of ``node``: every sandbox (``id``, ``state``, ``metadata``, ``labels``)."""
    return call(node, "ListPodSandbox").get("items", [])


def remove_workloads(node: Mapping[str, Any]) -> int:
    """Remove every sandbox this module made on ``node`` (their containers with them); how many."""
    ours = [item["id"] for item in list_sandboxes(node) if LABEL in item.get("labels", {})]
    for sandbox_id in ours:
        call(node, "StopPodSandbox", {"pod_sandbox_id": sandbox_id})
        call(node, "RemovePodSandbox", {"pod_sandbox_id": sandbox_id})
    return len(ours)
