# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry.containerd_hosts: finding config_path, the directory lookup, bad input, the pull sources and the
credentials per host; manifests read through hosts.toml from real registries (TLS with the CA named in hosts.toml,
a client pair, a token server, override_path). containerd's own table is in tests/unit/upstream."""

from __future__ import annotations

import json

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import parse_docker_config
from ansible_collections.pinned.images.plugins.module_utils._registry.client import HostEndpoint, RegistryClient
from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import (
    DEFAULT_CONFIG_PATH_2_2,
    ContainerdHosts,
    ContainerdHostsError,
    RegistryHostsConfig,
    configure_hosts,
    containerd_credentials,
    endpoints,
    find_host_dir,
    from_config_file,
    from_cri_status,
    locate,
    pull_mode,
    read_config,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import RegistryTLSError
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import load_registries_conf
from support.registries import PASSWORD, USER, registry_lab  # noqa: F401 pylint: disable=unused-import

DIGEST = "sha256:" + "c" * 64


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- where config_path is ------------------------------------------------------------------------------------


def test_status_of_containerd_1_7_names_config_path():
    info = {"config": json.dumps({"registry": {"configPath": "/etc/containerd/certs.d:/opt/certs.d"}})}
    assert from_cri_status(info) == RegistryHostsConfig(("/etc/containerd/certs.d", "/opt/certs.d"), "CRI Status")


def test_cri_registry_headers_go_to_every_host_before_its_own(tmp_path):
    info = {"config": json.dumps({"registry": {"configPath": str(tmp_path), "headers": {"X-Site": ["a", "b"]}}})}
    write(
        tmp_path / "reg.example" / "hosts.toml",
        '[host."https://m.local"]\n[host."https://m.local".header]\nX-Site = "c"\nX-Mirror = "m"\n',
    )
    no_overrides = load_registries_conf(None, None, default_path="", default_conf_d="")
    sources = ContainerdHosts(from_cri_status(info), no_overrides).pull_sources(
        parse_image_ref(f"reg.example/a@{DIGEST}")
    )
    mirror = (("X-Site", ("a", "b", "c")), ("X-Mirror", ("m",)))
    assert [s.endpoint.headers for s in sources] == [mirror, (("X-Site", ("a", "b")),)]
    with pytest.raises(ContainerdHostsError, match="headers: must map each header name to a list of strings"):
        from_cri_status({"config": json.dumps({"registry": {"headers": {"X": "not a list"}}})})


def test_status_with_deprecated_mirrors_warns():
    info = {
        "config": json.dumps(
            {
                "registry": {
                    "configPath": "",
                    "mirrors": {"docker.io": {"endpoint": ["x"]}},
                    "configs": {"reg.example": {"tls": {"ca_file": "/ca.crt"}}},
                }
            }
        )
    }
    found = from_cri_status(info)
    assert found.roots == ()
    assert "deprecated registry.mirrors" in found.warnings[0] and "cannot follow" in found.warnings[0]
    assert "deprecated registry.configs" in found.warnings[1]
    # With config_path set, containerd ignores the mirrors too (but still takes credentials from configs).
    info = {"config": json.dumps({"registry": {"configPath": "/etc/c", "mirrors": {"r": {}}, "configs": {"r": {}}}})}
    assert [w.split(" sets ")[1][:35] for w in from_cri_status(info).warnings] == [
        "the deprecated registry.configs (TL"
    ]


def test_status_of_containerd_2_has_no_registry():
    assert from_cri_status({"config": json.dumps({"containerd": {"snapshotter": "overlayfs"}})}) is None
    assert from_cri_status({}) is None


@pytest.mark.parametrize(
    "text, roots",
    [
        (
            'version = 3\n[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/etc/containerd/certs.d"\n',
            ("/etc/containerd/certs.d",),
        ),
        ('version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\nconfig_path = "/a"\n', ("/a",)),
        (
            'version = 3\n[plugins."io.containerd.cri.v1.images"]\nuse_local_image_pull = true\n'
            '[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/a:/b"\n',
            ("/a", "/b"),
        ),
        ("version = 3\n", ()),
        ('[plugins.cri.registry]\nconfig_path = "/v1"\n', ("/v1",)),
    ],
)
def test_config_file_versions(tmp_path, text, roots):
    path = write(tmp_path / "config.toml", text)
    assert from_config_file(str(path), "2.1.9").roots == roots


def test_config_file_list_under_the_transfer_service_is_one_directory(tmp_path):
    path = write(
        tmp_path / "config.toml",
        'version = 3\n[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/a:/b"\n',
    )
    found = from_config_file(str(path), "2.1.9")
    assert found.roots == ("/a:/b",)
    assert "#12415" in found.warnings[0]


IMAGES = '[plugins."io.containerd.cri.v1.images"]\n'
LIST = '[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/a:/b"\n'


@pytest.mark.parametrize(
    "text, version, mode, reason",
    [
        ("version = 3\n" + LIST, "2.1.9", "transfer", "containerd 2.1.9 pulls through the transfer service"),
        ("version = 3\n" + LIST, "2.0.5", "local", "containerd 2.0.5 pulls locally"),
        ("version = 2\n", "1.7.24", "local", "containerd 1.7.24 pulls locally"),
        ("version = 3\n" + IMAGES + "use_local_image_pull = true\n" + LIST, "2.2.4", "local", "use_local_image_pull"),
        # EKS AL2023's nodeadm template.
        ("version = 3\n" + IMAGES + "discard_unpacked_layers = true\n" + LIST, "2.2.4", "local", "discard_unpacked"),
        ("version = 3\n" + IMAGES + "disable_snapshot_annotations = false\n", "2.1.9", "local", "disable_snapshot"),
        ("version = 3\n" + IMAGES + "disable_snapshot_annotations = true\n", "2.1.9", "transfer", "transfer"),
        ("version = 3\n" + IMAGES + "max_concurrent_downloads = 5\n", "2.1.9", "local", "max_concurrent_downloads"),
        ("version = 3\n" + IMAGES + "max_concurrent_downloads = 3\n", "2.1.9", "transfer", "transfer"),
        ("version = 3\n" + IMAGES + "image_pull_with_sync_fs = true\n", "2.1.9", "local", "image_pull_with_sync_fs"),
        (
            'version = 3\n[plugins."io.containerd.cri.v1.images".registry.mirrors."docker.io"]\nendpoint = ["https://m"]\n',
            "2.1.9",
            "local",
            "registry.mirrors set",
        ),
        # A version 2 config that containerd 2.x migrates: its containerd table's settings count.
        (
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndiscard_unpacked_layers = true\n',
            "2.1.9",
            "local",
            "discard_unpacked_layers = true",
        ),
        # use_local_image_pull is not migrated from a version 2 config.
        ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nuse_local_image_pull = true\n', "2.1.9", "transfer", ""),
    ],
)
def test_pull_mode_follows_containerds_local_pull_triggers(tmp_path, text, version, mode, reason):
    data, _files = read_config(str(write(tmp_path / "config.toml", text)))
    assert pull_mode(data, version)[0] == mode
    assert reason in pull_mode(data, version)[1]
    found = from_config_file(str(tmp_path / "config.toml"), version)
    assert found.pull_mode == mode


def test_a_list_is_split_only_when_containerd_pulls_locally(tmp_path):
    transfer = from_config_file(str(write(tmp_path / "t.toml", "version = 3\n" + LIST)), "2.3.0")
    assert (transfer.roots, transfer.pull_mode) == (("/a:/b",), "transfer")
    assert "pulls every image from its own registry" in transfer.warnings[0]
    eks = from_config_file(
        str(write(tmp_path / "eks.toml", "version = 3\n" + IMAGES + "discard_unpacked_layers = true\n" + LIST)), "2.2.4"
    )
    assert (eks.roots, eks.pull_mode, eks.warnings) == (("/a", "/b"), "local", ())
    old = from_config_file(str(write(tmp_path / "old.toml", "version = 3\n" + LIST)), "2.0.5")
    assert old.roots == ("/a", "/b")


def test_imports_are_merged_under_the_host_root(tmp_path):
    """Talos: /etc/cri/containerd.toml imports /etc/cri/conf.d/cri.toml, which names the hosts directory."""
    root = tmp_path / "host"
    main = write(
        root / "etc/cri/containerd.toml",
        'version = 3\nimports = ["/etc/cri/conf.d/cri.toml", "missing.toml"]\n'
        + IMAGES
        + 'snapshotter = "overlayfs"\n',
    )
    write(
        root / "etc/cri/conf.d/cri.toml",
        "version = 3\n" + IMAGES + "use_local_image_pull = true\ndiscard_unpacked_layers = true\n"
        '[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/etc/cri/conf.d/hosts"\n',
    )
    found = from_config_file(str(main), "2.1.6", root=str(root))
    assert found.roots == ("/etc/cri/conf.d/hosts",) and found.pull_mode == "local"
    assert found.files == (str(main), str(root / "etc/cri/conf.d/cri.toml"))
    data, _files = read_config(str(main), str(root))
    assert data["plugins"]["io.containerd.cri.v1.images"]["snapshotter"] == "overlayfs"
    # A glob, relative to the importing file (Bottlerocket's config.d/*.toml), later files last.
    write(root / "etc/containerd/config.d/10-a.toml", IMAGES + 'snapshotter = "a"\n')
    write(root / "etc/containerd/config.d/20-b.toml", IMAGES + 'snapshotter = "b"\n')
    glob_main = write(root / "etc/containerd/config.toml", 'version = 3\nimports = ["config.d/*.toml"]\n')
    data, files = read_config(str(glob_main), str(root))
    assert data["plugins"]["io.containerd.cri.v1.images"]["snapshotter"] == "b" and len(files) == 3
    with pytest.raises(ContainerdHostsError, match="imports must be a list"):
        read_config(str(write(root / "bad.toml", 'imports = "x"\n')))


def test_missing_config_file_is_containerds_default(tmp_path):
    assert from_config_file(str(tmp_path / "absent.toml"), "2.1.9").roots == ()
    # 2.2's default is a list, which its transfer service takes as one name (see the test above).
    assert from_config_file(str(tmp_path / "absent.toml"), "v2.2.1").roots == (DEFAULT_CONFIG_PATH_2_2,)


@pytest.mark.parametrize(
    "text, named",
    [
        ("version = 3\n[plugins\n", "not valid TOML"),
        ("version = 4\n", "version 4 is not 1, 2 or 3"),
        ('version = 3\n[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = 5\n', "config_path: must be"),
    ],
)
def test_bad_config_file_names_file_and_key(tmp_path, text, named):
    path = write(tmp_path / "config.toml", text)
    with pytest.raises(ContainerdHostsError, match=str(path)) as caught:
        from_config_file(str(path), "2.1.9")
    assert named in str(caught.value)


def test_locate_order(tmp_path):
    status = {"config": json.dumps({"registry": {"configPath": "/from/status"}})}
    config = write(
        tmp_path / "config.toml",
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\nconfig_path = "/from/file"\n',
    )
    assert locate(status, "1.7.24", None, "/from/option").roots == ("/from/option",)
    assert locate(status, "1.7.24").roots == ("/from/status",)
    assert locate(status, "1.7.24", str(config)).roots == ("/from/file",)
    assert locate({"config": "{}"}, "2.1.9", str(config)).roots == ("/from/file",)
    with pytest.raises(ContainerdHostsError, match="does not exist"):
        locate(None, "2.1.9", str(tmp_path / "absent.toml"))
    # No config file named: containerd's default, else k3s's, else RKE2's, whichever exists first.
    k3s = write(
        tmp_path / "k3s.toml",
        'version = 3\n[plugins."io.containerd.cri.v1.images".registry]\n'
        'config_path = "/var/lib/rancher/k3s/agent/etc/containerd/certs.d"\n',
    )
    found = locate({}, "2.0.5", candidates=(str(tmp_path / "absent.toml"), str(k3s), str(config)))
    assert (found.roots, found.origin) == (("/var/lib/rancher/k3s/agent/etc/containerd/certs.d",), str(k3s))
    assert locate({}, "2.1.9", candidates=(str(tmp_path / "absent.toml"),)).roots == ()


# --- the directory lookup ------------------------------------------------------------------------------------


def test_directory_order(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    for directory in (second / "reg.example:5000", second / "_default", first / "_default"):
        directory.mkdir(parents=True)
    assert find_host_dir([str(first), str(second)], "reg.example:5000") == str(first / "_default")
    assert find_host_dir([str(second)], "reg.example:5000") == str(second / "reg.example:5000")
    (second / "reg.example_5000_").mkdir()
    assert find_host_dir([str(second)], "reg.example:5000") == str(second / "reg.example_5000_")
    assert find_host_dir([str(tmp_path / "none")], "reg.example") is None


def test_server_omitted_falls_back_to_the_registry(tmp_path):
    write(tmp_path / "reg.example" / "hosts.toml", '[host."http://mirror.local:5000"]\ncapabilities = ["pull"]\n')
    hosts = configure_hosts("reg.example", [str(tmp_path)])
    assert [(h.scheme, h.host, h.path) for h in hosts] == [
        ("http", "mirror.local:5000", "/v2"),
        ("https", "reg.example", "/v2"),
    ]


def test_absolute_tls_paths_of_hosts_toml_are_the_nodes_under_the_host_root(tmp_path):
    # As a pod sees the node: its / at host_root; hosts.toml names the node's own paths.
    root = tmp_path / "host"
    certs = root / "etc/containerd/certs.d"
    write(
        certs / "reg.example" / "hosts.toml",
        'server = "https://reg.example"\n'
        'ca = "/etc/containerd/certs.d/reg.example/ca.crt"\n'
        'client = [["/etc/pki/client.cert", "client.key"]]\n',
    )
    hosts = configure_hosts("reg.example", [str(certs)], str(root))
    assert hosts[-1].ca == (f"{root}/etc/containerd/certs.d/reg.example/ca.crt",)
    # The relative key is under the host directory, already under the root.
    assert hosts[-1].client == ((f"{root}/etc/pki/client.cert", f"{certs}/reg.example/client.key"),)
    # SSH mode (no root): as written.
    assert configure_hosts("reg.example", [str(certs)])[-1].ca == ("/etc/containerd/certs.d/reg.example/ca.crt",)


def test_endpoints_filter_capabilities_and_set_ns(tmp_path):
    write(
        tmp_path / "docker.io" / "hosts.toml",
        'server = "https://registry-1.docker.io"\n'
        '[host."https://pull-only.local/us"]\ncapabilities = ["pull"]\n'
        '[host."https://both.local/x/v2"]\ncapabilities = ["pull", "resolve"]\n',
    )
    by_digest = endpoints("docker.io", [str(tmp_path)], digest=True)
    assert [(str(e), e.namespace) for e in by_digest] == [
        ("https://pull-only.local/us/v2", "docker.io"),
        ("https://both.local/x/v2", "docker.io"),
        ("https://registry-1.docker.io/v2", ""),
    ]
    by_tag = endpoints("docker.io", [str(tmp_path)], digest=False)
    assert [e.netloc for e in by_tag] == ["both.local", "registry-1.docker.io"]
    assert (
        by_digest[0].request_path("library/busybox", "manifests", DIGEST)
        == f"/us/v2/library/busybox/manifests/{DIGEST}?ns=docker.io"
    )


@pytest.mark.parametrize(
    "text, named",
    [
        ('[host."https://m.local"\n', "not valid TOML"),
        ('[host."https://m.local"]\ncapabilities = ["pull", "fetch"]\n', 'host."https://m.local".capabilities'),
        ('[host."https://m.local"]\nca = 5\n', 'host."https://m.local".ca'),
        ('[host."https://m.local"]\nclient = [["a", "b", "c"]]\n', 'host."https://m.local".client'),
        ('[host."https://m.local"]\ndial_timeout = "soon"\n', 'host."https://m.local".dial_timeout'),
        ('[host."https://m.local"]\nca = "missing-ca.crt"\n', "missing-ca.crt"),
        ('[host."https://m.local"]\nclient = [["client.cert", "missing.key"]]\n', "missing.key"),
    ],
)
def test_bad_hosts_file_names_file_and_key(tmp_path, text, named):
    hosts_file = write(tmp_path / "reg.example" / "hosts.toml", text)
    write(tmp_path / "reg.example" / "client.cert", "cert")
    with pytest.raises(ContainerdHostsError) as caught:
        endpoints("reg.example", [str(tmp_path)], digest=True)
    assert str(hosts_file) in str(caught.value) and named in str(caught.value)


# --- credentials ---------------------------------------------------------------------------------------------


def test_credentials_are_the_images_own_registrys():
    config = parse_docker_config(
        json.dumps(
            {
                "auths": {
                    "reg.example": {"username": "u", "password": "p", "registrytoken": "rt"},
                    "mirror.local": {"username": "mirror-user", "password": "x"},
                    "tok.example": {"registrytoken": "only-a-registry-token"},
                }
            }
        )
    )
    found = containerd_credentials(config, parse_image_ref(f"reg.example/app@{DIGEST}"))
    assert (found.username, found.password, found.registry_token) == ("u", "p", "")
    assert "rt" in found.secrets()
    assert containerd_credentials(config, parse_image_ref(f"tok.example/app@{DIGEST}")) is None
    assert containerd_credentials(config, parse_image_ref(f"other.example/app@{DIGEST}")) is None


def test_registry_mirrors_override_the_hosts(tmp_path):
    write(tmp_path / "_default" / "hosts.toml", '[host."http://mirror.local"]\n')
    overrides = load_registries_conf(
        None, [{"prefix": "reg.example", "location": "explicit.local"}], default_path="", default_conf_d=""
    )
    hosts = ContainerdHosts(RegistryHostsConfig((str(tmp_path),), "test"), overrides)
    assert [str(s) for s in hosts.pull_sources(parse_image_ref(f"reg.example/a@{DIGEST}"))] == [
        f"explicit.local/a@{DIGEST}"
    ]
    sources = hosts.pull_sources(parse_image_ref(f"other.example/a@{DIGEST}"))
    assert [(s.registry, s.mirror, s.endpoint is not None) for s in sources] == [
        ("mirror.local", True, True),
        ("other.example", False, True),
    ]


# --- reading through hosts.toml from real registries --------------------------------------------------------


def _info(client, image, config_dir, registry_name, path, credentials=None):
    ref = parse_image_ref(f"{registry_name}/{path}", require_digest=False)
    found = endpoints(ref.registry, [str(config_dir)], digest=False)
    return client.manifest_info(ref, credentials, endpoint=found[0]), found[0]


@pytest.mark.parametrize(
    "registry, hosts_toml, path, key",
    [
        # A TLS mirror whose CA only hosts.toml names, with basic credentials.
        ("secure", '[host."https://{name}"]\nca = "{ca}"\n', "secure/app:v1", "secure/app"),
        # server only; the token server is on another host: its TLS is the host's (the CA of hosts.toml), as in
        # containerd.
        ("token", 'server = "https://{name}"\nca = "{ca}"\n', "tok/app:v1", "token/app"),
    ],
)
def test_tls_host_with_the_ca_named_in_hosts_toml_and_credentials(
    registry_lab, tmp_path, registry, hosts_toml, path, key
):
    write(
        tmp_path / "mirrored.example.invalid" / "hosts.toml",
        hosts_toml.format(name=getattr(registry_lab, registry).name, ca=registry_lab.pki["ca.crt"]),
    )
    config = parse_docker_config(
        json.dumps({"auths": {"mirrored.example.invalid": {"username": USER, "password": PASSWORD}}})
    )
    ref = parse_image_ref(f"mirrored.example.invalid/{path}", require_digest=False)
    with RegistryClient(certs_dirs=[], timeout=5) as client:
        endpoint = endpoints(ref.registry, [str(tmp_path)], digest=False)[0]
        info = client.manifest_info(ref, containerd_credentials(config, ref), endpoint=endpoint)
    assert list(info.layers) == registry_lab.images[key].layers
    assert endpoint.namespace == "mirrored.example.invalid"


def test_client_pair_and_override_path(registry_lab, tmp_path):
    write(
        tmp_path / "m.example.invalid" / "hosts.toml",
        f'[host."https://{registry_lab.mtls.name}/v2"]\noverride_path = true\nca = "{registry_lab.pki["ca.crt"]}"\n'
        f'client = [["{registry_lab.pki["client.crt"]}", "{registry_lab.pki["client.key"]}"]]\n',
    )
    with RegistryClient(certs_dirs=[], timeout=5) as client:
        info, endpoint = _info(client, "mtls/app", tmp_path, "m.example.invalid", "mtls/app:v1")
    assert endpoint.path == "/v2"
    assert list(info.layers) == registry_lab.images["mtls/app"].layers


def test_tls_without_the_ca_names_hosts_toml(registry_lab, tmp_path):
    hosts_file = write(tmp_path / "n.example.invalid" / "hosts.toml", f'[host."https://{registry_lab.secure.name}"]\n')
    with RegistryClient(certs_dirs=[], timeout=5) as client, pytest.raises(RegistryTLSError) as caught:
        _info(client, "secure/app", tmp_path, "n.example.invalid", "secure/app:v1")
    assert f"name its CA in {hosts_file}" in str(caught.value)


def test_http_fallback_of_a_loopback_registry(registry_lab):
    ref = parse_image_ref(f"{registry_lab.plain.name}/test/single:v1", require_digest=False)
    endpoint = endpoints(ref.registry, [], digest=False)[0]
    assert (endpoint.scheme, endpoint.http_fallback, endpoint.skip_verify) == ("http", True, True)
    with RegistryClient(certs_dirs=[], timeout=5) as client:
        info = client.manifest_info(ref, endpoint=endpoint)
    assert list(info.layers) == registry_lab.images["plain/single"].layers
    assert isinstance(endpoint, HostEndpoint)
