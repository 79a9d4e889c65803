# SPDX-License-Identifier: GPL-3.0-or-later
"""Safe by default, through the real entry points: a misspelt or empty input never empties the pins, a run that
would do nothing fails with the fix, missing node dependencies fail naming how to provide them.

Every test that fails a run asserts the message the user sees and that the lab's drop-ins, containerd pins and
rendered files are byte for byte what they were (the ``untouched`` fixture). The lab is the session's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from fixtures.ansible_runs import adhoc, adhoc_command, adhoc_result, ansible_env, node_socket, playbook, warnings_in
from fixtures.openshift_objects import ROLE_LABEL as ROLE
from fixtures.openshift_objects import pinned_image_set
from support.machine_paths import with_own_var_lib

pytestmark = pytest.mark.lab

SYSTEM_PYTHON = "/usr/bin/python3"
DIGEST = "sha256:" + "e" * 64


def dropins(lab) -> dict:
    return {
        name: Path(node["root"]).parent / "crio.conf.d" / "50-pinned-images"
        for name, node in lab.state["nodes"].items()
    }


def snapshot(lab) -> dict:
    """Each node's drop-in bytes and which of its images containerd reports pinned."""
    state = {}
    for name, path in dropins(lab).items():
        with CriClient(node_socket(lab, name)) as client:
            pins = sorted((image["id"], image["pinned"]) for image in client.list_images())
        state[name] = (path.read_bytes() if path.exists() else None, pins)
    return state


@pytest.fixture(scope="module")
def work(lab, tmp_path_factory):
    """Every node with a drop-in of its own (restored afterwards), a set directory, an empty one, the inventory."""
    tmp = tmp_path_factory.mktemp("safe")
    saved = {path: path.read_bytes() if path.exists() else None for path in dropins(lab).values()}
    for name, path in dropins(lab).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'[crio.image]\npinned_images = ["registry.example/{name}@{DIGEST}"]\n')
    (image,) = [record.reference for record in lab.push_bulk(1, prefix="safe")]
    sets = tmp / "sets"
    sets.mkdir()
    (sets / "worker.yaml").write_text(yaml.safe_dump(pinned_image_set("worker-images", [image], {ROLE: "worker"})))
    empty = tmp / "empty"
    empty.mkdir()
    yield dict(tmp=tmp, sets=sets, empty=empty, image=image, inventory=lab.write_inventory(tmp / "lab.yml"))
    for path, content in saved.items():
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(content)


@pytest.fixture
def untouched(lab, work):
    """Asserts, after the test, that no drop-in and no pin of the lab changed."""
    before = snapshot(lab)
    yield
    assert snapshot(lab) == before


def run(proc: subprocess.CompletedProcess) -> tuple[int, str]:
    return proc.returncode, proc.stdout + proc.stderr


def test_a_misspelt_set_variable_fails_naming_the_variable_it_meant(work, untouched):
    rc, output = run(playbook("pinned.images.prefetch", work["inventory"], {"cluster_set": [str(work["sets"])]}))
    assert rc != 0
    assert (
        "cluster_set (on every host: an extra variable or one of the group all) is not a variable of "
        "pinned.images: did you mean cluster_sets?; nothing was changed"
    ) in output


def test_sources_that_hold_no_set_fail_naming_what_was_looked_at(work, untouched):
    rc, output = run(playbook("pinned.images.prefetch", work["inventory"], {"cluster_sets": [str(work["empty"])]}))
    assert rc != 0
    assert (
        f"the sources hold no PinnedImageSet: looked at cluster_sets ({work['empty']}), so every node's sets "
        "would be empty and lose their pins; nothing was changed."
    ) in output


def test_no_source_at_all_fails(work, untouched):
    rc, output = run(playbook("pinned.images.prefetch", work["inventory"]))
    assert rc != 0
    assert "nothing selects an image: cluster_sets and cluster_pools are empty, cluster_read_cluster is false" in output


def test_bad_values_fail_once_on_the_controller_before_any_node_with_every_problem_in_one_message(work, untouched):
    extra = {
        "cluster_sets": [str(work["sets"])],
        "node_pin": "yes",
        "node_prefetch_options": {"min_free": -1, "retries": "x"},
    }
    rc, output = run(playbook("pinned.images.prefetch", work["inventory"], extra))
    assert rc != 0
    every = "(on every host: an extra variable or one of the group all)"
    message = "; ".join(
        [
            f"value of node_pin must be one of: auto, true, false, label, got: yes {every}",
            "node_prefetch_options: argument 'retries' is of type str and we were unable to convert to int: "
            f"\"'x'\" cannot be converted to an int {every}",
            "node_prefetch_options.min_free: size '-1' is not understood; allowed are bytes (1073741824), binary "
            f"units (500Mi, 16Gi, 1.5Gi), decimal units (1G, 500M) or a percent of the filesystem size (10%) {every}",
        ]
    )
    assert f"{message}; nothing was changed" in output
    # Once, from the controller's first play: no node play started, no node was reached.
    assert [line for line in output.splitlines() if line.startswith("fatal:")] == [
        f'fatal: [localhost]: FAILED! => {{"changed": false, "msg": "{message.replace(chr(34), chr(92) + chr(34))}; '
        'nothing was changed"}'
    ]
    assert "PLAY [Prefetch, first phase]" not in output and "PLAY RECAP" in output
    recap = {line.split()[0]: line for line in output.split("PLAY RECAP", 1)[1].splitlines() if " : " in line}
    assert "failed=1" in recap.pop("localhost")
    # The first play's limit check names a node without running anything on it.
    assert all(" ok=0 " in line and "unreachable=0" in line for line in recap.values()), recap


