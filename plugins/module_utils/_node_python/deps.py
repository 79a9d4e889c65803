# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""grpcio and protobuf for the node modules: from the node's Python, or from a private directory (node side, 3.8+).

The ``pinned.images.node`` role sets ``PINNED_IMAGES_PYTHON_DIR`` (``node_python_deps_dir``) on every node module
task; without it the directory is ``/var/lib/pinned-images/python``. Importing this module puts ``<dir>/<tag>/site``
first on ``sys.path`` when that directory belongs to this user alone and holds what its ``manifest.json`` lists, byte
for byte (sha256), and imports grpc and protobuf from there or from the node's Python.
``<tag>`` names the interpreter (``cp311-manylinux-x86_64``), so several interpreters of one node never share
compiled files, and the role needs no round trip to learn it before the first module call.

When the libraries are missing (or older than the committed CRI stubs accept), ``require_node_deps`` (the node
modules' first step, and the CRI client's) raises NodeDepsMissing: a failure naming the interpreter, where the
libraries were looked for and how to provide them, flagged ``node_deps_missing`` when PINNED_IMAGES_PYTHON_DIR is set
(the node role then provides the directory and calls again). A failure, not a success without work: the variable is
also set by hand for ad hoc runs, where a wrong directory must not pass unnoticed.

