# SPDX-License-Identifier: GPL-3.0-or-later
"""pinned.images.release_image_set and the stage_release playbook against release images the lab builds and pushes
to its real registries (plain, and login + TLS), through real `ansible` / `ansible-playbook` runs."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import is_loopback
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import host_platform
from ansible_collections.pinned.images.plugins.module_utils._runs.options import REGISTRY_ARGUMENT_SPEC
from ansible_collections.pinned.images.plugins.module_utils._sets.model import validate_set
from fixtures.ansible_runs import ROOT, adhoc, node_socket, playbook, remove_all_images, warnings_in
from support.lab import started_lab
from support.ports import free_port

pytestmark = pytest.mark.lab

MODULE = "pinned.images.release_image_set"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A lab of this module's own: the staging playbook runs on every node, and other modules add nodes (tmpfs ones
    that the disk guard rightly refuses) to the session's lab."""
    with started_lab(tmp_path_factory.mktemp("release-lab"), nodes=3, control_plane=1) as lab:
        yield lab


@pytest.fixture(scope="module")
def components(lab):
    """Three lab images by digest, as a release's image-references names them."""
    records = lab.push_bulk(3, prefix="release-components")
    return {"cli": records[0].reference, "machine-config-operator": records[1].reference, "etcd": records[2].reference}


@pytest.fixture(scope="module")
def release(lab, components):
    return lab.push_release(components, version="4.99.1")


def test_the_module_returns_exactly_the_listed_digests_and_a_valid_set(lab, components, release):
    rc, result, output = adhoc(MODULE, {"release": release["tag_reference"], "name": "staged", "pools": ["worker"]})
    assert rc == 0, output
    # A tag is resolved to the digest the registry serves.
    assert result["release_image"] == release["reference"]
    assert result["version"] == "4.99.1"
    assert result["metadata"]["version"] == "4.99.1"
    assert result["components"] == components
    assert result["images"] == sorted([*components.values(), release["reference"]])
    assert result["changed"] is False
    (image_set,) = result["sets"]
    assert result["set"] == image_set
    assert validate_set(image_set).images == tuple(result["images"])
    assert image_set["metadata"] == {
        "name": "staged-worker",
        "labels": {"machineconfiguration.openshift.io/role": "worker"},
    }
    # The disk guard's estimate for the whole payload on one node: each layer once, doubled.
    bulk = {record.reference: record for record in lab.bulk("release-components")}
    own = sum(bulk[image].size for image in components.values())
    estimate = result["estimate"]
    assert estimate["images"] == 4 and estimate["unreadable"] == {}
    assert estimate["compressed_bytes"] > own + release["layer_size"]
    assert estimate["required_bytes"] == 2 * estimate["compressed_bytes"] and estimate["expansion_factor"] == 2


def test_include_exclude_and_the_default_name(release):
    rc, result, output = adhoc(
        MODULE,
        {
            "release": release["reference"],
            "include": ["*-operator", "etcd"],
            "exclude": ["etcd"],
            "include_release_image": False,
            "estimate": False,
        },
    )
    assert rc == 0, output
    assert list(result["components"]) == ["machine-config-operator"]
    assert result["images"] == [result["components"]["machine-config-operator"]]
    assert result["set"]["metadata"] == {"name": "release-4.99.1"}
    assert "estimate" not in result


def test_a_multi_arch_release_is_read_for_the_requested_platform(lab, components):
    host = str(host_platform())
    other = "linux/arm64" if host != "linux/arm64" else "linux/amd64"
    per_platform = {host: dict(components), other: {"cli": components["cli"]}}
    record = lab.push_release(per_platform, version="4.99.2", platforms=[host, other])
    for platform, expected in ((None, per_platform[host]), (other, per_platform[other])):
        args = {"release": record["tag_reference"], "estimate": False}
        if platform:
            args["platform"] = platform
        rc, result, output = adhoc(MODULE, args)
        assert rc == 0, output
        assert result["components"] == expected
        assert result["platform"] == (platform or host)
        # The set pins the release by its index digest, as the cluster version operator names it.
        assert result["release_image"] == record["reference"]


