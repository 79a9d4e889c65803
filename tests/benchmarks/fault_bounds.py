# SPDX-License-Identifier: GPL-3.0-or-later
"""Time and peak memory of each fault case of issue #16 (bounded input, cluster calls that end, overlapping runs).

Usage: .venv/bin/python tests/benchmarks/fault_bounds.py [request_timeout]   (default 5)
Each case runs in a fresh child Python process; the table shows its wall time, its peak RSS (VmHWM of that child,
which includes the interpreter and the imports: about 30-60 MiB before any work) and the first words of the error
it ended with. Everything is written under a temporary directory.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / ".build" / "collections"), str(ROOT / "tests")]

from support.apiserver.api import FakeApiServer  # noqa: E402
from support.ports import silent_port  # noqa: E402

IMAGE = "quay.io/openshift/app-a@sha256:" + "a" * 64
BIG = 50 * 1024 * 1024
CHILD_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


def alias_bomb(levels: int, where: str) -> str:
    anchors = ['  a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    anchors += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    top = f"*a{levels - 1}"
    api_version = top if where == "apiVersion" else "machineconfiguration.openshift.io/v1"
    image = top if where == "image" else IMAGE
    return (
        "x-anchors:\n" + "\n".join(anchors) + f"\napiVersion: {api_version}\nkind: PinnedImageSet\n"
        f"metadata: {{name: bomb}}\nspec: {{pinnedImages: [{{name: {image}}}]}}\n"
    )


def big_file(path: Path, head: str, line: str) -> Path:
    with path.open("w") as handle:
        handle.write(head)
        chunk = line * (1024 * 1024 // len(line))
        while handle.tell() < BIG:
            handle.write(chunk)
    return path


def run_child(code: str) -> tuple:
    """(seconds, peak RSS in MiB, last output line) of ``code`` in a new interpreter.

    The peak is the child's own VmHWM: ru_maxrss would carry over the parent's high-water mark through fork and exec.
    """
    code = textwrap.dedent(code) + textwrap.dedent("""
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                print("VmHWM", line.split()[1])
    """)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=CHILD_ENV, text=True, timeout=300, check=False
    )
    elapsed = time.monotonic() - start
    lines = [line for line in (proc.stdout + proc.stderr).strip().splitlines() if line.strip()]
    peak = next((int(line.split()[1]) / 1024 for line in lines if line.startswith("VmHWM ")), float("nan"))
    said = [line for line in lines if not line.startswith("VmHWM ")]
    return elapsed, peak, (said[-1] if said else "")[:110]


def loader(call: str) -> str:
    return f"""
        from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
        from ansible_collections.pinned.images.plugins.module_utils._registry.auth import load_docker_config
        from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import load_registries_conf
        try:
            {call}
            print("loaded")
        except Exception as exc:
            print(type(exc).__name__ + ": " + str(exc).replace(chr(10), " "))
    """


def module_case(name: str, args: dict) -> str:
    return f"""
        import json
        from ansible.module_utils.testing import patch_module_args
        from ansible_collections.pinned.images.plugins.modules import {name} as module
        import io, contextlib
        out = io.StringIO()
        with patch_module_args({args!r}):
            try:
                with contextlib.redirect_stdout(out):
                    module.main()
            except SystemExit:
                pass
        print(json.loads(out.getvalue()).get("msg"))
    """


def cluster_cases(url: str, timeout: float) -> list:
    conn = {"host": url, "api_key": "t0ken", "request_timeout": timeout}
    return [
        ("pinned_image_set", dict(conn, name="s", images=[IMAGE], apply=True)),
        ("machine_config", dict(conn, pools=["worker"], images=[IMAGE], apply=True)),
        ("pinned_image_status", dict(conn, nodes=[{"name": "n1", "sets": [{"name": "s", "images": [IMAGE]}]}])),
        ("pinned_image_set_info", dict(conn, cluster=True)),
    ]


def main() -> None:
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    rows = []
    with tempfile.TemporaryDirectory(prefix="fault-bounds-") as tmp:
        tmp = Path(tmp)
        for levels, where in ((10, "apiVersion"), (10, "image")):
            path = tmp / f"bomb-{where}.yaml"
            path.write_text(alias_bomb(levels, where))
            rows.append(
                (
                    f"set file: {levels}-level alias bomb in {where} ({path.stat().st_size} B)",
                    *run_child(loader(f"load_sets({str(path)!r})")),
                )
            )
        sets = big_file(
            tmp / "big.yaml",
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: PinnedImageSet\n"
            "metadata: {name: big}\nspec:\n  pinnedImages:\n",
            f"  - name: {IMAGE}\n",
        )
        rows.append(("set file: 50 MiB", *run_child(loader(f"load_sets({str(sets)!r})"))))
        secret = big_file(tmp / "config.json", '{"auths": {', '"r.example": {"auth": "dTpw"}, ')
        rows.append(("pull secret: 50 MiB", *run_child(loader(f"load_docker_config({str(secret)!r})"))))
        conf = big_file(tmp / "registries.conf", "", '[[registry]]\nlocation = "quay.io"\n')
        rows.append(
            ("registries.conf: 50 MiB", *run_child(loader(f"load_registries_conf({str(conf)!r}, None, '', None, '')")))
        )
        nested = tmp / "nested.json"
        nested.write_text('{"auths": ' + "[" * 100_000 + "]" * 100_000 + "}")
        rows.append(
            ("pull secret: 100,000-deep nesting (200 KB)", *run_child(loader(f"load_docker_config({str(nested)!r})")))
        )
        nested_conf = tmp / "nested.conf"
        nested_conf.write_text("a = " + "[" * 100_000 + "]" * 100_000)
        rows.append(
            (
                "registries.conf: 100,000-deep nesting (200 KB)",
                *run_child(loader(f"load_registries_conf({str(nested_conf)!r}, None, '', None, '')")),
            )
        )
        dropin = tmp / "50-pinned-images"
        with dropin.open("wb") as handle:
            handle.truncate(BIG)
        rows.append(
            (
                "CRI-O drop-in: 50 MiB old file replaced",
                *run_child(f"""
            from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import atomic_write
            print(atomic_write({str(dropin)!r}, "x\\n")["diff"]["before"].strip())
        """),
            )
        )
        rows.append(
            (
                "status annotation: 50 MiB value",
                *run_child(f"""
            from ansible_collections.pinned.images.plugins.module_utils._openshift.node_status import parse_status
            value = "[" + " " * {BIG} + "]"  # the 50 MiB string itself is in the peak
            print("parsed as", parse_status(value))
        """),
            )
        )

        with silent_port() as port:
            url = f"http://127.0.0.1:{port}"
            for name, args in cluster_cases(url, timeout):
                rows.append((f"{name}: server never answers", *run_child(module_case(name, args))))
        fake = FakeApiServer(tmp / "fake")
        (tmp / "fake").mkdir()
        fake.start()
        try:
            fake.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
            fake.hold("PATCH", "/apis/")
            fake.hold("GET", "/apis/machineconfiguration.openshift.io/v1/")
            fake.hold("GET", "/api/v1/nodes")
            for name, args in cluster_cases(fake.url, timeout):
                args = dict(args, api_key=fake.token)
                rows.append((f"{name}: hangs after discovery", *run_child(module_case(name, args))))
        finally:
            fake.stop()

        sock = str(tmp / "c.sock.ttrpc")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(sock)
        listener.listen(8)
        try:
            rows.append(
                (
                    "CRI socket that does not speak gRPC (5 s connect timeout)",
                    *run_child(f"""
                from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient, CriError
                try:
                    CriClient({sock!r}, connect_timeout=5).connect()
                except CriError as exc:
                    print(exc)
            """),
                )
            )
        finally:
            listener.close()

        lock = tmp / "prefetch.lock"
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(f"""
            import sys
            from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock
            NodeLock({str(lock)!r}, "first").acquire()
            print("held", flush=True)
            sys.stdin.read()
        """),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=CHILD_ENV,
            text=True,
        )
        holder.stdout.readline()
        rows.append(
            (
                "second prefetch on a locked node",
                *run_child(f"""
            from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock, NodeLockError
            try:
                NodeLock({str(lock)!r}, "second").acquire()
            except NodeLockError as exc:
                print(exc)
        """),
            )
        )
        holder.stdin.close()
        holder.wait()

    print(f"request_timeout {timeout:g} s; peak RSS is the whole child interpreter\n")
    print(f"{'case':58} {'seconds':>8} {'peak MiB':>9}  ends with")
    for case, seconds, rss, text in rows:
        print(f"{case:58} {seconds:8.2f} {rss:9.1f}  {text}")
    print(
        json.dumps([dict(case=c, seconds=round(s, 3), peak_mib=round(r, 1)) for c, s, r, _t in rows]), file=sys.stderr
    )


if __name__ == "__main__":
    main()
