# SPDX-License-Identifier: GPL-3.0-or-later
"""Local TCP ports on 127.0.0.1: free ones, and one that accepts connections and never answers."""

from __future__ import annotations

import contextlib
import socket
from typing import Iterator


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports nothing listens on (all stay bound until every one is known)."""
    sockets = []
    try:
        for _index in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port() -> int:
    """One port nothing listens on (also for connection-refused tests)."""
    return free_ports(1)[0]


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A port that accepts connections (into the kernel's backlog) and never answers, while the context lasts."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]
