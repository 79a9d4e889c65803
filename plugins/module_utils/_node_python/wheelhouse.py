# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The controller's wheelhouse of node dependencies (controller side, Python 3.11+).

One directory per node tag (``cp311-manylinux-x86_64``, see ``_node_python.deps.interpreter``) holds the wheels of
``requirements-node.txt`` for that interpreter, filled by ``pip download --only-binary=:all:`` for exactly that
Python version, implementation and platform, or in advance for air-gapped sites. A tag whose wheels are all there
needs no index.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import file_sha256
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name, parse_wheel_filename
except ImportError:  # ansible-core depends on packaging; this only guards odd controllers
    HAS_PACKAGING = False
else:
    HAS_PACKAGING = True

if TYPE_CHECKING:  # names for annotations only: nothing more is needed of packaging at run time
    from packaging.utils import NormalizedName
    from packaging.version import Version

__all__ = [
    "ENV_WHEELHOUSE",
    "HAS_PACKAGING",
    "PLATFORMS",
    "TAG_PATTERN",
    "WheelhouseError",
    "default_path",
    "download_command",
    "fill",
    "parse_tag",
    "requirements_for",
    "select",
]

ENV_WHEELHOUSE = "PINNED_IMAGES_WHEELHOUSE"
TAG_PATTERN = re.compile(r"^(cp)(3)(\d+)-(manylinux|musllinux)-(x86_64|aarch64|ppc64le|s390x)$")
# The libc each platform family targets: manylinux2014 (glibc 2.17, RHEL 7+) and musl 1.1 or 1.2.
PLATFORMS = {
    "manylinux": ("manylinux2014_{machine}", "manylinux_2_17_{machine}"),
    "musllinux": ("musllinux_1_1_{machine}", "musllinux_1_2_{machine}"),
}


class WheelhouseError(CollectionError):
    """The wheelhouse cannot serve a tag; the message names the tag and what fixes it."""


def default_path(environ: Optional[Mapping[str, str]] = None) -> str:
    """``$PINNED_IMAGES_WHEELHOUSE``, else the user's cache directory."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV_WHEELHOUSE):
        return environ[ENV_WHEELHOUSE]
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "pinned-images", "wheelhouse")


def parse_tag(tag: str) -> Dict[str, str]:
    """``cp311-manylinux-x86_64`` as ``{implementation, python, libc, machine}``; WheelhouseError names what is allowed."""
    match = TAG_PATTERN.match(tag)
    if not match:
        raise WheelhouseError(
            f"target {tag!r} is not a node tag: expected cp3<minor>-<manylinux|musllinux>-<x86_64|aarch64|ppc64le|"
            "s390x>, for example cp311-manylinux-x86_64"
        )
    implementation, major, minor, libc, machine = match.groups()
    return dict(implementation=implementation, python=f"{major}.{minor}", libc=libc, machine=machine)


def requirements_for(lines: Sequence[str], target: Mapping[str, str]) -> List[Requirement]:
    """The requirements of ``requirements-node.txt`` lines that apply to the target interpreter, markers evaluated."""
    environment = dict(
        python_version=target["python"],
        python_full_version=target["python"] + ".0",
        implementation_name="cpython",
        platform_python_implementation="CPython",
        sys_platform="linux",
        platform_system="Linux",
        os_name="posix",
        platform_machine=target["machine"],
    )
    found = []
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement as err:
            raise WheelhouseError(f"requirement {text!r}: {err}") from None
        if requirement.marker is None or requirement.marker.evaluate(environment):
            requirement.marker = None
            found.append(requirement)
    return found


def select(directory: str, requirements: Sequence[Requirement]) -> Tuple[List[str], List[str]]:
    """(the newest wheel of ``directory`` satisfying each requirement, the requirements no wheel satisfies)."""
    wheels: Dict[NormalizedName, List[Tuple[Version, str]]] = {}
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if name.endswith(".whl"):
                try:
                    project, version, _build, _tags = parse_wheel_filename(name)
                except ValueError:
                    continue
                wheels.setdefault(project, []).append((version, name))
    chosen, unmet = {}, []
    by_name: Dict[NormalizedName, List[Requirement]] = {}
    for requirement in requirements:
        by_name.setdefault(canonicalize_name(requirement.name), []).append(requirement)
    for project, needed in sorted(by_name.items()):
        candidates = [
            (version, name)
            for version, name in wheels.get(project, [])
            if all(requirement.specifier.contains(version, prereleases=True) for requirement in needed)
        ]
        if candidates:
            chosen[project] = max(candidates)[1]
        else:
            unmet.append(",".join(str(requirement) for requirement in needed))
    return sorted(chosen.values()), unmet


def download_command(
    pip: Sequence[str], directory: str, target: Mapping[str, str], requirements: Sequence[Requirement]
) -> List[str]:
    """``pip download`` of exactly the target's wheels into ``directory``."""
    command = list(pip) + [
        "download",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--dest",
        directory,
        "--python-version",
        target["python"],
        "--implementation",
        target["implementation"],
    ]
    for platform in PLATFORMS[target["libc"]]:
        command += ["--platform", platform.format(machine=target["machine"])]
    return command + [str(requirement) for requirement in requirements]


