# SPDX-License-Identifier: GPL-3.0-or-later
"""_runs/options: the shared argument specs and their readers, and Problems."""

from __future__ import annotations

import socket

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DropinSettings
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    Problems,
    RegistryOptions,
    RuntimeOptions,
    cri_socket,
    dropin_settings,
    node_params,
    selected_images,
)

IMAGE = "quay.io/openshift/app-a@sha256:" + "a" * 64


def test_problems_raise_one_error_as_it_was_and_several_as_one():
    problems = Problems()
    problems.raise_any()
    problems.at_least({"concurrency": 0}, "concurrency", 1)
    with pytest.raises(CollectionError, match="^concurrency must be at least 1, got 0$"):
        problems.raise_any()
    problems.above_zero({"timeout": 0.0}, "timeout")
    assert problems.attempt(lambda: 7) == 7

    def bad():
        raise K8sError("unreachable", status=0)

    assert problems.attempt(bad) is None
    with pytest.raises(CollectionError) as info:
        problems.raise_any()
    assert info.value.problems == [
        "concurrency must be at least 1, got 0",
        "timeout must be above 0, got 0.0",
        "unreachable",
    ]
    only = Problems()
    only.attempt(bad)
    with pytest.raises(K8sError):
        only.raise_any()


def test_the_registry_options_read_the_pull_secret_and_registries_conf(tmp_path):
    auth = tmp_path / "auth.json"
    auth.write_text('{"auths": {"quay.io": {"auth": "dXNlcjpzM2NyZXQ="}}}')
    conf = tmp_path / "registries.conf"
    conf.write_text("")
    problems = Problems()
    options = RegistryOptions.from_params(
        dict(
            auth_file=str(auth),
            registries_conf=str(conf),
            registry_mirrors=None,
            registry_certs_dirs=["/certs"],
            registry_timeout=5.0,
        ),
        problems,
    )
    problems.raise_any()
    assert options is not None and options.certs_dirs == ("/certs",) and options.timeout == 5.0
    assert "s3cret" in options.docker_config.secrets()
    broken = Problems()
    assert (
        RegistryOptions.from_params(
            dict(
                auth_file=str(tmp_path / "missing.json"),
                registries_conf=str(conf),
                registry_mirrors=None,
                registry_certs_dirs=[],
                registry_timeout=0,
            ),
            broken,
        )
        is None
    )
    assert len(broken.errors) == 2 and str(broken.errors[0]) == "registry_timeout must be above 0, got 0"


def test_the_selection_is_empty_for_absent_and_validated_for_present():
    image = "quay.io/a/b@sha256:" + "a" * 64
    absent = dict(
        state="absent", images=[image], sets=None, pools=None, node_labels=None, require_digest=True, allow_empty=False
    )
    assert selected_images(absent, lambda names, require_digest: names, "remove the pins") == ([], [])
    seen = []
    present = dict(absent, state="present")
    assert selected_images(
        present, lambda names, require_digest: seen.append(require_digest) or names, "remove the pins"
    ) == ([image], [])
    assert seen == [True]


def test_an_empty_selection_fails_naming_what_it_would_remove_unless_allowed():
    empty = dict(
        state="present", images=[], sets=None, pools=None, node_labels=None, require_digest=True, allow_empty=False
    )
    with pytest.raises(CollectionError) as info:
        selected_images(empty, lambda names, require_digest: names, "remove the drop-in /d")
    assert "that would remove the drop-in /d; nothing was changed" in info.value.message
    assert selected_images(dict(empty, allow_empty=True), lambda names, require_digest: names, "x") == ([], [])