``provision``/``remove`` write and delete the private directory (module ``pinned.images.node_python_deps``).
"""

from __future__ import annotations

import compileall
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import traceback
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, TypedDict

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import atomic_write, file_sha256
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._node_python.paths import DEFAULT_DIR, ENV_DIR

__all__ = [
    "FLOORS",
    "HAS_NODE_DEPS",
    "MANIFEST",
    "MIN_PYTHON",
    "NODE_DEPS",
    "NODE_DEPS_ERROR",
    "SITE",
    "WHEELS",
    "NodeDepsError",
    "NodeDepsMissing",
    "NodeDepsState",
    "interpreter",
    "node_deps_report",
    "provision",
    "read_manifest",
    "remove",
    "require_node_deps",
    "verify",
]

# The oldest versions the committed stubs run on; requirements-node.txt states the same floors (a unit test compares).
MIN_PYTHON = (3, 8)
FLOORS = {"grpcio": (1, 62, 0), "protobuf": (4, 25, 0)}
MANIFEST = "manifest.json"
SITE = "site"
WHEELS = "wheels"
_MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


class NodeDepsError(CollectionError):
    """The private directory cannot be written or its input is wrong; the message names the file."""


def interpreter() -> Dict[str, str]:
    """This interpreter as the wheelhouse needs it: version, implementation, libc, machine and the directory tag."""
    implementation = {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name, sys.implementation.name)
    machine = platform.machine().lower()
    machine = _MACHINES.get(machine, machine)
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        glibc = ""
    if glibc.startswith("glibc "):
        libc, libc_version = "manylinux", glibc.split()[1]
    else:
        libc, libc_version = "musllinux", ""
    python = "%d.%d" % sys.version_info[:2]
    abi = "%s%d%d" % (implementation, sys.version_info[0], sys.version_info[1])
    return dict(
        executable=sys.executable,
        version=platform.python_version(),
        python=python,
        implementation=implementation,
        libc=libc,
        libc_version=libc_version,
        machine=machine,
        tag="%s-%s-%s" % (abi, libc, machine),
    )


def _tree_files(site: str) -> List[str]:
    """The files below ``site``, and its links to directories (os.walk lists them but does not enter them)."""
    found = []
    for root, dirs, files in os.walk(site):
        for name in files + [name for name in dirs if os.path.islink(os.path.join(root, name))]:
            found.append(os.path.relpath(os.path.join(root, name), site))
    return sorted(found)


def read_manifest(tag_dir: str) -> Optional[Dict[str, Any]]:
    """The manifest of a provisioned directory, or None when there is none (or it is not JSON)."""
    try:
        with open(os.path.join(tag_dir, MANIFEST)) as handle:
            manifest = json.load(handle)
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def verify(tag_dir: str) -> Optional[str]:
    """None when ``<tag_dir>/site`` holds exactly the files of the manifest with their sha256, else what differs."""
    manifest = read_manifest(tag_dir)
    if manifest is None:
        return "%s has no readable %s" % (tag_dir, MANIFEST)
    site = os.path.join(tag_dir, SITE)
    expected = manifest.get("files", {})
    present = _tree_files(site) if os.path.isdir(site) else []
    for name in present:
        # Unpacked wheels hold no links: a link would let the directory's code change without its bytes changing.
        if os.path.islink(os.path.join(site, name)):
            return "%s is a symbolic link" % os.path.join(site, name)
        if name not in expected:
            return "%s is not in the manifest" % os.path.join(site, name)
    for name, digest in sorted(expected.items()):
        path = os.path.join(site, name)
        if name not in present:
            return "%s is missing" % path
        if file_sha256(path) != digest:
            return "%s was changed (sha256 differs from the manifest)" % path
    return None


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _activate(environ: Mapping[str, str]) -> Tuple[Optional[str], Optional[str]]:
    """Put the private directory first on sys.path when it is intact; (site or None, why not or None)."""
    base = environ.get(ENV_DIR) or DEFAULT_DIR
    tag_dir = os.path.join(base, interpreter()["tag"])
    try:
        owner = os.stat(tag_dir)
    except OSError:
        return None, "%s does not exist" % tag_dir
    # Code on sys.path must be writable by this user only.
    if owner.st_uid != os.geteuid() or owner.st_mode & 0o022:
        return None, "%s belongs to another user than %d or is writable by others; not using it" % (
            tag_dir,
            os.geteuid(),
        )
    problem = verify(tag_dir)
    if problem:
        return None, problem
    site = os.path.join(tag_dir, SITE)
    sys.path.insert(0, site)
    # The directory is checked against its manifest on every use: Python must not add files to it.
    sys.dont_write_bytecode = True
    return site, None


class NodeDepsState(TypedDict):
    """What the import-time probe found: the private directory used (or why not), the error, the versions."""

    site: Optional[str]
    site_problem: Optional[str]
    error: Optional[str]
    traceback: Optional[str]
    versions: Dict[str, str]


def _probe(environ: Mapping[str, str]) -> NodeDepsState:
    site, site_problem = _activate(environ)
    state: NodeDepsState = {
        "site": site,
        "site_problem": site_problem,
        "error": None,
        "traceback": None,
        "versions": {},
    }
    if sys.version_info[:2] < MIN_PYTHON:
        state["error"] = "Python %s is older than %d.%d, the oldest the node modules support" % (
            platform.python_version(),
            MIN_PYTHON[0],
            MIN_PYTHON[1],
        )
        return state
    try:
        import grpc
        from google import protobuf
    except ImportError as exc:
        state["error"] = "cannot import %s" % (getattr(exc, "name", None) or exc)
        state["traceback"] = traceback.format_exc()
        return state
    state["versions"] = {"grpcio": grpc.__version__, "protobuf": protobuf.__version__}
    for name, floor in sorted(FLOORS.items()):
        if _version(state["versions"][name]) < floor:
            state["error"] = "%s %s is older than %s, the oldest the CRI stubs accept" % (
                name,
                state["versions"][name],
                ".".join(str(part) for part in floor),
            )
    return state


NODE_DEPS = _probe(os.environ)
HAS_NODE_DEPS = NODE_DEPS["error"] is None
NODE_DEPS_ERROR = NODE_DEPS["traceback"] or NODE_DEPS["error"]


def node_deps_report() -> Dict[str, Any]:
    """What the role needs to provision this interpreter: its tags, what is wrong, the private directory."""
    return dict(
        interpreter(),
        problem=NODE_DEPS["error"],
        private_dir_problem=NODE_DEPS["site_problem"],
        versions=NODE_DEPS["versions"],
    )


class NodeDepsMissing(CollectionError):
    """grpcio and protobuf cannot be imported: the message names the interpreter, where they were looked for and
    how to provide them; ``node_deps`` (the report) is in the details, and ``node_deps_missing`` when
    PINNED_IMAGES_PYTHON_DIR is set (the node role provides them and calls again)."""

    def __init__(self) -> None:
        report = node_deps_report()
        base = os.environ.get(ENV_DIR)
        where = "%s=%s" % (ENV_DIR, base) if base else "%s (%s is not set)" % (DEFAULT_DIR, ENV_DIR)
        details: Dict[str, Any] = {"node_deps": report, "exception": NODE_DEPS_ERROR}
        if base:
            details["node_deps_missing"] = True
        super().__init__(
            "grpcio and protobuf are missing for %s (%s): %s. Looked in that Python's own packages and in %s: %s. "
            "Provide them with the role pinned.images.node (node_python_deps: auto), once with the playbook "
            "pinned.images.node_deps (then PINNED_IMAGES_PYTHON_DIR=<its node_python_deps_dir> when that is not %s), "
            "or with pip install -r requirements-node.txt for that Python (docs/nodes.md)."
            % (
                report["executable"],
                report["tag"],
                report["problem"],
                where,
                report["private_dir_problem"] or "not used",
                DEFAULT_DIR,
            ),
            details=details,
        )


def require_node_deps() -> None:
    """Raise NodeDepsMissing unless grpc and protobuf are usable."""
    if not HAS_NODE_DEPS:
        raise NodeDepsMissing()


def _extract(wheel: str, site: str) -> None:
    """Unpack a wheel into ``site`` as pip would for purelib/platlib; nothing may land outside ``site``."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            name = member.filename
            parts = name.split("/")
            if len(parts) > 2 and parts[0].endswith(".data"):
                if parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            target = os.path.normpath(os.path.join(site, *parts))
            if name.startswith("/") or ".." in parts or not target.startswith(site + os.sep):
                raise NodeDepsError("%s: member %r would be written outside %s" % (wheel, name, site))
            if member.is_dir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as dest:
                shutil.copyfileobj(source, dest)
            os.chmod(target, 0o755 if (member.external_attr >> 16) & 0o111 else 0o644)


