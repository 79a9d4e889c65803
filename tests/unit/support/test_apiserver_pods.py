# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fake API server's pods and pods/exec through the real ``kubernetes`` Python client (its ``CoreV1Api``, ``watch``
and ``stream``) and, for the v4 subprotocol, a plain websocket-client: each answer is the one a real kube-apiserver
gives that client (support.apiserver.pods and support.apiserver.podexec cite where the messages come from)."""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.error
import urllib.request

import pytest
import websocket
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from support.apiserver import podexec
from support.apiserver.pods import PodBehaviour

NS = "pinned-images"


def pod(name="p1", node="n1", labels=None, containers=("c",), **spec):
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "pinned-images"}},
        "spec": {"containers": [{"name": c, "image": "registry.example/tools:1"} for c in containers], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


@pytest.fixture
def core(fake_apiserver):
    api = client.CoreV1Api(config.new_client_from_config(str(fake_apiserver.kubeconfig_path)))
    api.server = fake_apiserver
    return api


def wait_phase(server, name, phase, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        obj = server.pods.get(NS, name)
        if obj and obj["status"].get("phase") == phase and obj["status"].get("containerStatuses"):
            return obj
        time.sleep(0.02)
    raise AssertionError(f"pod {name} never reached {phase}: {server.pods.get(NS, name)}")


def status_error(exc):
    return exc.status, json.loads(exc.body)


# ---------------------------------------------------------------------- pods


def test_create_fills_server_defaults_and_answers_pending(core):
    created = core.create_namespaced_pod(NS, pod())
    assert created.status.phase == "Pending" and created.status.container_statuses is None
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    assert created.metadata.namespace == NS
    assert created.spec.restart_policy == "Always" and created.spec.service_account_name == "default"
    assert created.spec.termination_grace_period_seconds == 30
    assert created.spec.containers[0].image_pull_policy == "IfNotPresent"
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, pod())
    assert status_error(error.value) == (
        409,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'pods "p1" already exists',
            "reason": "AlreadyExists",
            "details": {"name": "p1", "kind": "pods"},
            "code": 409,
        },
    )


def test_generate_name_and_invalid_pods(core):
    body = pod(name=None)
    body["metadata"] = {"generateName": "pinned-images-n1-"}
    created = core.create_namespaced_pod(NS, body)
    assert created.metadata.name.startswith("pinned-images-n1-") and len(created.metadata.name) == 22
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(
            NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}}
        )
    code, body = status_error(error.value)
    assert code == 422 and body["message"] == 'Pod "x" is invalid: spec.containers[0].image: Required value'
    assert body["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"}
    ]
    other = pod(name="y")
    other["metadata"]["namespace"] = "elsewhere"
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, other)
    assert error.value.status == 400 and "does not match the namespace" in json.loads(error.value.body)["message"]
    assert sorted(core.server.pods.objects) == [(NS, created.metadata.name)]


def test_running_status_after_the_delay_as_a_kubelet_reports_it(core):
    # A delay far above any stall of a loaded machine between the create and the read.
    core.server.pods.behaviour = lambda p: PodBehaviour.running(delay=5)
    started = time.monotonic()
    core.create_namespaced_pod(NS, pod())
    assert core.read_namespaced_pod("p1", NS).status.phase == "Pending"
    obj = wait_phase(core.server, "p1", "Running", timeout=15)
    assert time.monotonic() - started >= 5
    read = core.read_namespaced_pod("p1", NS)
    assert {c.type: c.status for c in read.status.conditions}["Ready"] == "True"
    (container,) = read.status.container_statuses
    assert container.ready and container.state.running.started_at and container.container_id.startswith("containerd://")
    assert obj["status"]["podIP"]


def test_waiting_pod_reports_the_image_pull_reason(core):
    message = 'Back-off pulling image "registry.example/tools:1"'
    core.server.pods.behaviour = lambda p: PodBehaviour.waiting("ImagePullBackOff", message)
    core.create_namespaced_pod(NS, pod())
    wait_phase(core.server, "p1", "Pending")
    read = core.read_namespaced_pod("p1", NS)
    assert read.status.container_statuses[0].state.waiting.to_dict() == {
        "reason": "ImagePullBackOff",
        "message": message,
    }
    ready = next(c for c in read.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason, ready.message) == (
        "False",
        "ContainersNotReady",
        "containers with unready status: [c]",
    )


def test_admission_refusals_are_the_plugins_403s(core):
    violation = 'privileged (container "c" must not set securityContext.privileged=true)'
    host = "host namespaces (hostNetwork=true, hostPID=true)"
    core.server.pods.behaviour = lambda p: PodBehaviour.forbidden_by_pod_security([host, violation])
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, pod())
    code, body = status_error(error.value)
    assert code == 403 and body["reason"] == "Forbidden" and body["details"] == {"name": "p1", "kind": "pods"}
    assert body["message"] == f'pods "p1" is forbidden: violates PodSecurity "restricted:latest": {host}, {violation}'
    one = 'provider "privileged": Forbidden: not usable by user or serviceaccount'
    two = (
        "provider restricted-v2: .spec.securityContext.hostPID: Invalid value: true: Host PID is not allowed to be used"
    )
    core.server.pods.behaviour = lambda p: PodBehaviour.forbidden_by_scc([one])
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, pod())
    assert json.loads(error.value.body)["message"] == (
        f'pods "p1" is forbidden: unable to validate against any security context constraint: {one}'
    )
    core.server.pods.behaviour = lambda p: PodBehaviour.forbidden_by_scc([one, two, one])
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, pod())
    assert json.loads(error.value.body)["message"].endswith(f"constraint: [{one}, {two}]")
    assert core.server.pods.objects == {}
    # Admission comes before storage: a forbidden pod whose name exists is 403, not 409 AlreadyExists.
    core.server.pods.behaviour = lambda p: PodBehaviour.running()
    core.create_namespaced_pod(NS, pod())
    core.server.pods.behaviour = lambda p: PodBehaviour.forbidden_by_scc([one])
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, pod())
    assert error.value.status == 403


def test_rbac_denial_names_the_user_verb_resource_and_namespace(core):
    core.server.forbid("create", "pods", NS)
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, pod())
    assert status_error(error.value)[1]["message"] == (
        f'pods is forbidden: User "token-user" cannot create resource "pods" in API group "" in the namespace "{NS}"'
    )
    core.create_namespaced_pod("other", pod())
    core.server.forbid("list", "pods")
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces()
    assert json.loads(error.value.body)["message"].endswith(
        'cannot list resource "pods" in API group "" at the cluster scope'
    )
    core.server.forbid("delete", "*")
    with pytest.raises(ApiException) as error:
        core.delete_namespaced_pod("p1", "other")
    code, body = status_error(error.value)
    assert code == 403 and body["details"] == {"name": "p1", "kind": "pods"}
    assert body["message"].startswith('pods "p1" is forbidden: User "token-user" cannot delete resource "pods"')


def test_list_selects_by_label_node_and_name(core):
    core.create_namespaced_pod(NS, pod("a", "n1", {"app": "pinned-images", "node": "n1"}))
    core.create_namespaced_pod(NS, pod("b", "n2", {"app": "pinned-images", "node": "n2"}))
    core.create_namespaced_pod(NS, pod("c", "n1", {"app": "other"}))
    core.create_namespaced_pod("other", pod("d", "n1"))

    def names(**kwargs):
        return [p.metadata.name for p in core.list_namespaced_pod(NS, **kwargs).items]

    assert names() == ["a", "b", "c"]
    assert names(label_selector="app=pinned-images") == ["a", "b"]
    assert names(field_selector="spec.nodeName=n1") == ["a", "c"]
    assert names(label_selector="app=pinned-images", field_selector="spec.nodeName=n1,metadata.name!=c") == ["a"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1").items] == [
        "d",
        "a",
        "c",
    ]
    with pytest.raises(ApiException) as error:
        names(field_selector="spec.nodeSelector=x")
    assert status_error(error.value)[0] == 400
    assert json.loads(error.value.body)["message"] == "field label not supported: spec.nodeSelector"


def test_watch_reports_added_modified_and_deleted(core):
    core.server.pods.behaviour = lambda p: PodBehaviour.running(delay=0.1)
    core.create_namespaced_pod(NS, pod("a"))
    seen = []
    events = watch.Watch().stream(core.list_namespaced_pod, NS, field_selector="metadata.name=a", timeout_seconds=3)
    for event in events:
        seen.append((event["type"], event["object"].status.phase))
        if event["object"].status.phase == "Running" and len(seen) < 3:
            core.delete_namespaced_pod("a", NS)
        if event["type"] == "DELETED":
            break
    # The watch may start before or after the pod started: its first event is the pod as it is then.
    assert (
        seen[0][0] == "ADDED"
        and seen[-2:] == [("MODIFIED", "Running"), ("DELETED", "Running")]
        or seen
        == [
            ("ADDED", "Running"),
            ("DELETED", "Running"),
        ]
    )


def test_graceful_delete_keeps_a_scheduled_pod_terminating_then_removes_it(core):
    core.server.pods.termination_seconds = 3
    core.create_namespaced_pod(NS, pod("a"))
    core.create_namespaced_pod(NS, pod("b", node=None))
    answer = core.delete_namespaced_pod("a", NS, propagation_policy="Background")
    assert (
        answer.kind == "Pod"
        and answer.metadata.deletion_timestamp
        and answer.metadata.deletion_grace_period_seconds == 30
    )
    assert core.read_namespaced_pod("a", NS).metadata.deletion_timestamp
    # Unscheduled pods go at once, whatever the grace period.
    core.delete_namespaced_pod("b", NS, grace_period_seconds=30)
    assert core.server.pods.get(NS, "b") is None
    deadline = time.monotonic() + 15
    while core.server.pods.get(NS, "a") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(ApiException) as error:
        core.read_namespaced_pod("a", NS)
    assert status_error(error.value)[0] == 404
    assert json.loads(error.value.body)["message"] == 'pods "a" not found'
    core.create_namespaced_pod(NS, pod("c"))
    core.delete_namespaced_pod("c", NS, grace_period_seconds=0)
    assert core.server.pods.get(NS, "c") is None


def test_bad_delete_options_are_invalid_before_the_lookup(core):
    core.create_namespaced_pod(NS, pod("d"))
    cause = 'Unsupported value: "Sometimes": supported values: "Foreground", "Background", "Orphan", "nil"'
    # The options are validated first: a missing pod with a bad policy is 422 too, not 404.
    for name in ("d", "gone"):
        with pytest.raises(ApiException) as error:
            core.delete_namespaced_pod(name, NS, propagation_policy="Sometimes")
        code, body = status_error(error.value)
        assert (code, body["reason"]) == (422, "Invalid")
        assert body["message"] == f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: {cause}'
        assert body["details"] == {
            "group": "meta.k8s.io",
            "kind": "DeleteOptions",
            "causes": [{"reason": "FieldValueNotSupported", "message": cause, "field": "propagationPolicy"}],
        }
    with pytest.raises(ApiException) as error:
        core.delete_collection_namespaced_pod(NS, propagation_policy="Sometimes")
    assert error.value.status == 422
    assert core.server.pods.get(NS, "d")


def test_deletecollection_by_label(core):
    core.create_namespaced_pod(NS, pod("a", labels={"run": "r1"}))
    core.create_namespaced_pod(NS, pod("b", labels={"run": "r2"}))
    answer = json.loads(
        core.delete_collection_namespaced_pod(
            NS, label_selector="run=r1", grace_period_seconds=0, _preload_content=False
        ).data
    )
    assert sorted(core.server.pods.objects) == [(NS, "b")]
    # The items as deleted.
    assert [(i["metadata"]["name"], bool(i["metadata"].get("deletionTimestamp"))) for i in answer["items"]] == [
        ("a", True)
    ]


def test_pods_whose_owner_is_deleted_are_collected(core):
    node = core.server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    other = core.server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})

    def owner(obj):
        return {"apiVersion": "v1", "kind": "Node", "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}

    owned = pod("owned")
    owned["metadata"]["ownerReferences"] = [owner(node)]
    shared = pod("shared")
    shared["metadata"]["ownerReferences"] = [owner(node), owner(other)]
    core.create_namespaced_pod(NS, owned)
    core.create_namespaced_pod(NS, shared)
    core.create_namespaced_pod(NS, pod("free"))
    assert core.read_namespaced_pod("owned", NS).metadata.owner_references[0].uid == node["metadata"]["uid"]
    core.delete_node("n1")
    assert sorted(core.server.pods.objects) == [(NS, "free"), (NS, "shared")]
    assert [r["name"] for r in core.server.pods.get(NS, "shared")["metadata"]["ownerReferences"]] == ["n2"]


def test_orphan_deletion_leaves_the_dependents_without_the_reference(core):
    node = core.server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    owner_pod = core.create_namespaced_pod(NS, pod("owner"))
    for name, owner in (("of-node", node), ("of-pod", owner_pod.to_dict())):
        body = pod(name)
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
        core.create_namespaced_pod(NS, body)
    core.delete_node("n1", propagation_policy="Orphan")
    core.delete_namespaced_pod("owner", NS, grace_period_seconds=0, propagation_policy="Orphan")
    assert sorted(core.server.pods.objects) == [(NS, "of-node"), (NS, "of-pod")]
    for name in ("of-node", "of-pod"):
        assert core.server.pods.get(NS, name)["metadata"].get("ownerReferences") in (None, [])


# ---------------------------------------------------------------------- exec


def run(core, name, command, stdin=None, container="c"):
    """exec through kubernetes.stream, as kubernetes.core's modules do: (stdout, stderr, returncode)."""
    resp = stream(
        core.connect_get_namespaced_pod_exec,
        name,
        NS,
        command=command,
        container=container,
        stdin=stdin is not None,
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
    )
    if stdin is not None:
        resp.write_stdin(stdin)
        # The v5 CLOSE signal: the process sees the end of its stdin.
        resp.close_channel(0)
    out, err = "", ""
    while resp.is_open():
        resp.update(timeout=1)
        out += resp.read_stdout() if resp.peek_stdout() else ""
        err += resp.read_stderr() if resp.peek_stderr() else ""
    resp.run_forever(timeout=0)
    return out, err, resp.returncode


