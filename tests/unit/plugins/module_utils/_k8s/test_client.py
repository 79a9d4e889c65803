# SPDX-License-Identifier: GPL-3.0-or-later
"""_k8s/client with the real ``kubernetes`` client over real HTTP(S) against the fake API server fixture.

No kube-apiserver can be installed here; tests/support/apiserver stands in for it (see its docstring for
what it implements).
"""

from __future__ import annotations

import time

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._k8s import client as _k8s_client
from ansible_collections.pinned.images.plugins.module_utils._k8s.client import K8sClient
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._k8s.objects import clean_object
from ansible_collections.pinned.images.plugins.module_utils._runs.k8s_options import k8s_connection
from fixtures.openshift_objects import MCO_API_VERSION as MCO
from fixtures.openshift_objects import pinned_image_set
from support.ports import free_port

PIS = "PinnedImageSet"
IMG_A = "quay.io/openshift/app-a@sha256:" + "a" * 64
IMG_B = "quay.io/openshift/app-b@sha256:" + "b" * 64


def pis(name="set-a", images=(IMG_A,), labels=None, **spec):
    return pinned_image_set(name, images, labels, **spec)


@pytest.fixture
def client(fake_apiserver, tmp_path):
    c = connect({"host": fake_apiserver.url, "api_key": fake_apiserver.token}, tmpdir=str(tmp_path))
    yield c
    c.close()


def connect(params, **kwargs):
    """A client for module parameters, read as the runs read them."""
    return K8sClient.connect(k8s_connection(params), **kwargs)


# ---------------------------------------------------------------- options and connection


def test_configuration_maps_every_option(tmp_path):
    for name in ("ca.crt", "client.crt", "client.key"):
        (tmp_path / name).write_text("x")
    c = connect(
        {
            "host": "https://api.example.test:6443/",
            "api_key": "abc",
            "validate_certs": False,
            "ca_cert": str(tmp_path / "ca.crt"),
            "client_cert": str(tmp_path / "client.crt"),
            "client_key": str(tmp_path / "client.key"),
            "proxy": "http://proxy.example.test:3128",
        },
        tmpdir=str(tmp_path),
    )
    cfg = c.configuration
    assert cfg.host == "https://api.example.test:6443"
    assert cfg.api_key == {"authorization": "Bearer abc"}
    assert cfg.verify_ssl is False
    assert cfg.ssl_ca_cert == str(tmp_path / "ca.crt")
    assert cfg.cert_file == str(tmp_path / "client.crt")
    assert cfg.key_file == str(tmp_path / "client.key")
    assert cfg.proxy == "http://proxy.example.test:3128"


def test_missing_certificate_file_is_named(tmp_path):
    with pytest.raises(K8sError, match=r"ca_cert file .*nope\.crt does not exist"):
        connect({"host": "https://x.test", "ca_cert": str(tmp_path / "nope.crt")}, tmpdir=str(tmp_path))


def test_kubeconfig_current_context(fake_apiserver, tmp_path):
    fake_apiserver.add(pis())
    with connect({"kubeconfig": str(fake_apiserver.kubeconfig_path)}, tmpdir=str(tmp_path)) as c:
        assert c.get(MCO, PIS, "set-a")["metadata"]["name"] == "set-a"


def test_kubeconfig_context_is_honoured(fake_apiserver, tmp_path):
    params = {"kubeconfig": str(fake_apiserver.kubeconfig_path), "context": "wrong-token"}
    with connect(params, tmpdir=str(tmp_path)) as c:
        with pytest.raises(K8sError) as info:
            c.list(MCO, PIS)
    assert info.value.status == 401
    assert "not-the-token" not in str(info.value)


