# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for functional tests: a real lab (docker-registry + containerd nodes); `ansible` runs are in
fixtures/ansible_runs.py.

The lab is started once per session by the fixture itself (hack/lab.py), under pytest's temp dir.
Modules run through `ansible` / `ansible-playbook` (AnsiballZ, local connection), as users run them.
"""

from __future__ import annotations

import pytest

from fixtures.ansible_runs import node_socket, remove_all_images
from fixtures.reference import reference_path
from support.cri_workloads import remove_workloads
from support.lab import started_lab
from support.node import RUNTIMES

# The runtimes the runtime-dependent tests run on, one lab node each, shared by the session. Another runtime of
# support.node.RUNTIMES is one more line here.
LAB_RUNTIMES = (
    "containerd-1.6",
    "containerd-1.7",
    "containerd-2.1",
    "cri-o",
)


def pytest_collection_modifyitems(items):
    """Every test that uses the ``lab`` fixture, directly or through another fixture, carries the ``lab`` marker;
    modules that start labs of their own mark themselves."""
    for item in items:
        if "lab" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    with started_lab(tmp_path_factory.mktemp("lab"), nodes=4, control_plane=1) as lab:
        yield lab


@pytest.fixture
def empty_node(lab):
    """A node with no images: worker-0, emptied through CRI RemoveImage."""
    socket = node_socket(lab, "worker-0")
    remove_all_images(socket)
    return socket


@pytest.fixture(scope="session", params=LAB_RUNTIMES)
def runtime_node(request, lab):
    """The session lab's node of one runtime (``rt-<runtime>``), added on first use: its state entry. CRI-O comes
    from the reference directory: without it these cases skip with the one line naming PINNED_IMAGES_REFERENCE_DIR."""
    if RUNTIMES[request.param].kind == "cri-o":
        reference_path("cri-o")
    return lab.runtime_node(request.param)


@pytest.fixture
def runtime_empty_node(runtime_node):
    """``runtime_node`` emptied through CRI RemoveImage."""
    remove_all_images(runtime_node["endpoint"])
    return runtime_node


@pytest.fixture(scope="session", params=LAB_RUNTIMES)
def workload_node(request, lab):
    """The session lab's workload node of one runtime (``wl-<runtime>``, ``Lab.workload_node``): it runs pod
    sandboxes and containers made with support.cri_workloads. CRI-O skips as ``runtime_node`` does."""
    if RUNTIMES[request.param].kind == "cri-o":
        reference_path("cri-o")
    return lab.workload_node(request.param)


@pytest.fixture
def workloads(workload_node):
    """``workload_node``, and afterwards every sandbox and container support.cri_workloads made on it removed."""
    yield workload_node
    remove_workloads(workload_node)
