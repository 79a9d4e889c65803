# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/support/pythons.py, the finder of node interpreters that the compile check and the node tests share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import pythons

RUNNING = "%d.%d" % sys.version_info[:2]
SCRIPT = Path(pythons.__file__)


def test_the_variable_names_the_interpreter_and_the_answer_is_the_executable_behind_a_shim(monkeypatch, tmp_path):
    shim = tmp_path / "python-shim"  # as pyenv's shims do
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv(pythons.env_name(RUNNING), str(shim))
    monkeypatch.setenv("PATH", str(tmp_path))  # no pythonX.Y on PATH: only the variable can answer
    assert pythons.find_python(RUNNING) == sys.executable


def test_an_interpreter_of_another_version_does_not_count(monkeypatch, tmp_path):
    monkeypatch.setenv(pythons.env_name("3.99"), sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(pythons, "_pyenv_root", lambda: str(tmp_path))
    assert pythons.env_name("3.99") == "PINNED_IMAGES_TEST_PY399"
    assert pythons.find_python("3.99") is None


def test_the_command_line_prints_what_it_found_and_strict_fails_on_a_missing_version(tmp_path):
    env = dict(os.environ, **{pythons.env_name(RUNNING): sys.executable})
    command = [sys.executable, str(SCRIPT), RUNNING, "3.99"]
    lenient = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    strict = subprocess.run(command + ["--strict"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert lenient.returncode == 0 and strict.returncode == 1
    for proc in (lenient, strict):
        (line,) = proc.stdout.splitlines()
        version, path = line.split(" ", 1)
        assert version == RUNNING and os.path.samefile(path, sys.executable)
        assert "no interpreter found for Python 3.99" in proc.stderr