def test_kubeconfig_as_dict_and_host_override(fake_apiserver, tmp_path):
    config = yaml.safe_load(fake_apiserver.kubeconfig_path.read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{free_port()}"
    # The dict's server is dead; host overrides it while the token still comes from the kubeconfig.
    with connect({"kubeconfig": config, "host": fake_apiserver.url}, tmpdir=str(tmp_path)) as c:
        assert c.list(MCO, PIS) == []
    assert fake_apiserver.requests[-1].user == "token-user"


def test_default_kubeconfig_from_environment(monkeypatch, fake_apiserver, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(fake_apiserver.kubeconfig_path))
    with connect({}, tmpdir=str(tmp_path)) as c:
        assert c.host == fake_apiserver.url
        assert c.list("v1", "Node") == []


def test_no_configuration_at_all_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    with pytest.raises(K8sError, match="no Kubernetes connection configured"):
        connect({}, tmpdir=str(tmp_path))


def test_missing_kubeconfig_file_is_named(tmp_path):
    with pytest.raises(K8sError, match="missing.yaml does not exist"):
        connect({"kubeconfig": str(tmp_path / "missing.yaml")}, tmpdir=str(tmp_path))


def test_unknown_context_is_named(fake_apiserver, tmp_path):
    with pytest.raises(K8sError, match="no-such-context"):
        connect({"kubeconfig": str(fake_apiserver.kubeconfig_path), "context": "no-such-context"}, tmpdir=str(tmp_path))


def test_private_tmpdir_is_removed_on_close(fake_apiserver):
    c = connect({"host": fake_apiserver.url, "api_key": fake_apiserver.token})
    c.list(MCO, PIS)
    tmpdir = c._tmpdir
    import os

    assert os.path.isfile(os.path.join(tmpdir, "discovery-cache.json"))
    c.close()
    assert not os.path.exists(tmpdir)


# ---------------------------------------------------------------- TLS


def test_tls_with_ca_cert(fake_apiserver_tls, tmp_path):
    params = {
        "host": fake_apiserver_tls.url,
        "api_key": fake_apiserver_tls.token,
        "ca_cert": str(fake_apiserver_tls.ca_cert_path),
    }
    with connect(params, tmpdir=str(tmp_path)) as c:
        assert c.list(MCO, PIS) == []


def test_tls_without_ca_fails_with_a_tls_message(fake_apiserver_tls, tmp_path):
    with connect({"host": fake_apiserver_tls.url, "api_key": fake_apiserver_tls.token}, tmpdir=str(tmp_path)) as c:
        with pytest.raises(K8sError) as info:
            c.list(MCO, PIS)
    assert info.value.status == 0
    assert "TLS error" in str(info.value) and fake_apiserver_tls.url in str(info.value)
    assert fake_apiserver_tls.token not in str(info.value)


@pytest.mark.filterwarnings("ignore:Unverified HTTPS request")
def test_tls_validate_certs_false(fake_apiserver_tls, tmp_path):
    params = {"host": fake_apiserver_tls.url, "api_key": fake_apiserver_tls.token, "validate_certs": False}
    with connect(params, tmpdir=str(tmp_path)) as c:
        assert c.list(MCO, PIS) == []


def test_tls_client_certificate(fake_apiserver_tls, tmp_path):
    params = {
        "host": fake_apiserver_tls.url,
        "ca_cert": str(fake_apiserver_tls.ca_cert_path),
        "client_cert": str(fake_apiserver_tls.client_cert_path),
        "client_key": str(fake_apiserver_tls.client_key_path),
    }
    with connect(params, tmpdir=str(tmp_path)) as c:
        assert c.list(MCO, PIS) == []
    assert {r.user for r in fake_apiserver_tls.requests} == {"cert-user"}


def test_tls_kubeconfig_with_certificate_authority(fake_apiserver_tls, tmp_path):
    with connect({"kubeconfig": str(fake_apiserver_tls.kubeconfig_path)}, tmpdir=str(tmp_path)) as c:
        assert c.list(MCO, PIS) == []


# ---------------------------------------------------------------- server-side apply


def test_apply_creates_with_server_side_apply(client, fake_apiserver):
    result = client.apply(pis(labels={"machineconfiguration.openshift.io/role": "worker"}))
    stored = fake_apiserver.get(PIS, "set-a")
    assert stored["spec"]["pinnedImages"] == [{"name": IMG_A}]
    assert result["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    patch = [r for r in fake_apiserver.requests if r.method == "PATCH"]
    assert len(patch) == 1
    assert patch[0].path == "/apis/machineconfiguration.openshift.io/v1/pinnedimagesets/set-a"
    assert patch[0].content_type == "application/apply-patch+yaml"
    assert patch[0].query == {"fieldManager": "pinned-images", "force": "false"}
    managers = [(m["manager"], m["operation"]) for m in stored["metadata"]["managedFields"]]
    assert managers == [("pinned-images", "Apply")]
    # What the client's discovery needs from the server (no OpenAPI document).
    assert [r.path for r in fake_apiserver.requests if r.method == "GET"] == [
        "/version",
        "/apis",
        "/apis/machineconfiguration.openshift.io/v1",
    ]


def test_machine_config_is_validated_against_its_crd(client, fake_apiserver, crd_schemas):
    mc = {
        "apiVersion": MCO,
        "kind": "MachineConfig",
        "metadata": {"name": "99-worker-pins", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"fips": "yes", "config": {"ignition": {"version": "3.2.0"}}},
    }
    with pytest.raises(K8sError) as info:
        client.apply(mc)
    assert info.value.status == 422 and "spec.fips" in str(info.value)
    mc["spec"]["fips"] = False
    assert client.apply(mc)["spec"]["config"] == {"ignition": {"version": "3.2.0"}}


def test_apply_update_and_no_op(client, fake_apiserver):
    first = client.apply(pis())
    second = client.apply(pis(images=(IMG_A, IMG_B)))
    assert second["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert second["metadata"]["generation"] == 2
    assert [i["name"] for i in fake_apiserver.get(PIS, "set-a")["spec"]["pinnedImages"]] == [IMG_A, IMG_B]
    third = client.apply(pis(images=(IMG_A, IMG_B)))
    assert third["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]
    assert clean_object(third) == clean_object(second)
    # Dropping an image this manager applied removes it.
    client.apply(pis(images=(IMG_B,)))
    assert fake_apiserver.get(PIS, "set-a")["spec"]["pinnedImages"] == [{"name": IMG_B}]


def test_apply_custom_field_manager_and_force(client, fake_apiserver):
    client.apply(pis(), field_manager="someone", force_conflicts=True)
    request = [r for r in fake_apiserver.requests if r.method == "PATCH"][-1]
    assert request.query == {"fieldManager": "someone", "force": "true"}


def test_dry_run_apply_leaves_nothing(client, fake_apiserver):
    result = client.apply(pis(), dry_run=True)
    assert result["spec"]["pinnedImages"] == [{"name": IMG_A}]
    assert fake_apiserver.get(PIS, "set-a") is None
    assert [r.query.get("dryRun") for r in fake_apiserver.requests if r.method == "PATCH"] == ["All"]
    client.apply(pis())
    before = fake_apiserver.get(PIS, "set-a")
    would = client.apply(pis(images=(IMG_B,)), dry_run=True)
    assert would["spec"]["pinnedImages"] == [{"name": IMG_B}]
    assert fake_apiserver.get(PIS, "set-a") == before


def test_conflict_names_the_owner_and_field(client, fake_apiserver):
    fake_apiserver.add(pis(labels={"team": "gitops"}), manager="argocd", operation="Apply")
    with pytest.raises(K8sError) as info:
        client.apply(pis(labels={"team": "platform"}))
    error = info.value
    assert error.status == 409
    assert "argocd" in str(error)
    assert ".metadata.labels.team" in str(error)
    assert "force_conflicts" in str(error)
    assert fake_apiserver.get(PIS, "set-a")["metadata"]["labels"] == {"team": "gitops"}
    client.apply(pis(labels={"team": "platform"}), force_conflicts=True)
    stored = fake_apiserver.get(PIS, "set-a")
    assert stored["metadata"]["labels"] == {"team": "platform"}
    managers = fake_apiserver.managers(PIS, "set-a")
    assert managers[("pinned-images", "Apply")]["fieldsV1"]["f:metadata"] == {"f:labels": {"f:team": {}}}
    assert "f:metadata" not in managers[("argocd", "Apply")]["fieldsV1"]


def test_list_map_items_of_two_managers_do_not_conflict(client, fake_apiserver, crd_schemas):
    fake_apiserver.add(pis(images=(IMG_A,)), manager="argocd", operation="Apply")
    result = client.apply(pis(images=(IMG_B,)))
    assert [i["name"] for i in result["spec"]["pinnedImages"]] == [IMG_A, IMG_B]


def test_invalid_object_is_rejected_with_422(client, fake_apiserver):
    with pytest.raises(K8sError) as info:
        client.apply(pis(images=("quay.io/openshift/app:latest",)))
    assert info.value.status == 422
    assert "spec.pinnedImages[0].name" in str(info.value)
    assert "sha256" in str(info.value)
    assert fake_apiserver.get(PIS, "set-a") is None


def test_unknown_fields_are_pruned_with_a_warning(client, fake_apiserver, crd_schemas):
    client.apply(pis(machineConfigPoolSelector={"matchLabels": {"a": "b"}}))
    assert "machineConfigPoolSelector" not in fake_apiserver.get(PIS, "set-a")["spec"]
    assert client.warnings == ['unknown field "spec.machineConfigPoolSelector"']


# ---------------------------------------------------------------- get, list, delete, merge patch


def test_get_absent_is_none_and_list_filters_by_labels(client, fake_apiserver):
    assert client.get(MCO, PIS, "nope") is None
    fake_apiserver.add(pis("w", labels={"machineconfiguration.openshift.io/role": "worker"}))
    fake_apiserver.add(pis("m", labels={"machineconfiguration.openshift.io/role": "master"}))
    fake_apiserver.add(pis("x"))
    assert [o["metadata"]["name"] for o in client.list(MCO, PIS)] == ["m", "w", "x"]
    role = "machineconfiguration.openshift.io/role"
    assert [o["metadata"]["name"] for o in client.list(MCO, PIS, label_selector={role: "worker"})] == ["w"]
    assert [o["metadata"]["name"] for o in client.list(MCO, PIS, label_selector=f"{role} in (master,worker)")] == [
        "m",
        "w",
    ]
    assert [o["metadata"]["name"] for o in client.list(MCO, PIS, label_selector=f"!{role}")] == ["x"]
    assert fake_apiserver.requests[-1].query == {"labelSelector": f"!{role}"}


def test_list_nodes_fills_in_kind(client, fake_apiserver):
    fake_apiserver.add(
        {"kind": "Node", "metadata": {"name": "worker-0", "labels": {"node-role.kubernetes.io/worker": ""}}}
    )
    nodes = client.list("v1", "Node")
    assert [(n["apiVersion"], n["kind"], n["metadata"]["name"]) for n in nodes] == [("v1", "Node", "worker-0")]


def test_delete(client, fake_apiserver):
    fake_apiserver.add(pis())
    assert client.delete(MCO, PIS, "set-a", dry_run=True) is True
    assert fake_apiserver.get(PIS, "set-a") is not None
    assert client.delete(MCO, PIS, "set-a") is True
    assert fake_apiserver.get(PIS, "set-a") is None
    assert client.delete(MCO, PIS, "set-a") is False
    assert [r.method for r in fake_apiserver.requests if r.method == "DELETE"] == ["DELETE"] * 3


def test_patch_merge_annotates_nodes(client, fake_apiserver):
    fake_apiserver.add({"kind": "Node", "metadata": {"name": "worker-0", "annotations": {"keep": "me", "drop": "me"}}})
    result = client.annotate("v1", "Node", "worker-0", {"pinned.images/state": "prefetched", "drop": None})
    assert result["metadata"]["annotations"] == {"keep": "me", "pinned.images/state": "prefetched"}
    assert fake_apiserver.get("Node", "worker-0")["metadata"]["annotations"] == result["metadata"]["annotations"]
    request = [r for r in fake_apiserver.requests if r.method == "PATCH"][-1]
    assert request.content_type == "application/merge-patch+json"
    assert request.query == {"fieldManager": "pinned-images"}
    client.patch_merge("v1", "Node", "worker-0", {"metadata": {"annotations": {"keep": "x"}}}, dry_run=True)
    assert fake_apiserver.get("Node", "worker-0")["metadata"]["annotations"]["keep"] == "me"
    with pytest.raises(K8sError) as info:
        client.annotate("v1", "Node", "no-such-node", {"a": "b"})
    assert info.value.status == 404


# ---------------------------------------------------------------- errors


def test_forbidden_names_verb_and_resource(client, fake_apiserver):
    fake_apiserver.forbid("patch", "pinnedimagesets")
    with pytest.raises(K8sError) as info:
        client.apply(pis())
    assert info.value.status == 403
    message = str(info.value)
    assert "may not patch pinnedimagesets.machineconfiguration.openshift.io" in message
    assert "PinnedImageSet/set-a" in message


def test_forbidden_list_nodes(client, fake_apiserver):
    fake_apiserver.forbid("list", "nodes")
    with pytest.raises(K8sError, match=r"may not list nodes \(list Node objects\)") as info:
        client.list("v1", "Node")
    assert info.value.status == 403


def test_apply_that_creates_needs_create(client, fake_apiserver, crd_schemas):
    fake_apiserver.forbid("create", "pinnedimagesets")
    with pytest.raises(K8sError) as info:
        client.apply(pis())
    assert info.value.status == 403 and "cannot create" in str(info.value)
    fake_apiserver.add(pis())
    client.apply(pis(images=(IMG_B,)))  # an update needs only patch
    # Nobody owned IMG_A (seeded without a manager), so server-side apply keeps it next to the applied item.
    assert fake_apiserver.get(PIS, "set-a")["spec"]["pinnedImages"] == [{"name": IMG_A}, {"name": IMG_B}]


def test_unknown_kind_says_crd_is_missing(client, fake_apiserver):
    fake_apiserver.remove_kind(PIS)
    with pytest.raises(K8sError) as info:
        client.apply(pis())
    assert info.value.status == 404
    assert "does not serve kind PinnedImageSet in machineconfiguration.openshift.io/v1" in str(info.value)
    assert "CustomResourceDefinition" in str(info.value)
    with pytest.raises(K8sError, match="does not serve kind Frobnicator"):
        client.get("v1", "Frobnicator", "x")


def test_bad_token_is_401_and_never_shown(fake_apiserver, tmp_path):
    secret = "s3cr3t-wrong-token-value"
    with connect({"host": fake_apiserver.url, "api_key": secret}, tmpdir=str(tmp_path)) as c:
        with pytest.raises(K8sError) as info:
            c.list(MCO, PIS)
    error = info.value
    assert error.status == 401
    assert "unauthorized" in str(error) and fake_apiserver.url in str(error)
    for text in (str(error), repr(error), repr(error.causes), str(error.reason)):
        assert secret not in text
    assert fake_apiserver.requests and all(r.user is None for r in fake_apiserver.requests)


def test_secrets_are_scrubbed_from_messages(tmp_path):
    c = connect({"host": "http://127.0.0.1:1", "api_key": "tok-123456"}, tmpdir=str(tmp_path))
    assert c._scrub("token tok-123456 and header Bearer tok-123456") == "token ******** and header ********"
    c.close()


def test_url_user_info_and_proxy_password_are_scrubbed(tmp_path):
    proxy = "http://proxy-user:pr0xy%2Fpa55@127.0.0.1:1"
    with connect({"host": "http://127.0.0.1:1", "api_key": "tok-123456", "proxy": proxy}, tmpdir=str(tmp_path)) as c:
        text = c._scrub(f"via {proxy} (pr0xy/pa55, pr0xy%2Fpa55) to https://u:p@host.test/x, mail a@b.test")
    assert text == "via http://127.0.0.1:1 (********, ********) to https://host.test/x, mail a@b.test"


def test_proxy_password_never_reaches_a_connection_error(fake_apiserver, tmp_path):
    proxy = f"http://proxy-user:pr0xy-pa55word@127.0.0.1:{free_port()}"
    params = {"host": fake_apiserver.url, "api_key": fake_apiserver.token, "proxy": proxy}
    with connect(params, tmpdir=str(tmp_path)) as c:
        with pytest.raises(K8sError) as info:
            c.list(MCO, PIS)
    assert info.value.status == 0 and "cannot reach" in str(info.value)
    for text in (str(info.value), repr(info.value), repr(info.value.args)):
        assert "pr0xy-pa55word" not in text and "proxy-user:" not in text and fake_apiserver.token not in text


def test_dict_kubeconfig_secrets_are_scrubbed_from_load_errors(fake_apiserver, tmp_path, monkeypatch):
    config = yaml.safe_load(fake_apiserver.kubeconfig_path.read_text())
    config["users"][0]["user"]["client-key-data"] = "a2V5LWRhdGEtc2VjcmV0"

    def quoting_loader(config_dict, **kwargs):
        # A loader that quotes the document in its error, as a YAML/JSON parser might.
        raise ConfigException(f"cannot use {config_dict}")

    _k8s_client.require_kubernetes()
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    monkeypatch.setattr(k8s_config, "load_kube_config_from_dict", quoting_loader)
    with pytest.raises(K8sError, match="cannot load the kubeconfig given as a dict") as info:
        connect({"kubeconfig": config}, tmpdir=str(tmp_path))
    for secret in (fake_apiserver.token, "not-the-token", "a2V5LWRhdGEtc2VjcmV0"):
        assert secret not in str(info.value)
    assert "fake-admin" in str(info.value)


def test_connection_refused_names_the_host(tmp_path):
    port = free_port()
    host = f"http://admin:hunter2@127.0.0.1:{port}"
    with connect({"host": host, "api_key": "tok"}, tmpdir=str(tmp_path)) as c:
        with pytest.raises(K8sError) as info:
            c.get(MCO, PIS, "x")
    assert info.value.status == 0
    assert f"cannot reach the Kubernetes API server at http://127.0.0.1:{port}: connection refused" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_server_version(client):
    assert client.server_version()["gitVersion"] == "v1.31.0-fake"


# ---------------------------------------------------------------- every call ends

# Bounds for "ended within the timeout", not benchmarks: generous against a loaded machine.
MARGIN = 5.0


def timed_failure(call):
    start = time.monotonic()
    with pytest.raises(K8sError) as info:
        call()
    return info.value, time.monotonic() - start


@pytest.mark.parametrize("timeout", [1, 2.5])
def test_a_server_that_never_answers_ends_within_the_timeout(silent_listener, tmp_path, timeout):
    with connect({"host": silent_listener, "api_key": "tok", "request_timeout": timeout}, tmpdir=str(tmp_path)) as c:
        error, elapsed = timed_failure(lambda: c.list("v1", "Node"))
    assert (
        str(error)
        == f"the Kubernetes API server at {silent_listener} did not answer within {timeout:g} s (request_timeout)"
    )
    assert error.status == 0 and error.reason == "Timeout"
    assert elapsed < timeout + MARGIN


@pytest.mark.parametrize("verb", ["get", "list", "apply", "annotate", "delete"])
def test_a_server_that_hangs_after_discovery_ends_within_the_timeout(fake_apiserver, tmp_path, verb):
    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    method = {"get": "GET", "list": "GET", "apply": "PATCH", "annotate": "PATCH", "delete": "DELETE"}[verb]
    fake_apiserver.hold(method, "/api/v1/nodes")
    params = {"host": fake_apiserver.url, "api_key": fake_apiserver.token, "request_timeout": 1.5}
    calls = {
        "get": lambda c: c.get("v1", "Node", "n1"),
        "list": lambda c: c.list("v1", "Node"),
        "apply": lambda c: c.apply(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}}}
        ),
        "annotate": lambda c: c.annotate("v1", "Node", "n1", {"a": "b"}),
        "delete": lambda c: c.delete("v1", "Node", "n1"),
    }
    with connect(params, tmpdir=str(tmp_path)) as c:
        error, elapsed = timed_failure(lambda: calls[verb](c))
    assert "did not answer within 1.5 s" in str(error)
    assert elapsed < 1.5 + MARGIN
    # One attempt only: a request that timed out is not sent again.
    held = [r for r in fake_apiserver.requests if r.method == method and r.path.startswith("/api/v1/nodes")]
    assert len(held) == 1


def test_refused_connections_are_retried_within_the_same_deadline(tmp_path, monkeypatch):
    port = free_port()
    sleeps = []
    monkeypatch.setattr(_k8s_client.time, "sleep", sleeps.append)
    with connect({"host": f"http://127.0.0.1:{port}", "api_key": "tok"}, tmpdir=str(tmp_path)) as c:
        with pytest.raises(K8sError, match="connection refused"):
            c.list("v1", "Node")
    assert sleeps == [_k8s_client.RETRY_DELAY, 2 * _k8s_client.RETRY_DELAY]


def test_a_server_that_comes_back_is_reached_by_a_retry(fake_apiserver, tmp_path, monkeypatch):
    from kubernetes.client import rest

    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    send = rest.RESTClientObject.request
    refused = []
    _k8s_client.require_kubernetes()

    def refuse_once(self, method, url, *args, **kwargs):
        if not refused:
            refused.append(url)
            raise _k8s_client.urllib3.exceptions.NewConnectionError(None, "Connection refused")
        return send(self, method, url, *args, **kwargs)

    monkeypatch.setattr(rest.RESTClientObject, "request", refuse_once)
    monkeypatch.setattr(_k8s_client.time, "sleep", lambda _: None)
    with connect({"host": fake_apiserver.url, "api_key": fake_apiserver.token}, tmpdir=str(tmp_path)) as c:
        assert [n["metadata"]["name"] for n in c.list("v1", "Node")] == ["n1"]
    assert len(refused) == 1


@pytest.mark.parametrize("value", [0, -1, "soon", float("inf")])
def test_bad_timeouts_are_named(tmp_path, value):
    with pytest.raises(K8sError, match=r"request_timeout must be a positive number of seconds, got"):
        connect({"host": "http://127.0.0.1:1", "request_timeout": value}, tmpdir=str(tmp_path))


# ---------------------------------------------------------------- 409 for a stale resourceVersion


def test_a_stale_resource_version_is_a_conflict_on_both_write_paths(client, fake_apiserver):
    fake_apiserver.add(pis())
    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    stale_set = fake_apiserver.get(PIS, "set-a")["metadata"]["resourceVersion"]
    stale_node = fake_apiserver.get("Node", "n1")["metadata"]["resourceVersion"]
    fake_apiserver.add(pis(images=(IMG_A, IMG_B)))
    fake_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"x": "y"}}})
    body = pis(images=(IMG_B,))
    body["metadata"]["resourceVersion"] = stale_set
    with pytest.raises(K8sError) as info:
        client.apply(body)
    assert info.value.status == 409 and info.value.reason == "Conflict"
    assert str(info.value) == (
        "conflict: cannot server-side apply PinnedImageSet/set-a: Operation cannot be fulfilled on "
        'pinnedimagesets.machineconfiguration.openshift.io "set-a": the object has been modified; please apply your '
        "changes to the latest version and try again"
    )
    with pytest.raises(K8sError) as info:
        client.annotate("v1", "Node", "n1", {"a": "b"}, resource_version=stale_node)
    assert info.value.status == 409 and 'nodes "n1": the object has been modified' in str(info.value)
    # Nothing was written; with the current version the same write goes through.
    assert "annotations" not in fake_apiserver.get("Node", "n1")["metadata"]
    current = fake_apiserver.get("Node", "n1")["metadata"]["resourceVersion"]
    client.annotate("v1", "Node", "n1", {"a": "b"}, resource_version=current)
    assert fake_apiserver.get("Node", "n1")["metadata"]["annotations"] == {"a": "b"}


def test_create_posts_the_object_and_a_second_create_is_the_apis_409(client, fake_apiserver):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "img"}]},
    }
    created = client.create(pod)
    assert created["metadata"]["uid"] and fake_apiserver.pods.get("ns", "p1") is not None
    posts = [r for r in fake_apiserver.requests if r.method == "POST"]
    assert [r.path for r in posts] == ["/api/v1/namespaces/ns/pods"]
    with pytest.raises(K8sError) as info:
        client.create(pod)
    assert info.value.status == 409 and info.value.message.startswith("conflict: cannot create Pod/p1 in namespace ns")
    with pytest.raises(K8sError, match="create needs apiVersion, kind and metadata.name"):
        client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {}})
