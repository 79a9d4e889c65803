# SPDX-License-Identifier: GPL-3.0-or-later
"""The one finder of node interpreters (CPython 3.8-3.13, what the node modules run on): for the compile check of
``hack/compile_node_pythons.sh`` (through the command line below) and for tests that give lab nodes an older Python.

A version X.Y is taken from ``$PINNED_IMAGES_TEST_PYXY`` (e.g. ``PINNED_IMAGES_TEST_PY39``), else ``pythonX.Y`` on
PATH, else the newest ``X.Y.*`` under ``pyenv root``; only an interpreter that runs and is that version counts, and
the answer is its real executable (not a pyenv shim).

Command line: ``python tests/support/pythons.py [--strict] X.Y...`` prints ``X.Y PATH`` for each version found and
names the missing ones on stderr; with ``--strict`` a missing version makes the exit code 1.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
from typing import Sequence

NODE_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
_REPORT = "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.executable)"


def env_name(version: str) -> str:
    """The variable that names the interpreter of ``version`` (``3.9``: ``PINNED_IMAGES_TEST_PY39``)."""
    return "PINNED_IMAGES_TEST_PY" + version.replace(".", "")


def find_python(version: str) -> str | None:
    """The executable of a working CPython ``version`` (``X.Y``), or None; see the module docstring for where."""
    candidates = [os.environ.get(env_name(version)), shutil.which(f"python{version}")]
    candidates += sorted(
        glob.glob(os.path.join(_pyenv_root(), "versions", f"{version}.*", "bin", f"python{version}")),
        key=_patch_level,
        reverse=True,
    )
    for candidate in filter(None, candidates):
        try:
            proc = subprocess.run([candidate, "-c", _REPORT], capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        reported = proc.stdout.split("\n")
        if proc.returncode == 0 and reported[0] == version:
            return reported[1]
    return None


def _pyenv_root() -> str:
    pyenv = shutil.which("pyenv") or os.path.expanduser("~/.pyenv/bin/pyenv")
    try:
        return subprocess.run([pyenv, "root"], capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return os.path.expanduser("~/.pyenv")


def _patch_level(path: str) -> tuple:
    """``(3, 9, 18)`` from ``.../versions/3.9.18/bin/python3.9``; unparsable parts sort first."""
    release = os.path.basename(os.path.dirname(os.path.dirname(path)))
    return tuple(int(part) if part.isdigit() else -1 for part in release.split("."))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Find node interpreters: prints 'X.Y PATH' for each one found.")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a version is missing")
    parser.add_argument("versions", nargs="*", default=list(NODE_VERSIONS), metavar="X.Y")
    args = parser.parse_args(argv)
    missing = []
    for version in args.versions:
        python = find_python(version)
        if python:
            print(version, python)
        else:
            missing.append(version)
    if missing:
        print(
            f"no interpreter found for Python {' '.join(missing)} (PATH, pyenv root, or $PINNED_IMAGES_TEST_PYXY)",
            file=sys.stderr,
        )
    return 1 if missing and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