@contextmanager
def _locked(path: str) -> Iterator[None]:
    # Hosts of one play fill the same wheelhouse at once.
    with open(os.path.join(path, ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fill(
    path: str,
    tag: str,
    requirement_lines: Sequence[str],
    download: bool = True,
    pip: Optional[Sequence[str]] = None,
    timeout: float = 600,
    check_mode: bool = False,
) -> Dict[str, Any]:
    """Make sure ``<path>/<tag>`` has a wheel for each requirement; return ``{changed, path, wheels}``.

    ``wheels`` is ``[{name, path, sha256, size}]``. Raises WheelhouseError naming the tag and the fix when a
    requirement has no wheel and pip cannot (or may not) download it.
    """
    target = parse_tag(tag)
    requirements = requirements_for(requirement_lines, target)
    directory = os.path.join(path, tag)
    os.makedirs(directory, exist_ok=True)
    changed = False
    with _locked(path):
        names, unmet = select(directory, requirements)
        if unmet and download and not check_mode:
            command = download_command(pip or [sys.executable, "-m", "pip"], directory, target, requirements)
            try:
                proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
            except (OSError, subprocess.TimeoutExpired) as err:
                raise WheelhouseError(f"wheelhouse {directory}: pip download for {tag} failed: {err}") from None
            changed = True
            names, unmet = select(directory, requirements)
            if unmet:
                output = (proc.stderr or proc.stdout).strip().splitlines()
                raise WheelhouseError(
                    f"wheelhouse {directory} has no wheel of {', '.join(unmet)} for {tag} and pip download failed "
                    f"(rc={proc.returncode}: {output[-1] if output else 'no output'}); "
                    f"fill it where an index is reachable: ansible-playbook pinned.images.wheelhouse "
                    f'-e \'{{"wheelhouse_targets": ["{tag}"]}}\' and copy {path} here (variable node_wheelhouse)'
                )
        elif unmet and download:
            changed = True
        elif unmet:
            raise WheelhouseError(
                f"wheelhouse {directory} has no wheel of {', '.join(unmet)} for {tag} and downloads are off; fill it "
                f'with: ansible-playbook pinned.images.wheelhouse -e \'{{"wheelhouse_targets": ["{tag}"]}}\' '
                f"(variable node_wheelhouse)"
            )
    wheels = []
    for name in names:
        wheel = os.path.join(directory, name)
        wheels.append(dict(name=name, path=wheel, sha256=file_sha256(wheel), size=os.path.getsize(wheel)))
    return dict(changed=changed, path=directory, tag=tag, wheels=wheels, unmet=unmet)