def test_a_50_mib_release_layer_is_read_only_up_to_its_manifests(lab, components, capsys):
    record = lab.push_release(components, version="4.99.3", padding=50 * MIB)
    rc, result, output = adhoc(MODULE, {"release": record["reference"], "estimate": False})
    assert rc == 0, output
    assert result["layer"]["size"] == record["layer_size"] > 50 * MIB
    assert result["components"] == components
    # gzip reads 128 KiB at a time and the manifests are the first entries of the tar.
    assert result["bytes_read"] < 1 * MIB
    with capsys.disabled():
        print(
            f"\nrelease layer {record['layer_size']} bytes, read {result['bytes_read']} bytes "
            f"({100 * result['bytes_read'] / record['layer_size']:.2f} %)"
        )


def test_the_release_is_read_through_a_registries_conf_mirror_when_the_origin_is_down(lab, release, tmp_path):
    plain = lab.state["registries"]["plain"]["host"]
    origin = f"127.0.0.1:{free_port()}"  # nothing listens there
    assert is_loopback(origin)
    conf = tmp_path / "registries.conf"
    conf.write_text(
        f'[[registry]]\nprefix = "{origin}/ocp"\nlocation = "{origin}/ocp"\n'
        f'[[registry.mirror]]\nlocation = "{plain}/ocp"\ninsecure = true\n'
    )
    wanted = f"{origin}/ocp/release@{release['digest']}"
    rc, result, output = adhoc(MODULE, {"release": wanted, "registries_conf": str(conf), "estimate": False})
    assert rc == 0, output
    assert result["source"] == f"{plain}/ocp/release@{release['digest']}"
    # The set names the release as asked; the runtime applies the same mirror when it pulls.
    assert result["release_image"] == wanted
    assert wanted in result["images"]

    rc, result, output = adhoc(MODULE, {"release": wanted, "registries_conf": str(tmp_path / "none.conf")})
    assert rc != 0
    assert "registries file" in result["msg"] and "does not exist" in result["msg"]


def test_a_release_in_a_login_registry_is_read_with_the_pull_secret(lab, components, tmp_path):
    auth = lab.state["registries"]["auth"]
    record = lab.push_release(components, version="4.99.4", registry="auth")
    certs = tmp_path / "certs.d" / auth["host"]
    certs.mkdir(parents=True)
    shutil.copy(auth["ca"], certs / "ca.crt")
    args = {"release": record["reference"], "registry_certs_dirs": [str(tmp_path / "certs.d")], "estimate": False}
    rc, result, output = adhoc(MODULE, dict(args, auth_file=auth["docker_config"]))
    assert rc == 0, output
    assert result["components"] == components

    rc, result, output = adhoc(MODULE, dict(args, auth_file=auth["bad_docker_config"]))
    assert rc != 0
    assert f"cannot read release image {record['reference']}" in result["msg"]
    assert f"registry {auth['host']} rejected the credentials of user {auth['username']!r}" in result["msg"]
    password = json.loads(open(auth["credentials"]).read())["password"]
    assert password not in output


def test_an_image_that_is_not_a_release_fails_naming_it(lab):
    image = lab.images()["plain-small"].reference
    rc, result, _output = adhoc(MODULE, {"release": image})
    assert rc != 0
    assert result["msg"].startswith(
        f"{image} is not an OpenShift release image: its config has no "
        "io.openshift.release label (labels: io.pinned-images.lab)"
    )

    unlabelled = lab.push_release(
        {"cli": lab.images()["plain-small"].reference}, version="4.99.5", repo="ocp/unlabelled", labelled=False
    )
    rc, result, _output = adhoc(MODULE, {"release": unlabelled["reference"]})
    assert rc != 0 and "is not an OpenShift release image" in result["msg"]


def test_an_image_reference_by_tag_in_the_payload_fails_naming_it(lab):
    tagged = lab.images()["plain-small"].tag_reference
    record = lab.push_release({"cli": tagged}, version="4.99.6", repo="ocp/tagged")
    rc, result, _output = adhoc(MODULE, {"release": record["reference"]})
    assert rc != 0
    assert f"release image {record['reference']}: release-manifests/image-references" in result["msg"]
    assert "spec.tags[0] (cli)" in result["msg"] and "not pinned by digest" in result["msg"]


