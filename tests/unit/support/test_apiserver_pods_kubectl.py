# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fake API server's pods and pods/exec checked with Debian's kubectl 1.32 (over HTTPS: kubectl sends no bearer
token over plain HTTP), and with the real ``kubernetes.core.kubectl`` connection plugin when that collection is
installed: each case is what kubectl shows against a real cluster, and exec goes over WebSocket (v5), never the SPDY
fallback."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from support.apiserver.pods import PodBehaviour

TOP = Path(__file__).resolve().parents[3]
KUBECTL = TOP / ".build" / "trixie" / "kubectl" / "usr" / "bin" / "kubectl"
KUBERNETES_CORE = TOP / ".build" / "collections" / "ansible_collections" / "kubernetes" / "core"
NS = "pinned-images"


def manifest(name="p1", node="n1", labels=None):
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {"app": "pinned-images"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/tools:1"}]},
        }
    )


@pytest.fixture
def kubectl(fake_apiserver_tls, tmp_path):
    server = fake_apiserver_tls
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")

    def run(*args, stdin=None, text=True):
        command = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"), "-n", NS]
        proc = subprocess.run(
            command + list(args), input=stdin, capture_output=True, text=text, timeout=60, check=False
        )
        return proc.returncode, proc.stdout, proc.stderr

    run.server = server
    run.kubeconfig = kubeconfig
    return run


@pytest.fixture
def pod(kubectl):
    rc, out, err = kubectl("apply", "--validate=false", "-f", "-", stdin=manifest())
    assert (rc, out, err) == (0, "pod/p1 created\n", "")
    rc, out, err = kubectl("wait", "--for=condition=Ready", "pod/p1", "--timeout=10s")
    assert (rc, out) == (0, "pod/p1 condition met\n"), err
    return kubectl


def exec_requests(server):
    return [r for r in server.requests if r.path.endswith("/exec")]


def test_apply_get_wait_and_delete(kubectl):
    server = kubectl.server
    server.pods.behaviour = lambda p: PodBehaviour.running(delay=0.5)
    server.pods.termination_seconds = 0.5
    assert kubectl("apply", "--validate=false", "-f", "-", stdin=manifest("p2", labels={"app": "other"}))[:2] == (
        0,
        "pod/p2 created\n",
    )
    started = time.monotonic()
    assert kubectl("apply", "--validate=false", "-f", "-", stdin=manifest())[:2] == (0, "pod/p1 created\n")
    assert kubectl("wait", "--for=condition=Ready", "pod/p1", "--timeout=10s")[:2] == (0, "pod/p1 condition met\n")
    assert time.monotonic() - started >= 0.5
    # kubectl wait lists, then watches from the list's resourceVersion.
    assert any(
        r.query.get("watch") == "true" and r.query.get("fieldSelector") == "metadata.name=p1" for r in server.requests
    )
    rc, out, _err = kubectl("get", "pods", "-l", "app=pinned-images", "-o", "name")
    assert (rc, out) == (0, "pod/p1\n")
    rc, out, _err = kubectl(
        "get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "jsonpath={.items[*].status.phase}"
    )
    assert (rc, out) == (0, "Running Running")
    started = time.monotonic()
    rc, out, err = kubectl("delete", "pod", "p1")
    # kubectl delete waits until the terminating pod is gone.
    assert (rc, out, err) == (0, 'pod "p1" deleted\n', "") and time.monotonic() - started >= 0.5
    assert server.pods.get(NS, "p1") is None
    rc, _out, err = kubectl("get", "pod", "p1")
    assert (rc, err) == (1, 'Error from server (NotFound): pods "p1" not found\n')
    assert kubectl("delete", "pods", "-l", "app=other")[:2] == (0, 'pod "p2" deleted\n')
    assert server.pods.objects == {}


