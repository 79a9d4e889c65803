# SPDX-License-Identifier: GPL-3.0-or-later
"""Files and processes of the lab: atomic writes, commands, and the supervision of detached processes (started in
their own session so they outlive the command that started them, recognised by pid plus command line)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from support.errors import LabError

READY_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
# Processes are recognised by binary name plus an argument under the lab dir, which survives a lost state file.
# Workload nodes' shims and conmons (one per container) are in no runtime's process group.
LAB_BINARIES = ("containerd", "crio", "docker-registry", "containerd-shim-runc-v2", "conmon")


def write_file(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write atomically: readers (containerd, a second lab command) never see a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)  # mkstemp creates 0600
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _cmdline(pid: int) -> list[str]:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [arg.decode(errors="replace") for arg in handle.read().split(b"\0") if arg]
    except OSError:
        return []  # gone; a zombie's cmdline is empty too, so it counts as gone


def owns(pid: int | None, config: str) -> bool:
    """True if `pid` is alive and is the lab process started with `config` (not a recycled pid)."""
    return bool(pid) and config in _cmdline(pid)


def lab_processes(path: Path) -> list[int]:
    """Pids of lab binaries whose arguments point into `path`, whether or not a state file knows them."""
    prefix = str(path) + "/"
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        args = _cmdline(int(entry))
        if not args or os.path.basename(args[0]) not in LAB_BINARIES:
            continue
        if any(a.startswith(prefix) for a in args[1:]) or _mounts_from(int(entry), prefix):
            pids.append(int(entry))
    return pids


def _mounts_from(pid: int, prefix: str) -> bool:
    """Whether ``pid`` runs in a mount namespace of the lab (a layout node's: a bind mount from under ``prefix``),
    where its arguments name the layout's paths, not the lab's."""
    try:
        with open("/proc/%d/mountinfo" % pid, encoding="utf-8", errors="replace") as handle:
            return any(line.split()[3].startswith(prefix) for line in handle if len(line.split()) > 4)
    except OSError:
        return False


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below `path`, deepest first, once per stacked mount."""
    prefix = str(path)
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return sorted(found, key=lambda p: p.count("/"), reverse=True)


def binary(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise LabError("%s not found; run hack/setup.sh" % name)
    return path


def run(argv: list[Any]) -> None:
    result = subprocess.run([binary(argv[0]), *map(str, argv[1:])], capture_output=True, text=True, check=False)
    if result.returncode:
        raise LabError("%s failed (%d): %s" % (" ".join(map(str, argv[:3])), result.returncode, result.stderr.strip()))


def signal_process(pid: int, sig: int) -> None:
    try:
        # Lab processes lead their own group; anything else is signalled alone, never our own group.
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def unmount(point: str) -> None:
    if subprocess.run(["umount", point], capture_output=True, check=False).returncode:
        # Busy (a process we do not know still uses it): detach now, the kernel frees it later.
        run(["umount", "-l", point])


def tail(entry: Mapping[str, Any], lines: int = 20) -> str:
    try:
        return "\n".join(Path(entry["log"]).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ---- CLI -------------------------------------------------------------------------------------------------


class Supervisor:
    """Starts, waits for and stops the processes of ``entry`` dicts (``argv``, ``name``; ``pid`` and ``log`` are
    set here) under ``self.path``; the subclass says when an entry is ready (``_is_ready``)."""

    path: Path
    _children: dict[int, subprocess.Popen[bytes]]

    def _is_ready(self, entry: dict[str, Any]) -> bool:
        raise NotImplementedError

    def _launch(self, entry: dict[str, Any], log_name: str) -> None:
        if entry.get("socket"):
            # A stale socket from a killed run would make the readiness probe lie.
            Path(entry["socket"]).unlink(missing_ok=True)
            Path(entry["socket"] + ".ttrpc").unlink(missing_ok=True)
        log = open(self.path / "logs" / (log_name + ".log"), "ab")
        with log:
            # Own session: `down` kills the whole group, and the lab outlives the `up` command.
            child = subprocess.Popen(
                entry["argv"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.path,
                start_new_session=True,
            )
        self._children[child.pid] = child
        entry["pid"] = child.pid
        entry["log"] = log.name
        if entry.get("pid_file"):
            # What a reload by signal reads (CRI-O: there is no systemd here).
            write_file(Path(entry["pid_file"]), "%d\n" % child.pid)

    def _kill(self, pids: list[int]) -> None:
        pids = sorted(set(pids))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                signal_process(pid, sig)
            deadline = time.monotonic() + STOP_TIMEOUT
            while pids and time.monotonic() < deadline:
                pids = [pid for pid in pids if self._alive(pid)]
                if pids:
                    time.sleep(0.02)
            if not pids:
                return
        raise LabError("processes survived SIGKILL: %s" % pids)

    def _alive(self, pid: int) -> bool:
        child = self._children.get(pid)
        if child is not None:
            return child.poll() is None  # also reaps our own children
        return bool(_cmdline(pid))

    def _wait_ready(self, *groups: Any) -> None:
        pending = [entry for group in groups for entry in group]
        deadline = time.monotonic() + READY_TIMEOUT
        while pending:
            for entry in list(pending):
                if not self._alive(entry["pid"]):
                    raise LabError("%s exited at start-up; log %s:\n%s" % (entry["name"], entry["log"], tail(entry)))
                if self._is_ready(entry):
                    pending.remove(entry)
            if pending and time.monotonic() > deadline:
                names = ", ".join(e["name"] for e in pending)
                raise LabError("not ready after %ds: %s; see %s/logs" % (READY_TIMEOUT, names, self.path))
            if pending:
                time.sleep(0.02)

    # ---- registries --------------------------------------------------------------------------------------