def test_dest_is_written_only_outside_check_mode_and_only_when_it_changes(release, tmp_path):
    dest = tmp_path / "release.yaml"
    args = {"release": release["reference"], "dest": str(dest), "pools": ["master", "worker"], "estimate": False}
    rc, result, output = adhoc(MODULE, args, check=True, diff=True)
    assert rc == 0, output
    assert result["changed"] is True and not dest.exists()
    # The callback prints the diff and drops it from the result.
    assert "+  name: release-4.99.1-master" in output
    rc, result, output = adhoc(MODULE, args)
    assert rc == 0 and result["changed"] is True, output
    documents = list(yaml.safe_load_all(dest.read_text()))
    assert [d["metadata"]["name"] for d in documents] == ["release-4.99.1-master", "release-4.99.1-worker"]
    assert "set" not in result
    rc, result, output = adhoc(MODULE, args)
    assert rc == 0 and result["changed"] is False, output


def _run_stage(inventory, extra, check=False):
    return playbook("pinned.images.stage_release", inventory, extra, check=check, timeout=300)


def test_one_playbook_run_stages_the_release_on_every_node_and_a_rerun_changes_nothing(
    lab, release, components, tmp_path
):
    nodes = list(lab.state["nodes"])
    for node in nodes:
        remove_all_images(node_socket(lab, node))
    inventory = lab.write_inventory(tmp_path / "lab.yml")
    report = tmp_path / "report.json"
    extra = {
        "stage_release_image": release["tag_reference"],
        "cluster_report_file": str(report),
        "node_progress_interval": 1,
        "stage_release_render_dest": str(tmp_path / "gitops"),
    }

    checked = _run_stage(inventory, dict(extra, stage_release_render_dest=""), check=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "check mode: nothing was pulled" in checked.stdout
    for node in nodes:
        with CriClient(node_socket(lab, node)) as client:
            assert client.list_images() == [], node

    proc = _run_stage(inventory, extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for run in (checked, proc):
        assert warnings_in(run.stdout + run.stderr) == [], run.stdout + run.stderr
    assert "Release 4.99.1 (%s): 4 images" % release["reference"] in proc.stdout
    assert "each node needs up to" in proc.stdout
    wanted = sorted([*components.values(), release["reference"]])
    for node in nodes:
        with CriClient(node_socket(lab, node)) as client:
            digests = {d for image in client.list_images() for d in image["repo_digests"]}
        assert set(wanted) <= digests, node
    rendered = sorted(p.name for p in (tmp_path / "gitops" / "pinnedimagesets").glob("*.yaml"))
    assert rendered == ["release-4.99.1-master.yaml", "release-4.99.1-worker.yaml"]
    assert {n["host"]: n["pulled"] for n in json.loads(report.read_text())["nodes"]} == {n: 4 for n in nodes}

    # Without the report file, whose timestamps change on every run.
    del extra["cluster_report_file"]
    again = _run_stage(inventory, extra)
    assert again.returncode == 0, again.stdout + again.stderr
    recap = again.stdout.split("PLAY RECAP", 1)[1]
    lines = [line for line in recap.splitlines() if " : ok=" in line]
    assert len(lines) == len(nodes) + 1, recap
    assert all("changed=0" in line and "failed=0" in line for line in lines), recap


def test_stage_release_options_takes_every_option_of_the_module_and_a_misspelt_one_fails_before_any_node(
    lab, release, tmp_path
):
    from ansible_collections.pinned.images.plugins.modules import release_image_set

    tasks = yaml.safe_load((ROOT / "playbooks" / "stage_release.yml").read_text())[0]["tasks"]
    call = next(task for task in tasks if MODULE in task)
    check = next(task for task in tasks if task["name"] == "Check the release options")
    documented = set(yaml.safe_load(release_image_set.DOCUMENTATION)["options"])
    # And the shared registry options, which a doc fragment documents.
    documented |= set(REGISTRY_ARGUMENT_SPEC)
    assert set(call[MODULE]) == documented
    assert set(check["vars"]["stage_release_known_options"]) == documented - {"release", "pools"}

    inventory = lab.write_inventory(tmp_path / "lab.yml")
    extra = {"stage_release_image": release["tag_reference"], "stage_release_options": {"auth_fil": "x.json"}}
    proc = _run_stage(inventory, extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "stage_release_options takes these options of pinned.images.release_image_set" in proc.stdout
    assert "got ['auth_fil']" in proc.stdout
    assert "Read the release image" not in proc.stdout