def test_a_pod_that_never_starts_shows_its_reason(kubectl):
    message = 'failed to pull and unpack image "registry.example/tools:1": not found'
    kubectl.server.pods.behaviour = lambda p: PodBehaviour.waiting("ErrImagePull", message)
    kubectl("apply", "--validate=false", "-f", "-", stdin=manifest())
    rc, _out, err = kubectl("wait", "--for=condition=Ready", "pod/p1", "--timeout=1s")
    assert (rc, err) == (1, "error: timed out waiting for the condition on pods/p1\n")
    rc, out, _err = kubectl("get", "pod", "p1", "-o", "jsonpath={.status.containerStatuses[0].state.waiting}")
    assert rc == 0 and yaml.safe_load(out) == {"reason": "ErrImagePull", "message": message}
    rc, _out, err = kubectl("exec", "p1", "--", "true")
    # kube-apiserver 1.30+ ends the v5 WebSocket itself and reports the kubelet's refusal as an InternalError.
    assert (rc, err) == (1, 'error: Internal error occurred: unable to upgrade connection: container not found ("c")\n')
    assert [(r.upgrade, r.subprotocol, r.status) for r in exec_requests(kubectl.server)] == [
        ("websocket", "v5.channel.k8s.io", 101)
    ]
    # The server's Table, as kubectl prints it: the waiting reason is the STATUS.
    kubectl.server.pods.behaviour = lambda p: PodBehaviour.running()
    kubectl("apply", "--validate=false", "-f", "-", stdin=manifest("p2"))
    kubectl("wait", "--for=condition=Ready", "pod/p2", "--timeout=10s")
    rc, out, _err = kubectl("get", "pods")
    assert rc == 0 and [line.split()[:4] for line in out.splitlines()] == [
        ["NAME", "READY", "STATUS", "RESTARTS"],
        ["p1", "0/1", "ErrImagePull", "0"],
        ["p2", "1/1", "Running", "0"],
    ]
    rc, out, _err = kubectl("get", "pods", "-o", "wide", "-l", "app=none")
    assert (rc, out, _err) == (0, "", f"No resources found in {NS} namespace.\n")


def test_admission_and_rbac_refusals_as_kubectl_prints_them(kubectl):
    server = kubectl.server
    violation = 'privileged (container "c" must not set securityContext.privileged=true)'
    server.pods.behaviour = lambda p: PodBehaviour.forbidden_by_pod_security([violation])
    rc, _out, err = kubectl("apply", "--validate=false", "-f", "-", stdin=manifest())
    assert (rc, err) == (
        1,
        'Error from server (Forbidden): error when creating "STDIN": pods "p1" is forbidden: violates PodSecurity '
        f'"restricted:latest": {violation}\n',
    )
    scc = 'provider "privileged": Forbidden: not usable by user or serviceaccount'
    server.pods.behaviour = lambda p: PodBehaviour.forbidden_by_scc([scc])
    rc, _out, err = kubectl("create", "--validate=false", "-f", "-", stdin=manifest())
    assert (rc, err) == (
        1,
        'Error from server (Forbidden): error when creating "STDIN": pods "p1" is forbidden: unable to validate '
        f"against any security context constraint: {scc}\n",
    )
    server.forbid("create", "pods", NS)
    rc, _out, err = kubectl("create", "--validate=false", "-f", "-", stdin=manifest())
    assert (rc, err) == (
        1,
        'Error from server (Forbidden): error when creating "STDIN": pods is forbidden: User "token-user" cannot '
        f'create resource "pods" in API group "" in the namespace "{NS}"\n',
    )
    assert server.pods.objects == {}


def test_exec_denied_by_rbac(pod):
    pod.server.forbid("create", "pods/exec", NS)
    rc, _out, err = pod("exec", "p1", "--", "true")
    assert (rc, err) == (
        1,
        'Error from server (Forbidden): pods "p1" is forbidden: User "token-user" cannot create resource "pods/exec" '
        f'in API group "" in the namespace "{NS}"\n',
    )