def test_a_reserve_without_its_unit_warns_once_on_the_controller_suggesting_the_unit(work, untouched):
    extra = {"cluster_sets": [str(work["sets"])], "node_prefetch_options": {"min_free": 16}}
    limit = ["--limit", "localhost,worker-0"]
    rc, output = run(playbook("pinned.images.prefetch", work["inventory"], extra, check=True, options=limit))
    assert rc == 0, output
    # Once on the controller, and from the module on the node (for direct use).
    assert output.count("did you mean 16Gi?") == 2, output
    assert "[WARNING]: min_free: 16 has no unit, so it means 16 bytes" in output
    assert (
        "[WARNING] node_prefetch_options.min_free: 16 has no unit, so it means 16 bytes, which keeps almost nothing "
        "free; did you mean 16Gi? Give the unit (16Gi, 500Mi), or 0 for no reserve (on every host: an extra variable "
        "or one of the group all)"
    ) in output


def test_a_batch_size_serial_cannot_take_fails_with_one_line_not_a_traceback(work, untouched):
    rc, output = run(
        playbook(
            "pinned.images.prefetch",
            work["inventory"],
            {"cluster_sets": [str(work["sets"])], "cluster_control_plane_serial": "abc"},
        )
    )
    assert rc != 0 and "Traceback" not in output
    assert (
        'cluster_control_plane_serial must be a number (1), a percentage ("25%") or a list of them '
        "([1, 5, \"25%\"]), got 'abc'"
    ) in output


def test_prefetch_with_no_images_and_a_pin_fails_before_the_runtime_is_contacted(lab, work, untouched):
    path = dropins(lab)["worker-0"]
    rc, result, output = adhoc(
        "pinned.images.prefetch",
        dict(images=[], pin="dropin", dropin_path=str(path), cri_socket=node_socket(lab, "worker-0")),
    )
    assert rc != 0
    assert result["msg"] == (
        f"images is empty: with pin=dropin that would remove every pin of this node (the drop-in {path}, or the "
        "labels pinned.images set); nothing was changed. Give the images, allow_empty=true to empty the pins, or "
        "pin=none"
    )


@pytest.mark.parametrize("module", ["crio_pinned_images", "containerd_pinned_images"])
def test_pinning_modules_refuse_sets_that_select_nothing(lab, work, untouched, module):
    args = dict(
        sets=[str(work["empty"])],
        node_labels={"node-role.kubernetes.io/worker": ""},
        cri_socket=node_socket(lab, "worker-0"),
    )
    if module == "crio_pinned_images":
        args.update(dropin_path=str(dropins(lab)["worker-0"]), crio_reload="none")
    rc, result, output = adhoc(f"pinned.images.{module}", args)
    assert rc != 0, output
    assert result["msg"].startswith(
        f"sets ({work['empty']}) selected no image for a node with the labels node-role.kubernetes.io/worker= "
        "(sets found: none): that would "
    )
    assert result["msg"].endswith(
        "; nothing was changed. Give the images to pin, allow_empty=true to empty the "
        "pins, or state=absent to remove them"
    )


def test_an_inventory_without_the_groups_fails_and_naming_them_works_with_a_limit(lab, work):
    inventory = yaml.safe_load(work["inventory"].read_text())
    hosts = {name: host for group in inventory["all"]["children"].values() for name, host in group["hosts"].items()}
    inventory["all"]["children"] = {"nodes": {"hosts": hosts}}
    (work["tmp"] / "nodes.yml").write_text(yaml.safe_dump(inventory))
    extra = {"cluster_sets": ["sets/"]}
    before = snapshot(lab)

    rc, output = run(playbook("pinned.images.prefetch", "nodes.yml", extra, cwd=work["tmp"]))
    assert rc != 0
    assert (
        "no inventory host is in the groups control_plane (cluster_control_plane_group), workers "
        "(cluster_worker_group), so nothing would run; the inventory has the groups: nodes."
    ) in output
    assert snapshot(lab) == before

    # docs/orchestration.md, as written: the group named, one node next to localhost in the limit.
    rc, output = run(
        playbook(
            "pinned.images.prefetch",
            "nodes.yml",
            dict(extra, cluster_worker_group="nodes"),
            options=["--limit", "localhost,worker-1"],
            cwd=work["tmp"],
        )
    )
    assert rc == 0, output
    others = sorted(name for name in hosts if name != "worker-1")
    assert "excluded by --limit, not run and not counted: " + ", ".join(others) in output
    assert "total (1 node)" in output and "not_run" not in output
    after = snapshot(lab)
    assert work["image"].encode() in after["worker-1"][0]
    assert {name: state for name, state in after.items() if name != "worker-1"} == {
        name: state for name, state in before.items() if name != "worker-1"
    }