@pytest.fixture
def running(core):
    core.create_namespaced_pod(NS, pod())
    wait_phase(core.server, "p1", "Running")
    return core


def test_exec_through_the_python_client_negotiates_v5(running):
    out, err, code = run(running, "p1", ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (out, err, code) == ("out\n", "err\n", 3)
    assert run(running, "p1", ["cat"], stdin="abc\n")[::2] == ("abc\n", 0)
    (request,) = [r for r in running.server.requests if r.path.endswith("/exec")][:1]
    assert request.upgrade == "websocket" and request.subprotocol == "v5.channel.k8s.io"
    assert request.subprotocols == ["v5.channel.k8s.io", "v4.channel.k8s.io"]
    assert request.command == ["sh", "-c", "echo out; echo err >&2; exit 3"] and request.status == 101


def ws_url(server, name, query):
    return server.url.replace("http", "ws", 1) + f"/api/v1/namespaces/{NS}/pods/{name}/exec?{query}"


def ws_messages(sock):
    messages = []
    while True:
        try:
            opcode, data = sock.recv_data(control_frame=False)
        except websocket.WebSocketConnectionClosedException:
            break
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            break
        messages.append(data)
    return messages


def test_exec_over_v4_ends_with_the_exit_status_on_channel_3(running):
    server = running.server
    sock = websocket.create_connection(
        ws_url(server, "p1", "command=sh&command=-c&command=echo+hi%3B+exit+2&stdout=true&stderr=true&container=c"),
        header=[f"Authorization: Bearer {server.token}"],
        subprotocols=["v4.channel.k8s.io"],
        sslopt={"cert_reqs": ssl.CERT_NONE},
        timeout=10,
    )
    assert sock.getsubprotocol() == "v4.channel.k8s.io"
    messages = ws_messages(sock)
    # The empty message on the lowest writable channel first, as kubelet streaming sends it.
    assert messages[:2] == [b"\x01", b"\x01hi\n"]
    status = json.loads(messages[-1][1:])
    assert messages[-1][0] == 3 and status == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command [sh -c echo hi; exit 2], exit code 2",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "2"}]},
    }