def test_exec_keeps_stdout_and_stderr_apart_and_reports_exit_codes(pod):
    rc, out, err = pod("exec", "p1", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (rc, out, err) == (3, "out\n", "err\ncommand terminated with exit code 3\n")
    assert pod("exec", "p1", "--", "true") == (0, "", "")
    assert pod("exec", "p1", "--", "false") == (1, "", "command terminated with exit code 1\n")
    rc, _out, err = pod("exec", "p1", "--", "sh", "-c", "no-such-command")
    assert rc == 127 and err.endswith("not found\ncommand terminated with exit code 127\n")
    # An executable that does not exist: the runtime cannot start it, kubectl shows its error and exits 1.
    rc, _out, err = pod("exec", "p1", "--", "no-such-command")
    assert rc == 1 and err.startswith(
        "error: Internal error occurred: Internal error occurred: error executing command in container: "
    )
    assert err.endswith('exec: "no-such-command": executable file not found in $PATH: unknown\n')
    rc, _out, err = pod("exec", "p1", "-c", "zz", "--", "true")
    assert (rc, err) == (1, "Error from server (BadRequest): container zz is not valid for pod p1\n")
    rc, _out, err = pod("exec", "p9", "--", "true")
    assert (rc, err) == (1, 'Error from server (NotFound): pods "p9" not found\n')
    used = [(r.method, r.upgrade, r.subprotocol) for r in exec_requests(pod.server) if r.status == 101]
    assert used == [("GET", "websocket", "v5.channel.k8s.io")] * 5


def test_exec_streams_a_large_stdin_and_its_end(pod):
    payload = os.urandom(8 << 20)
    started = time.monotonic()
    rc, out, err = pod("exec", "-i", "p1", "--", "sha256sum", stdin=payload, text=False)
    elapsed = time.monotonic() - started
    assert (rc, err) == (0, b"") and out.split()[0].decode() == hashlib.sha256(payload).hexdigest()
    assert elapsed < 20
    # cat ends only when its stdin does: the v5 CLOSE signal.
    assert pod("exec", "-i", "p1", "--", "cat", stdin="line 1\nline 2") == (0, "line 1\nline 2", "")
    assert pod("exec", "-i", "p1", "--", "wc", "-c", stdin="") == (0, "0\n", "")
    assert {(r.upgrade, r.subprotocol) for r in exec_requests(pod.server)} == {("websocket", "v5.channel.k8s.io")}


def test_several_exec_streams_at_once(pod, tmp_path):
    # Each command waits until all four have started: a server that runs them one by one fails them (exit 9).
    started = tmp_path / "started"
    started.mkdir()
    wait_all = (
        f'touch {started}/$0; for n in $(seq 300); do [ "$(ls {started} | wc -l)" = 4 ] && break; sleep 0.1; done; '
        f'[ "$(ls {started} | wc -l)" = 4 ] || exit 9'
    )

    def one(index):
        script = f"{wait_all}; cat; echo {index} >&2; exit {index}"
        return pod("exec", "-i", "p1", "--", "sh", "-c", script, str(index), stdin=f"in{index}")

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(4)))
    assert results[0] == (0, "in0", "0\n")
    for index in range(1, 4):
        assert results[index] == (index, f"in{index}", f"{index}\ncommand terminated with exit code {index}\n")


def test_kubernetes_core_kubectl_connection_plugin(pod, tmp_path):
    # hack/setup.sh installs it; without it this test fails rather than skips (CI must skip nothing).
    assert (KUBERNETES_CORE / "plugins" / "connection" / "kubectl.py").exists(), (
        "kubernetes.core is not installed in .build/collections: run hack/setup.sh"
    )
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "hosts": {"p1": {}},
                    "vars": {
                        "ansible_connection": "kubernetes.core.kubectl",
                        "ansible_kubectl_namespace": NS,
                        "ansible_kubectl_kubeconfig": str(pod.kubeconfig),
                        "ansible_kubectl_container": "c",
                        "ansible_python_interpreter": "/usr/bin/python3",
                        # Ansible's remote_tmp (~/.ansible/tmp) is expanded by the "pod's" shell: keep it here.
                        "ansible_remote_tmp": str(tmp_path / "remote-tmp"),
                    },
                }
            }
        )
    )
    target = tmp_path / "copied.bin"
    source = tmp_path / "source.bin"
    source.write_bytes(os.urandom(3 << 20))
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        textwrap.dedent(
            f"""\
            - hosts: all
              gather_facts: false
              tasks:
                - ansible.builtin.ping:
                - ansible.builtin.copy:
                    src: {source}
                    dest: {target}
                    mode: "0600"
                - ansible.builtin.command: sh -c 'echo from-the-pod; exit 4'
                  register: result
                  failed_when: result.rc != 4 or result.stdout != 'from-the-pod'
            """
        )
    )
    env = dict(
        os.environ,
        PATH=f"{KUBECTL.parent}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_PIPELINING="false",
    )
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok=3" in proc.stdout and "failed=0" in proc.stdout
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(source.read_bytes()).digest()
    # The modules went to the inventory's remote_tmp, and the exec'd commands' HOME is the server's, not ~.
    assert (tmp_path / "remote-tmp").is_dir()
    assert (pod.server.tmp_path / "pod-home").is_dir()
    requests = exec_requests(pod.server)
    assert requests and {(r.upgrade, r.subprotocol) for r in requests} == {("websocket", "v5.channel.k8s.io")}


def test_label_a_pod(pod):
    assert pod("label", "pod", "p1", "run=r1")[:2] == (0, "pod/p1 labeled\n")
    assert pod.server.pods.get(NS, "p1")["metadata"]["labels"] == {"app": "pinned-images", "run": "r1"}
    assert pod("get", "pods", "-l", "run=r1", "-o", "name")[:2] == (0, "pod/p1\n")
