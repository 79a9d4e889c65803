# SPDX-License-Identifier: GPL-3.0-or-later
"""The suite does not read the machine's state: the tests that run node modules pass as well where the machine has
/var/lib/pinned-images/python, the private Python directory a node_deps run on this machine creates, holding a
protobuf that breaks on import. They run once more in a mount namespace of their own where that directory exists
(tests/support/machine_paths.py): the machine's /var/lib is never written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import file_sha256
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import interpreter, provision
from fixtures.ansible_runs import COLLECTIONS, ROOT
from support.machine_paths import PINNED_IMAGES, with_own_var_lib

# Node modules run ad hoc (the default directory), through the role on lab nodes (node_python_deps_dir), on the
# system Python, and the CRI client on the oldest grpcio/protobuf (which the newer protobuf would have mixed with).
AFFECTED = [
    "tests/functional/test_safe_defaults_lab.py::test_every_node_module_fails_clearly_without_grpc",
    "tests/functional/test_prefetch_lab.py::test_check_mode_pulls_nothing",
    "tests/functional/test_prefetch_lab.py::test_pull_into_empty_node_then_rerun_is_unchanged[containerd-1.7]",
    "tests/functional/test_oldest_node_deps.py",
    "tests/functional/test_orchestration.py::test_check_mode_lists_what_each_node_would_pull_and_changes_nothing",
]
BROKEN = "the machine's private protobuf was imported"


def incompatible_protobuf(directory: Path) -> dict:
    """A protobuf wheel whose import fails, as a mismatched newer one does."""
    path = directory / "protobuf-99.0.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("google/protobuf/__init__.py", f"__version__ = '99.0.0'\nraise ImportError({BROKEN!r})\n")
        wheel.writestr("protobuf-99.0.0.dist-info/METADATA", "Name: protobuf\nVersion: 99.0.0\n")
    return {"path": str(path), "sha256": file_sha256(str(path))}


def machine_env() -> dict:
    """This environment without the variable that names the private directory: the modules' default applies."""
    return {name: value for name, value in os.environ.items() if name != "PINNED_IMAGES_PYTHON_DIR"}


def test_the_tests_that_run_node_modules_pass_where_the_machine_has_a_private_python_directory(tmp_path):
    existed = os.path.lexists(PINNED_IMAGES)
    own = tmp_path / "pinned-images"
    provision(str(own / "python"), interpreter()["tag"], [incompatible_protobuf(tmp_path)])
    # The trap works: a node module's import with the default finds this directory and fails.
    probe = (
        f"import sys; sys.path.insert(0, {str(COLLECTIONS)!r}); import json; "
        "from ansible_collections.pinned.images.plugins.module_utils._node_python import deps; "
        "print(json.dumps(deps.NODE_DEPS))"
    )
    proc = subprocess.run(
        with_own_var_lib([sys.executable, "-c", probe], tmp_path / "probe", own),
        env=machine_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    state = json.loads(proc.stdout)
    assert state["site"] == f"{PINNED_IMAGES}/python/{interpreter()['tag']}/site", state
    assert BROKEN in (state["traceback"] or ""), state

    # A short base directory: the labs' unix sockets live under it.
    basetemp = Path(tempfile.mkdtemp(prefix="machine-state-"))
    try:
        proc = subprocess.run(
            with_own_var_lib(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(basetemp / "t")]
                + AFFECTED,
                tmp_path / "suite",
                own,
            ),
            cwd=ROOT,
            env=machine_env(),
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    finally:
        shutil.rmtree(basetemp, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " skipped" not in proc.stdout, proc.stdout[-2000:]
    # The machine's /var/lib was not written.
    assert os.path.lexists(PINNED_IMAGES) == existed