def refusal(server, name, query, subprotocols=("v5.channel.k8s.io",), token=None):
    with pytest.raises(websocket.WebSocketBadStatusException) as error:
        websocket.create_connection(
            ws_url(server, name, query),
            header=[f"Authorization: Bearer {token or server.token}"],
            subprotocols=list(subprotocols),
            timeout=10,
        )
    body = error.value.resp_body.decode()
    return error.value.status_code, (json.loads(body) if body.startswith("{") else body)


def test_exec_refusals_are_the_api_servers(running):
    server = running.server
    running.create_namespaced_pod(NS, pod("two", containers=("a", "b")))
    running.create_namespaced_pod(NS, pod("unscheduled", node=None))
    server.pods.behaviour = lambda p: PodBehaviour.waiting("ErrImagePull", "not found")
    running.create_namespaced_pod(NS, pod("pulling"))
    wait_phase(server, "pulling", "Pending")
    code, body = refusal(server, "p1", "command=true&stdout=true&container=zz")
    assert (code, body["reason"], body["message"]) == (400, "BadRequest", "container zz is not valid for pod p1")
    code, body = refusal(server, "two", "command=true&stdout=true")
    assert (code, body["message"]) == (400, "a container name must be specified for pod two, choose one of: [a b]")
    code, body = refusal(server, "unscheduled", "command=true&stdout=true&container=c")
    assert (code, body["message"]) == (400, "pod unscheduled does not have a host assigned")
    # v4 is proxied to the kubelet, whose plain-text refusal answers the upgrade.
    assert refusal(server, "pulling", "command=true&stdout=true&container=c", subprotocols=("v4.channel.k8s.io",)) == (
        500,
        'container not found ("c")',
    )
    code, body = refusal(server, "gone", "command=true&stdout=true")
    assert (code, body["message"]) == (404, 'pods "gone" not found')
    assert refusal(server, "p1", "command=true&stdout=true", token="wrong")[0] == 401
    # No real server speaks v1: golang.org/x/net/websocket's 403 without a body.
    assert refusal(server, "p1", "command=true&stdout=true", subprotocols=("v1.channel.k8s.io",)) == (403, "")
    code, body = refusal(server, "p1", "command=true&stdout=true", subprotocols=("v4.base64.channel.k8s.io",))
    assert (code, body) == (
        400,
        'subprotocol "v4.base64.channel.k8s.io" is not served by the fake API server '
        "(v5.channel.k8s.io and v4.channel.k8s.io only)",
    )
    server.forbid("create", "pods/exec", NS)
    code, body = refusal(server, "p1", "command=true&stdout=true")
    assert code == 403 and body["details"] == {"name": "p1", "kind": "pods"}
    assert body["message"] == (
        f'pods "p1" is forbidden: User "token-user" cannot create resource "pods/exec" in API group "" in the '
        f'namespace "{NS}"'
    )