def test_node_params_put_the_node_paths_under_host_root_and_leave_the_rest(tmp_path):
    params = dict(
        host_root=str(tmp_path) + "/",
        cri_socket="unix:///run/containerd/containerd.sock",
        auth_file="/run/secret.json",
        registries_conf=None,
        registry_certs_dirs=["/etc/containers/certs.d"],
        dropin_path="/etc/crio/crio.conf.d/50-pinned-images",
        images=["/not/a/path"],
    )
    mapped = node_params(params, ("dropin_path",))
    assert mapped == dict(
        params,
        host_root=str(tmp_path),
        cri_socket=f"unix://{tmp_path}/run/containerd/containerd.sock",
        auth_file=f"{tmp_path}/run/secret.json",
        registry_certs_dirs=[f"{tmp_path}/etc/containers/certs.d"],
        dropin_path=f"{tmp_path}/etc/crio/crio.conf.d/50-pinned-images",
    )
    assert node_params(dict(params, host_root=None), ("dropin_path",)) == dict(params, host_root=None)
    with pytest.raises(CollectionError, match="host_root must be an absolute path"):
        node_params(dict(params, host_root="host"), ())


def test_the_runtime_options_are_read_once_with_the_node_paths_under_host_root(tmp_path):
    params = node_params(
        dict(
            host_root=str(tmp_path),
            cri_socket="/run/containerd/containerd.sock",
            cri_connect_timeout=2.0,
            cri_timeout=9.0,
        ),
        (),
    )
    assert RuntimeOptions.from_params(params) == RuntimeOptions(
        cri_socket=f"{tmp_path}/run/containerd/containerd.sock",
        cri_connect_timeout=2.0,
        cri_timeout=9.0,
        containerd_namespace=None,
        host_root=str(tmp_path),
    )
    assert RuntimeOptions.from_params(dict(params, containerd_namespace="k8s.io")).containerd_namespace == "k8s.io"


def test_the_drop_in_options_are_read_alike_for_every_module_that_writes_it(tmp_path):
    params = node_params(
        dict(
            host_root=str(tmp_path),
            dropin_path="/etc/crio/crio.conf.d/50-pinned-images",
            crio_reload="signal",
            crio_pid_file="/run/crio/crio.pid",
            settle_timeout=3.0,
        ),
        ("dropin_path", "crio_pid_file"),
    )
    assert dropin_settings(params, force=True) == DropinSettings(
        path=f"{tmp_path}/etc/crio/crio.conf.d/50-pinned-images",
        reload="signal",
        pid_file=f"{tmp_path}/run/crio/crio.pid",
        force=True,
        settle_timeout=3.0,
    )
    assert dropin_settings(params).force is False


def test_the_default_cri_socket_is_found_under_host_root(tmp_path):
    with pytest.raises(
        CollectionError, match=f"no CRI socket found under host_root {tmp_path} .*{tmp_path}/run/containerd"
    ):
        cri_socket(RuntimeOptions(cri_socket=None, host_root=str(tmp_path)))
    (tmp_path / "run/containerd").mkdir(parents=True)
    path = tmp_path / "run/containerd/containerd.sock"
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(path))
        assert cri_socket(RuntimeOptions(cri_socket=None, host_root=str(tmp_path))) == str(path)
    finally:
        listener.close()
    assert cri_socket(RuntimeOptions(cri_socket="/x.sock", host_root=str(tmp_path))) == "/x.sock"
    assert cri_socket(RuntimeOptions(cri_socket=None, host_root=None)) is None


def test_cri_os_default_socket_is_found_through_debians_absolute_var_run_link(tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("/run")
    (tmp_path / "run/crio").mkdir(parents=True)
    path = tmp_path / "run/crio/crio.sock"
    path.write_text("")
    assert cri_socket(RuntimeOptions(cri_socket=None, host_root=str(tmp_path))) == str(path)


def test_the_default_pull_secret_and_registries_conf_are_the_hosts(tmp_path):
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet/config.json").write_text('{"auths": {"quay.io": {"auth": "dXNlcjpzM2NyZXQ="}}}')
    (tmp_path / "etc/containers").mkdir(parents=True)
    (tmp_path / "etc/containers/registries.conf").write_text('unqualified-search-registries = ["quay.io"]\n')
    problems = Problems()
    options = RegistryOptions.from_params(
        dict(
            host_root=str(tmp_path),
            auth_file=None,
            registries_conf=None,
            registry_mirrors=None,
            registry_certs_dirs=[],
            registry_timeout=5.0,
        ),
        problems,
    )
    problems.raise_any()
    assert options is not None and "s3cret" in options.docker_config.secrets()
    assert options.registries.files == [str(tmp_path / "etc/containers/registries.conf")]
