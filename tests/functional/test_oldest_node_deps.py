# SPDX-License-Identifier: GPL-3.0-or-later
"""The committed CRI and containerd stubs run on the oldest grpcio/protobuf that requirements-node.txt allows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

from fixtures.ansible_runs import COLLECTIONS, NO_PRIVATE_PYTHON, ROOT, node_socket


def oldest(requirement: str) -> str:
    text = (ROOT / "requirements-node.txt").read_text()
    return re.search(rf"^{requirement}>=([0-9.]+)$", text, re.M).group(1)


def test_cri_client_on_oldest_grpcio_and_protobuf(lab, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pins = [f"grpcio=={oldest('grpcio')}", f"protobuf=={oldest('protobuf')}"]
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *pins], check=True, capture_output=True)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(COLLECTIONS)!r})
        import grpc, google.protobuf
        from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
        from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient
        with CriClient({node_socket(lab, "worker-0")!r}) as client:
            print(grpc.__version__, google.protobuf.__version__, client.version()["runtime_name"], len(client.list_images()))
        with ContainerdClient({node_socket(lab, "worker-0")!r}) as client:
            print(len(client.list_records()) >= len(client.list_images()))
    """)
    # Not the machine's private directory, whose newer protobuf would come first on sys.path.
    env = dict(os.environ, PINNED_IMAGES_PYTHON_DIR=str(NO_PRIVATE_PYTHON))
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, check=False, env=env
    )
    assert proc.returncode == 0, proc.stderr
    grpc_version, protobuf_version, runtime, _count, records_listed = proc.stdout.split()
    assert (grpc_version, protobuf_version, runtime) == (oldest("grpcio"), oldest("protobuf"), "containerd")
    # Every CRI image has at least one record in containerd's images API.
    assert records_listed == "True"