def test_exec_runs_the_behaviours_prefix_env_and_cwd(core, tmp_path):
    core.server.pods.behaviour = lambda p: PodBehaviour.running(
        exec_prefix=["env", "POD=" + p["metadata"]["name"]],
        env={"PATH": "/usr/bin:/bin", "NODE": "n1"},
        cwd=str(tmp_path),
    )
    core.create_namespaced_pod(NS, pod())
    wait_phase(core.server, "p1", "Running")
    out, _err, code = run(core, "p1", ["sh", "-c", 'echo "$POD $NODE $PATH $(pwd)"'])
    assert (out, code) == (f"p1 n1 /usr/bin:/bin {tmp_path}\n", 0)


def test_namespaces_exist_unless_the_test_lists_them(core):
    assert core.read_namespace(NS).status.phase == "Active"
    core.server.pods.namespaces = {"kube-system"}
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NS, pod())
    assert status_error(error.value)[0] == 404
    assert json.loads(error.value.body)["message"] == f'namespaces "{NS}" not found'
    assert [n.metadata.name for n in core.list_namespace().items] == ["kube-system"]


def test_a_client_that_goes_away_ends_the_process(running):
    server = running.server
    sock = websocket.create_connection(
        ws_url(server, "p1", "command=sleep&command=30&stdout=true&stdin=true&container=c"),
        header=[f"Authorization: Bearer {server.token}"],
        subprotocols=["v5.channel.k8s.io"],
        timeout=10,
    )
    (process,) = wait_processes(server, 1)
    sock.sock.close()
    assert process.wait(10) != 0
    wait_processes(server, 0)


