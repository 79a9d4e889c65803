# SPDX-License-Identifier: GPL-3.0-or-later
"""A disconnected containerd site configured only through hosts.toml: the default disk guard of
pinned.images.prefetch reads every manifest where containerd pulls it from.

One prefetch per runtime (a real containerd 1.6 and 1.7 node whose CRI ``config_path`` is this module's hosts
directory) pulls one small image per case: a mirror-only registry whose upstream is a ``.invalid`` name, a
``_default`` directory, a ``host_port_`` directory, a TLS mirror whose CA only hosts.toml names, a path prefix, an
``override_path`` host, a mirror that needs the pull secret, and ``server`` omitted with a mirror that is down.
Each registry's access log (a path proxy's record for the path cases) must show the guard's manifest read and
containerd's pull at the same place.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass

import pytest

from fixtures.ansible_runs import adhoc
from support.gate_proxy import PathProxy
from support.images import KIB, push_lab_image
from support.pki import make_pki
from support.ports import free_port
from support.push import PushClient
from support.registry import start_registry, write_htpasswd

# (the lab's runtime, whether the guard must read config_path from the node's config file, as on 2.x, whose CRI
# Status leaves the registry out).
RUNTIMES = [
    pytest.param(("containerd-1.6", False), id="containerd-1.6"),
    pytest.param(("containerd-1.7", False), id="containerd-1.7"),
    pytest.param(("containerd-2.1", True), id="containerd-2.1"),
]
USER, PASSWORD = "hosts-user", "hosts-pa:ss"
_ACCESS = re.compile(r'"(?:GET|HEAD) (\S+) HTTP/[0-9.]+" \d+ \S+ "[^"]*" "([^"]*)"')


@dataclass
class Case:
    name: str
    image: str
    size: int
    log: object  # a callable: [(path, user agent)] of the place that must serve the image
    served_at: str  # where the guard's result must say it read the manifest
    path: str  # the request path (up to the digest) the log must show for both


def _access_log(path):
    def lines():
        with open(path) as handle:
            return [m.groups() for m in _ACCESS.finditer(handle.read())]

    return lines


@pytest.fixture(scope="module")
def hosts_site(tmp_path_factory):
    """The registries, the hosts directory and the pull secret of the site; the cases."""
    base = tmp_path_factory.mktemp("hosts-site")
    pki = make_pki(base / "pki", prefix="hosts-site")
    tls = {"certificate": pki["server.crt"], "key": pki["server.key"]}
    write_htpasswd(base / "htpasswd", USER, PASSWORD)
    origin = start_registry(str(base / "origin"), access_log=True)
    secure = start_registry(str(base / "secure"), tls=tls, access_log=True)
    login = start_registry(
        str(base / "login"),
        tls=tls,
        access_log=True,
        auth={"htpasswd": {"realm": "hosts-site", "path": str(base / "htpasswd")}},
    )
    proxy = PathProxy(origin.name, {"/prefix/v2/": "/v2/", "/custom/api/": "/v2/"})
    down, down_mirror = free_port(), free_port()
    pushers = {
        "origin": PushClient(origin.name),
        "secure": PushClient(secure.name, ca=pki["ca.crt"]),
        "login": PushClient(login.name, ca=pki["ca.crt"], basic=(USER, PASSWORD)),
    }
    logs = {
        "origin": _access_log(origin.log_path),
        "secure": _access_log(secure.log_path),
        "login": _access_log(login.log_path),
        "proxy": lambda: [(p, ua) for _m, p, ua in proxy.requests],
    }
    config = base / "certs.d"
    ca = json.dumps(pki["ca.crt"])
    # (case, registry pushed to, image host, hosts directory, hosts.toml, log, where the guard reads, path prefix)
    layout = [
        (
            "mirror-only",
            "origin",
            "mirror-only.example.invalid",
            "mirror-only.example.invalid",
            f'[host."http://{origin.name}"]\n  capabilities = ["pull", "resolve"]\n',
            "origin",
            f"http://{origin.name}/v2",
            "/v2/",
        ),
        (
            "default-dir",
            "origin",
            "default.example.invalid",
            "_default",
            f'[host."http://{origin.name}"]\n',
            "origin",
            f"http://{origin.name}/v2",
            "/v2/",
        ),
        (
            "host-port-dir",
            "origin",
            f"127.0.0.1:{down}",
            f"127.0.0.1_{down}_",
            f'[host."http://{origin.name}"]\n',
            "origin",
            f"http://{origin.name}/v2",
            "/v2/",
        ),
        (
            "tls-ca-in-hosts-toml",
            "secure",
            "tls.example.invalid",
            "tls.example.invalid",
            f'[host."https://{secure.name}"]\n  ca = {ca}\n',
            "secure",
            f"https://{secure.name}/v2",
            "/v2/",
        ),
        (
            "path-prefix",
            "origin",
            "prefix.example.invalid",
            "prefix.example.invalid",
            f'[host."http://{proxy.host}/prefix"]\n',
            "proxy",
            f"http://{proxy.host}/prefix/v2",
            "/prefix/v2/",
        ),
        (
            "override-path",
            "origin",
            "override.example.invalid",
            "override.example.invalid",
            f'[host."http://{proxy.host}/custom/api"]\n  override_path = true\n',
            "proxy",
            f"http://{proxy.host}/custom/api",
            "/custom/api/",
        ),
        (
            "mirror-needs-credentials",
            "login",
            "creds.example.invalid",
            "creds.example.invalid",
            f'[host."https://{login.name}"]\n  ca = {ca}\n',
            "login",
            f"https://{login.name}/v2",
            "/v2/",
        ),
        (
            "server-omitted",
            "origin",
            origin.name,
            origin.name.replace(":", "_") + "_",
            f'[host."http://127.0.0.1:{down_mirror}"]\n',
            "origin",
            f"http://{origin.name}/v2",
            "/v2/",
        ),
    ]
    cases = []
    try:
        for name, registry, host, directory, hosts_toml, log, served_at, prefix in layout:
            record = push_lab_image(
                pushers[registry], 0, pushers[registry].host, registry, f"acc/{name}", "v1", [4 * KIB], {}, None, name
            )
            (config / directory).mkdir(parents=True)
            (config / directory / "hosts.toml").write_text(hosts_toml)
            cases.append(
                Case(
                    name,
                    f"{host}/acc/{name}@{record.digest}",
                    record.size,
                    logs[log],
                    served_at,
                    f"{prefix}acc/{name}/manifests/{record.digest}",
                )
            )
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        auth_file = base / "pull-secret.json"
        auth_file.write_text(json.dumps({"auths": {"creds.example.invalid": {"auth": token}}}))
        yield config, auth_file, cases
    finally:
        for client in pushers.values():
            client.close()
        proxy.stop()
        for registry in (origin, secure, login):
            registry.stop()


@pytest.fixture(scope="module", params=RUNTIMES)
def hosts_node(request, lab, hosts_site):
    """One node per runtime whose CRI config_path is the site's hosts directory."""
    config, _auth_file, _cases = hosts_site
    choice, reads_config_file = request.param
    entry = lab.add_node("hosts-" + choice.replace(".", "-"), runtime=choice, config_path=str(config))
    # The node's config file is not at containerd's default path; CRI Status names config_path on 1.6 and 1.7.
    return entry, dict(containerd_config=entry["config"]) if reads_config_file else {}