def provision(base: str, tag: str, wheels: Sequence[Mapping[str, str]], check_mode: bool = False) -> Dict[str, Any]:
    """Make ``<base>/<tag>/site`` the unpacked ``wheels`` (each ``{path, sha256}``), verified by sha256.

    Unchanged when the manifest names the same wheels and every file matches it; otherwise the whole directory is
    unpacked anew beside the old one and swapped in, so a changed or extra file is replaced and a reader never sees
    half a directory (the manifest is written last).
    """
    tag_dir = os.path.join(base, tag)
    wanted = []
    for wheel in wheels:
        if not os.path.isfile(wheel["path"]):
            raise NodeDepsError("wheel %s does not exist" % wheel["path"])
        digest = file_sha256(wheel["path"])
        if digest != wheel["sha256"]:
            raise NodeDepsError(
                "wheel %s has sha256 %s, the wheelhouse has %s" % (wheel["path"], digest, wheel["sha256"])
            )
        wanted.append({"name": os.path.basename(wheel["path"]), "sha256": digest})
    wanted.sort(key=lambda item: item["name"])
    manifest = read_manifest(tag_dir)
    before = verify(tag_dir) if manifest is not None else "%s is not provisioned" % tag_dir
    if manifest is not None and manifest.get("wheels") == wanted and before is None:
        return dict(changed=False, path=tag_dir, reason=None, files=len(manifest.get("files", {})))
    result = dict(
        changed=True,
        path=tag_dir,
        reason=before
        if manifest and manifest.get("wheels") == wanted
        else "the wheels changed"
        if manifest
        else before,
        files=None,
    )
    if check_mode:
        return result
    for directory in (base, tag_dir):
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
    new_site = tempfile.mkdtemp(prefix=".site-", dir=tag_dir)
    # Removed on failure; None once it has become the site directory.
    staging: str | None = new_site
    try:
        for wheel in wheels:
            _extract(wheel["path"], new_site)
        # Bytecode now, so that imports from the verified directory never need to write any.
        compileall.compile_dir(new_site, quiet=2)
        files = {name: file_sha256(os.path.join(new_site, name)) for name in _tree_files(new_site)}
        site = os.path.join(tag_dir, SITE)
        old = None
        if os.path.exists(site):
            old = tempfile.mkdtemp(prefix=".old-", dir=tag_dir)
            os.rename(site, os.path.join(old, SITE))
        os.rename(new_site, site)
        staging = None
        atomic_write(
            os.path.join(tag_dir, MANIFEST),
            json.dumps({"tag": tag, "wheels": wanted, "files": files}, indent=1, sort_keys=True),
            mode=0o600,
        )
        if old:
            shutil.rmtree(old)
    except (OSError, zipfile.BadZipFile) as exc:
        raise NodeDepsError("cannot unpack the wheels into %s: %s" % (tag_dir, exc)) from exc
    finally:
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
    result["files"] = len(files)
    return result


def remove(base: str, check_mode: bool = False) -> Dict[str, Any]:
    """Delete the private directory ``base``; refuses a directory holding anything it did not write."""
    if not os.path.isdir(base):
        return dict(changed=False, path=base, removed=[])
    entries = sorted(os.listdir(base))
    for entry in entries:
        tag_dir = os.path.join(base, entry)
        if not os.path.isdir(tag_dir) or not set(os.listdir(tag_dir)) <= {MANIFEST, SITE, WHEELS} | {
            name for name in os.listdir(tag_dir) if name.startswith(".")
        }:
            raise NodeDepsError("%s holds %s, which pinned.images did not write; not removing it" % (base, entry))
    if not check_mode:
        shutil.rmtree(base)
    return dict(changed=True, path=base, removed=entries)