def test_patch_changes_metadata_and_refuses_spec_changes(running):
    patched = running.patch_namespaced_pod("p1", NS, {"metadata": {"labels": {"run": "r1"}, "uid": "forged"}})
    live = running.server.pods.get(NS, "p1")
    assert patched.metadata.labels == {"app": "pinned-images", "run": "r1"}
    assert patched.metadata.uid == live["metadata"]["uid"] != "forged" and patched.status.phase == "Running"
    with pytest.raises(ApiException) as error:
        running.patch_namespaced_pod("p1", NS, {"spec": {"nodeName": "n2"}})
    code, body = status_error(error.value)
    assert code == 422 and body["message"].startswith(
        'Pod "p1" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`'
    )
    with pytest.raises(ApiException) as error:
        running.patch_namespaced_pod("p1", NS, {"metadata": {"resourceVersion": "1", "labels": {"run": "r2"}}})
    assert error.value.status == 409 and running.server.pods.get(NS, "p1")["metadata"]["labels"]["run"] == "r1"


def test_watch_reports_pods_entering_and_leaving_the_selection(core):
    core.create_namespaced_pod(NS, pod("a", labels={"run": "r0"}))
    since = core.list_namespaced_pod(NS).metadata.resource_version
    core.patch_namespaced_pod("a", NS, {"metadata": {"labels": {"run": "r1"}}})
    core.patch_namespaced_pod("a", NS, {"metadata": {"labels": {"run": "r1", "x": "y"}}})
    core.patch_namespaced_pod("a", NS, {"metadata": {"labels": {"run": "r2"}}})
    core.create_namespaced_pod(NS, pod("b", node=None, labels={"run": "r1"}))
    core.delete_namespaced_pod("b", NS)
    events = watch.Watch().stream(
        core.list_namespaced_pod, NS, label_selector="run=r1", resource_version=since, timeout_seconds=1
    )
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
        ("ADDED", "b"),
        ("DELETED", "b"),
    ]