def prefetch(node, images, auth_file, **args):
    entry, node_args = node
    return adhoc(
        "pinned.images.prefetch",
        dict(
            images=images, cri_socket=entry["endpoint"], auth_file=str(auth_file), min_free="1Mi", **node_args, **args
        ),
    )


def test_default_guard_reads_where_containerd_pulls(hosts_site, hosts_node):
    _config, auth_file, cases = hosts_site
    before = {id(case.log): len(case.log()) for case in cases}
    rc, result, output = prefetch(hosts_node, [case.image for case in cases], auth_file, expansion_factor=1.0)
    assert rc == 0, output
    assert {entry["image"]: entry["status"] for entry in result["images"]} == {c.image: "pulled" for c in cases}
    guard = result["disk_guard"]
    assert guard["required_bytes"] == sum(case.size for case in cases)
    assert guard["images"] == len(cases)
    assert "containerd hosts.toml under config_path" in guard["sources_from"]
    assert ("CRI Status" if not hosts_node[1] else hosts_node[0]["config"]) in guard["sources_from"]
    for case in cases:
        assert guard["sources"][case.image].startswith(case.served_at + " ("), (case.name, guard["sources"])
        seen = [(path, agent) for path, agent in case.log()[before[id(case.log)] :] if path.startswith(case.path)]
        agents = {agent.split("/")[0] for _path, agent in seen}
        assert agents == {"pinned.images", "containerd"}, (case.name, seen)
        if case.name not in ("server-omitted",):
            # A mirror's requests name the image's registry (?ns=), both the guard's and containerd's.
            assert all("ns=" in path for path, _agent in seen), (case.name, seen)


def test_a_hosts_toml_naming_a_missing_ca_fails_the_image_and_nothing_is_pulled(hosts_site, hosts_node):
    config, auth_file, cases = hosts_site
    directory = config / "missing-ca.example.invalid"
    directory.mkdir(exist_ok=True)
    (directory / "hosts.toml").write_text('[host."https://127.0.0.1:1"]\n  ca = "absent-ca.crt"\n')
    image = cases[0].image.replace("mirror-only.example.invalid", "missing-ca.example.invalid")
    rc, result, output = prefetch(hosts_node, [image], auth_file)
    assert rc != 0
    entry = result["images"][0]
    # No pull attempt: containerd would fail this pull too, and the guard could not read the manifest.
    assert (entry["status"], entry["error_kind"], entry["attempts"]) == ("failed", "invalid", 0)
    assert f"{directory / 'hosts.toml'}: ca {directory / 'absent-ca.crt'}" in entry["error"]