def test_a_limit_without_localhost_fails_with_the_fix(work, untouched):
    rc, output = run(
        playbook(
            "pinned.images.prefetch",
            work["inventory"],
            {"cluster_sets": [str(work["sets"])]},
            options=["--limit", "cp-0"],
        )
    )
    assert rc != 0
    assert (
        "--limit cp-0 leaves out localhost, where pinned.images.prefetch resolves the sets, plans and reports; "
        "nothing was run. Add it: --limit 'localhost,cp-0'"
    ) in output


def test_the_render_of_an_empty_directory_removes_nothing(work):
    dest = work["tmp"] / "gitops"
    files = {
        dest / "machineconfigs" / "99-worker-pinned-images.yaml": b"kind: MachineConfig\n",
        dest / "pinnedimagesets" / "worker-images.yaml": b"kind: PinnedImageSet\n",
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    rc, output = run(
        playbook(
            "pinned.images.render", extra_vars={"cluster_sets": [str(work["empty"])], "cluster_render_dest": str(dest)}
        )
    )
    assert rc != 0
    assert (
        f"the sources hold no PinnedImageSet: looked at cluster_sets ({work['empty']}), so the render would "
        f"remove every file it wrote in {dest}/pinnedimagesets and {dest}/machineconfigs; nothing was changed."
    ) in output
    assert {path: path.read_bytes() for path in files} == files


def test_the_node_deps_playbook_runs_as_documented(work):
    # docs/nodes.md: ansible-playbook -i inventory pinned.images.node_deps (the nodes' Python has grpcio here).
    rc, output = run(playbook("pinned.images.node_deps", work["inventory"]))
    assert rc == 0, output
    assert "has grpcio and protobuf" in output
    assert warnings_in(output) == [], output
    rc, output = run(playbook("pinned.images.node_deps", work["inventory"], {"node_python_deps_dir": "python"}))
    assert rc != 0
    assert (
        "node_python_deps_dir must be an absolute path on the node, got 'python' (on every host: an extra variable "
        "or one of the group all); nothing was changed"
    ) in output
    rc, output = run(playbook("pinned.images.node_deps", work["inventory"], {"node_deps_host": "workers"}))
    assert rc != 0
    assert (
        "node_deps_host (on every host: an extra variable or one of the group all) is not a variable of "
        "pinned.images: did you mean node_deps_hosts?"
    ) in output


PRIVATE_DIR = "/nonexistent/pinned-images-python"


@pytest.mark.parametrize(
    "module,args,private_dir",
    [
        ("prefetch", dict(images=[]), None),
        ("prefetch", dict(images=[]), PRIVATE_DIR),
        ("cri_image_info", dict(), PRIVATE_DIR),
        ("crio_pinned_images", dict(images=[f"registry.example/a@{DIGEST}"], crio_reload="none"), PRIVATE_DIR),
        ("containerd_pinned_images", dict(images=[f"registry.example/a@{DIGEST}"]), PRIVATE_DIR),
    ],
)
def test_every_node_module_fails_clearly_without_grpc(tmp_path, module, args, private_dir):
    if subprocess.run([SYSTEM_PYTHON, "-c", "import grpc"], capture_output=True, check=False).returncode == 0:
        pytest.fail(f"{SYSTEM_PYTHON} imports grpc: the test proves nothing")
    if module == "crio_pinned_images":
        args = dict(args, dropin_path=str(tmp_path / "50-pinned-images"))
    env = ansible_env(ANSIBLE_PYTHON_INTERPRETER=SYSTEM_PYTHON)
    command = adhoc_command(f"pinned.images.{module}", dict(args, cri_socket=str(tmp_path / "cri.sock")))
    if private_dir:
        env["PINNED_IMAGES_PYTHON_DIR"] = private_dir
    else:
        # The default directory, as a node without the variable has it: the test's own, empty, not the machine's.
        del env["PINNED_IMAGES_PYTHON_DIR"]
        command = with_own_var_lib(command, tmp_path / "var-lib")
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    rc, result, output = proc.returncode, adhoc_result(proc.stdout), proc.stdout + proc.stderr
    assert rc != 0 and "Traceback" not in result.get("module_stderr", ""), output
    assert result["msg"].startswith(f"grpcio and protobuf are missing for {SYSTEM_PYTHON} (cp3"), result
    where = f"PINNED_IMAGES_PYTHON_DIR={private_dir}" if private_dir else "(PINNED_IMAGES_PYTHON_DIR is not set)"
    assert where in result["msg"]
    assert "the playbook pinned.images.node_deps" in result["msg"] and "pip install" in result["msg"]
    assert not (tmp_path / "50-pinned-images").exists()