def living_in_group(pgid):
    """The pids of processes in group ``pgid`` that are not zombies (from /proc/<pid>/stat)."""
    living = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            living.append(int(entry))
    return living


def wait_processes(server, count, timeout=10.0):
    """The exec processes once there are ``count`` of them (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while len(server.pods.processes) != count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(server.pods.processes) == count, server.pods.processes
    return list(server.pods.processes)


@pytest.mark.parametrize(
    "command",
    ["command=sleep&command=30", "command=sh&command=-c&command=sleep+30%3B+true"],
    ids=["the-process", "what-it-started"],
)
def test_deleting_the_pod_ends_its_exec_with_137(running, command, tmp_path):
    server = running.server
    sock = websocket.create_connection(
        ws_url(server, "p1", f"{command}&stdout=true&container=c"),
        header=[f"Authorization: Bearer {server.token}"],
        subprotocols=["v5.channel.k8s.io"],
        timeout=10,
    )
    (process,) = wait_processes(server, 1)
    running.delete_namespaced_pod("p1", NS, grace_period_seconds=0)
    # The socket's 10 s timeout bounds this: a grandchild holding stdout would keep the status from coming.
    messages = ws_messages(sock)
    assert messages[-1][0] == 3 and json.loads(messages[-1][1:])["details"]["causes"][0]["message"] == "137"
    # Nothing of the group runs on (a killed orphan may stay a zombie until this machine's init reaps it).
    assert living_in_group(process.pid) == []
    assert server.pods.pod_processes == {}


def test_an_exec_whose_pod_goes_before_it_starts_is_killed(running, monkeypatch):
    server = running.server
    real_popen = podexec.subprocess.Popen

    def delete_then_popen(*args, **kwargs):
        # The pod goes after the server's checks and before the process exists: nothing is registered yet to kill.
        running.delete_namespaced_pod("p1", NS, grace_period_seconds=0)
        assert server.pods.get(NS, "p1") is None
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(podexec.subprocess, "Popen", delete_then_popen)
    sock = websocket.create_connection(
        ws_url(server, "p1", "command=sleep&command=30&stdout=true&container=c"),
        header=[f"Authorization: Bearer {server.token}"],
        subprotocols=["v5.channel.k8s.io"],
        timeout=10,
    )
    messages = ws_messages(sock)
    assert json.loads(messages[-1][1:])["details"]["causes"][0]["message"] == "137"
    wait_processes(server, 0)
    assert server.pods.pod_processes == {}


def test_v5_status_texts_are_the_stream_translators(running):
    server = running.server

    def exec_v5(query):
        sock = websocket.create_connection(
            ws_url(server, "p1", query),
            header=[f"Authorization: Bearer {server.token}"],
            subprotocols=["v5.channel.k8s.io"],
            timeout=10,
        )
        messages = ws_messages(sock)
        assert messages[0] == b"\x01" and messages[-1][0] == 3
        return json.loads(messages[-1][1:])

    status = exec_v5("command=sh&command=-c&command=exit+3&stdout=true&container=c")
    assert status == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: command terminated with exit code 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }
    status = exec_v5("command=no-such-command&stdout=true&container=c")
    inner = status["details"]["causes"][0]["message"]
    assert (status["reason"], status["code"], status["message"]) == (
        "InternalError",
        500,
        f"Internal error occurred: {inner}",
    )
    assert inner.startswith("Internal error occurred: error executing command in container: ")
    assert inner.endswith('exec: "no-such-command": executable file not found in $PATH: unknown')
    status = exec_v5("command=/no/such/file&stdout=true&container=c")
    assert status["message"].endswith('exec: "/no/such/file": stat /no/such/file: no such file or directory: unknown')
    # stdout=yes is true (only 0 and false are false), and the first of repeated values counts.
    assert exec_v5("command=true&stdout=yes&stdout=false&container=c") == {"metadata": {}, "status": "Success"}
    # The container not running: after the 101, the translator's InternalError.
    server.pods.set_status(
        NS, "p1", {"phase": "Pending", "containerStatuses": [{"name": "c", "state": {"waiting": {}}}]}
    )
    message = 'unable to upgrade connection: container not found ("c")'
    assert exec_v5("command=true&stdout=true&container=c") == {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def test_exec_home_is_under_the_servers_tmp_path(running):
    out, _err, code = run(running, "p1", ["sh", "-c", 'echo "$HOME"'])
    assert (out, code) == (f"{running.server.tmp_path / 'pod-home'}\n", 0)


def test_a_namespaced_denial_denies_the_list_across_namespaces(core):
    core.server.forbid("list", "pods", NS)
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces()
    code, body = status_error(error.value)
    assert (code, body["message"]) == (
        403,
        'pods is forbidden: User "token-user" cannot list resource "pods" in API group "" at the cluster scope',
    )
    assert core.list_namespaced_pod("elsewhere").items == []


def test_exec_other_methods_init_containers_hold_and_a_bad_cwd(core, tmp_path):
    server = core.server
    body = pod("with-init", containers=("a", "b"))
    body["spec"]["initContainers"] = [{"name": "setup", "image": "registry.example/tools:1"}]
    core.create_namespaced_pod(NS, body)
    code, body = refusal(server, "with-init", "command=true&stdout=true")
    assert (code, body["message"]) == (
        400,
        "a container name must be specified for pod with-init, choose one of: [a b] or one of the init containers: "
        "[setup]",
    )
    request = urllib.request.Request(
        f"{server.url}/api/v1/namespaces/{NS}/pods/with-init/exec?command=true&container=a",
        method="PUT",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=10)  # noqa: S310 - the fake server's own URL
    assert error.value.code == 405
    missing = tmp_path / "missing"
    server.pods.behaviour = lambda p: PodBehaviour.running(cwd=str(missing))
    core.create_namespaced_pod(NS, pod("bad-cwd"))
    wait_phase(server, "bad-cwd", "Running")
    sock = websocket.create_connection(
        ws_url(server, "bad-cwd", "command=true&stdout=true&container=c"),
        header=[f"Authorization: Bearer {server.token}"],
        subprotocols=["v4.channel.k8s.io"],
        timeout=10,
    )
    status = json.loads(ws_messages(sock)[-1][1:])
    assert status["reason"] == "InternalError" and f"cannot enter the behaviour's cwd {missing}" in status["message"]
    # server.hold(): the exec is never answered.
    server.hold("GET", f"/api/v1/namespaces/{NS}/pods/bad-cwd/exec")
    with pytest.raises(websocket.WebSocketTimeoutException):
        websocket.create_connection(
            ws_url(server, "bad-cwd", "command=true&stdout=true&container=c"),
            header=[f"Authorization: Bearer {server.token}"],
            subprotocols=["v5.channel.k8s.io"],
            timeout=1,
        )
