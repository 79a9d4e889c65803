# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""TLS to a registry: verified unless the source is insecure; CAs (``*.crt``) and client pairs (``*.cert``/``*.key``)
from ``certs.d/<host[:port]>/`` directories, as containers/image and docker read them."""

from __future__ import annotations

import os
import ssl
from typing import Iterable, Optional, Tuple

from ansible_collections.pinned.images.plugins.module_utils._registry.errors import RegistryTLSError

__all__ = ["endpoint_tls_context", "tls_context"]


def tls_context(host: str, insecure: bool, certs_dirs: Iterable[str]) -> ssl.SSLContext:
    """The context for ``host`` (``host[:port]``) with the files of its certs.d directories."""
    if insecure:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context()
    for base in certs_dirs:
        directory = os.path.join(base, host)
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            try:
                if name.endswith(".crt") and not insecure:
                    context.load_verify_locations(cafile=path)
                elif name.endswith(".cert"):
                    key_path = path[: -len(".cert")] + ".key"
                    if not os.path.exists(key_path):
                        raise RegistryTLSError(f"client certificate {path} has no matching key {key_path}", host)
                    context.load_cert_chain(path, key_path)
            except (ssl.SSLError, OSError) as exc:
                raise RegistryTLSError(f"cannot load {path} for registry {host}: {exc}", host) from None
    return context


def endpoint_tls_context(
    netloc: str,
    ca_files: Optional[Iterable[str]],
    client_pairs: Iterable[Tuple[str, str]],
    skip_verify: bool,
    source: str,
) -> ssl.SSLContext:
    """containerd's TLS for a hosts.toml host (named in ``source``): the system roots plus its ``ca`` files, its
    ``client`` pairs ((cert, key); an empty key is in the cert file); ``skip_verify`` verifies nothing."""
    context = ssl.create_default_context()
    if skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    path = ""
    try:
        for path in ca_files or ():
            context.load_verify_locations(cafile=path)
        for path, key in client_pairs:
            context.load_cert_chain(path, key or None)
    except (ssl.SSLError, OSError) as exc:
        raise RegistryTLSError(f"{source}: cannot load {path} for host {netloc}: {exc}", netloc) from None
    return context
