# SPDX-License-Identifier: GPL-3.0-or-later
"""_node_deps: the interpreter tag, the verified private directory (unpack, tamper, extra files, removal), the
activation on sys.path and the two ways a node module ends when grpc is missing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import file_sha256
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
from ansible_collections.pinned.images.plugins.module_utils._node_python import deps
from ansible_collections.pinned.images.plugins.module_utils._node_python.wheelhouse import TAG_PATTERN
from fixtures.wheels import make_wheel

ROOT = Path(__file__).resolve().parents[5]


@pytest.fixture
def wheel(tmp_path):
    (tmp_path / "wheels").mkdir()
    return make_wheel(tmp_path / "wheels")


def test_the_tag_names_this_interpreter_as_the_wheelhouse_parses_it():
    info = deps.interpreter()
    assert TAG_PATTERN.match(info["tag"]), info
    assert info["python"] == "%d.%d" % sys.version_info[:2]
    assert info["executable"] == sys.executable


def test_the_floors_are_those_of_requirements_node_txt():
    text = (ROOT / "requirements-node.txt").read_text()
    for name, floor in deps.FLOORS.items():
        assert re.search(rf"^{name}>=([0-9.]+)$", text, re.M).group(1) == ".".join(map(str, floor))


def test_provision_unpacks_verifies_and_then_leaves_the_directory_alone(tmp_path, wheel):
    base = tmp_path / "python"
    result = deps.provision(str(base), "cp311-manylinux-x86_64", [wheel])
    tag_dir = base / "cp311-manylinux-x86_64"
    assert result["changed"] and result["files"] > 0
    assert (tag_dir / "site" / "fakepkg" / "__init__.py").read_text() == "VALUE = 1\n"
    # purelib of the .data directory lands in site, scripts do not.
    assert (tag_dir / "site" / "fakepkg_extra.py").exists()
    assert not list((tag_dir / "site").rglob("tool"))
    assert deps.verify(str(tag_dir)) is None
    assert oct(base.stat().st_mode & 0o777) == "0o700" and oct(tag_dir.stat().st_mode & 0o777) == "0o700"
    assert oct((tag_dir / "manifest.json").stat().st_mode & 0o777) == "0o600"
    manifest = json.loads((tag_dir / "manifest.json").read_text())
    assert manifest["wheels"] == [{"name": Path(wheel["path"]).name, "sha256": wheel["sha256"]}]

    assert deps.provision(str(base), "cp311-manylinux-x86_64", [wheel])["changed"] is False


@pytest.mark.parametrize(
    "tamper, problem",
    [
        (lambda site: (site / "fakepkg" / "__init__.py").write_text("VALUE = 666\n"), "was changed"),
        (lambda site: (site / "fakepkg" / "evil.py").write_text("x = 1\n"), "is not in the manifest"),
        (lambda site: (site / "fakepkg" / "__init__.py").unlink(), "is missing"),
        (lambda site: (site / "linked").symlink_to(site / "fakepkg"), "is a symbolic link"),
        (
            lambda site: (site / "fakepkg" / "copy.py").symlink_to(site / "fakepkg" / "__init__.py"),
            "is a symbolic link",
        ),
    ],
)
def test_a_changed_extra_or_missing_file_is_found_and_replaced(tmp_path, wheel, tamper, problem):
    base = tmp_path / "python"
    deps.provision(str(base), "cp39-manylinux-x86_64", [wheel])
    tag_dir = base / "cp39-manylinux-x86_64"
    tamper(tag_dir / "site")
    assert problem in deps.verify(str(tag_dir))

    result = deps.provision(str(base), "cp39-manylinux-x86_64", [wheel])
    assert result["changed"] and problem in result["reason"]
    assert deps.verify(str(tag_dir)) is None
    assert (tag_dir / "site" / "fakepkg" / "__init__.py").read_text() == "VALUE = 1\n"
    assert sorted(path.name for path in tag_dir.iterdir()) == ["manifest.json", "site"]


def test_check_mode_reports_and_writes_nothing(tmp_path, wheel):
    result = deps.provision(str(tmp_path / "python"), "cp311-manylinux-x86_64", [wheel], check_mode=True)
    assert result["changed"] and not (tmp_path / "python").exists()


def test_a_wheel_with_the_wrong_sha256_or_an_escaping_member_is_refused(tmp_path, wheel):
    base = tmp_path / "python"
    with pytest.raises(deps.NodeDepsError, match="has sha256 .* the wheelhouse has 00"):
        deps.provision(str(base), "cp311-manylinux-x86_64", [dict(wheel, sha256="00")])
    assert not base.exists()
    evil = make_wheel(tmp_path, "evil", extra={"../../outside.py": "x = 1\n"})
    with pytest.raises(deps.NodeDepsError, match="outside"):
        deps.provision(str(base), "cp311-manylinux-x86_64", [evil])
    assert not (tmp_path / "outside.py").exists()
    assert not (base / "cp311-manylinux-x86_64" / "site").exists()


def test_remove_deletes_only_what_it_wrote(tmp_path, wheel):
    base = tmp_path / "python"
    assert deps.remove(str(base)) == {"changed": False, "path": str(base), "removed": []}
    deps.provision(str(base), "cp311-manylinux-x86_64", [wheel])
    assert deps.remove(str(base), check_mode=True)["changed"] and base.exists()
    (base / "notes.txt").write_text("mine\n")
    with pytest.raises(deps.NodeDepsError, match="notes.txt"):
        deps.remove(str(base))
    (base / "notes.txt").unlink()
    assert deps.remove(str(base))["removed"] == ["cp311-manylinux-x86_64"]
    assert not base.exists()


def test_an_intact_directory_goes_first_on_sys_path_and_a_group_writable_one_does_not(tmp_path, wheel, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    tag = deps.interpreter()["tag"]
    deps.provision(str(tmp_path), tag, [wheel])
    site, problem = deps._activate({deps.ENV_DIR: str(tmp_path)})
    assert (site, problem) == (str(tmp_path / tag / "site"), None)
    assert sys.path[0] == site and sys.dont_write_bytecode

    os.chmod(tmp_path / tag, 0o770)
    site, problem = deps._activate({deps.ENV_DIR: str(tmp_path)})
    assert site is None and "writable by others" in problem
    os.chmod(tmp_path / tag, 0o700)
    (tmp_path / tag / "site" / "fakepkg" / "__init__.py").write_text("VALUE = 2\n")
    site, problem = deps._activate({deps.ENV_DIR: str(tmp_path)})
    assert site is None and "was changed" in problem


@pytest.fixture
def missing(monkeypatch):
    monkeypatch.setattr(deps, "HAS_NODE_DEPS", False)
    monkeypatch.setitem(deps.NODE_DEPS, "error", "cannot import grpc")


def test_in_the_role_a_missing_library_fails_flagged_for_the_role(missing, monkeypatch):
    # A failure, flagged: the role provides the libraries and calls again; a hand-set wrong directory still fails.
    monkeypatch.setenv(deps.ENV_DIR, "/nonexistent")
    with pytest.raises(deps.NodeDepsMissing) as failed:
        deps.require_node_deps()
    result = dict(failed.value.details, msg=failed.value.message)
    assert result["node_deps_missing"] is True
    assert result["node_deps"]["tag"] == deps.interpreter()["tag"]
    assert result["node_deps"]["problem"] == "cannot import grpc"
    assert "PINNED_IMAGES_PYTHON_DIR=/nonexistent" in result["msg"]


def test_ad_hoc_a_missing_library_fails_and_names_where_it_looked_and_the_fix(missing, monkeypatch):
    monkeypatch.delenv(deps.ENV_DIR, raising=False)
    with pytest.raises(CollectionError) as failed:
        deps.require_node_deps()
    assert isinstance(failed.value, deps.NodeDepsMissing) and "node_deps_missing" not in failed.value.details
    message = failed.value.message
    assert message.startswith("grpcio and protobuf are missing for %s (" % sys.executable)
    assert "cannot import grpc" in message and "%s (%s is not set)" % (deps.DEFAULT_DIR, deps.ENV_DIR) in message
    for fix in ("pinned.images.node", "pinned.images.node_deps", "pip install -r requirements-node.txt"):
        assert fix in message


def test_the_cri_client_raises_the_same_error_without_the_libraries(missing):
    with pytest.raises(deps.NodeDepsMissing) as info:
        CriClient("/nonexistent.sock")
    assert "grpcio and protobuf are missing" in info.value.message


def test_with_the_libraries_the_module_goes_on():
    assert deps.HAS_NODE_DEPS, deps.NODE_DEPS
    deps.require_node_deps()


@pytest.fixture(scope="module")
def private_only(tmp_path_factory):
    """A Python that finds grpcio and protobuf only in a provisioned private directory, as on a bare node.

    The interpreter runs without site-packages (``-S``); ansible and the collection come from their own paths.
    """
    import grpc
    from google import protobuf

    tmp = tmp_path_factory.mktemp("private-only")
    packages = Path(grpc.__file__).parents[1]
    site = tmp / "deps" / deps.interpreter()["tag"] / deps.SITE
    shutil.copytree(packages / "grpc", site / "grpc")
    # grpcio's one dependency.
    shutil.copy2(packages / "typing_extensions.py", site)
    for name in ("protobuf", "_upb"):
        if (packages / "google" / name).is_dir():
            shutil.copytree(packages / "google" / name, site / "google" / name)
    assert Path(protobuf.__file__).parent == packages / "google" / "protobuf"
    files = {name: file_sha256(str(site / name)) for name in deps._tree_files(str(site))}
    (site.parent / deps.MANIFEST).write_text(json.dumps({"files": files}))
    for directory in (tmp / "deps", site.parent):
        os.chmod(directory, 0o700)
    (tmp / "lib").mkdir()
    (tmp / "lib" / "ansible").symlink_to(packages / "ansible")
    return {"base": tmp / "deps", "site": site, "path": [str(tmp / "lib"), str(ROOT / ".build" / "collections")]}


@pytest.mark.parametrize("module", ["containerd_pinned_images", "prefetch", "crio_pinned_images", "cri_image_info"])
def test_node_modules_import_their_stubs_from_the_private_directory(private_only, module):
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = {private_only["path"]!r}
        from ansible_collections.pinned.images.plugins.modules import {module}
        from ansible_collections.pinned.images.plugins.module_utils._node_python import deps as _node_deps
        from ansible_collections.pinned.images.plugins.module_utils._cri.containerd_proto import containerd_images_pb2_grpc
        from ansible_collections.pinned.images.plugins.module_utils._cri.cri_proto import cri_image_pb2_grpc
        import grpc
        print(_node_deps.NODE_DEPS["site"], grpc.__file__)
        print(hasattr(containerd_images_pb2_grpc, "ImagesStub"), hasattr(cri_image_pb2_grpc, "ImageServiceStub"))
    """)
    env = {"PATH": os.environ["PATH"], deps.ENV_DIR: str(private_only["base"])}
    proc = subprocess.run(
        [sys.executable, "-S", "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    used, stubs = proc.stdout.splitlines()
    site = str(private_only["site"])
    assert used.split() == [site, os.path.join(site, "grpc", "__init__.py")]
    assert stubs == "True True"
