# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""TLS to a registry: verified unless the source is insecure; CAs (``*.crt``) and client pairs (``*.cert``/``*.key``)
from ``certs.d/<host[:port]>/`` directories, as containers/image and docker read them."""

from __future__ import annotations

import os
import ssl
from typing import Iterable

from ansible_collections.pinned.images.plugins.module_utils._registry.errors import RegistryTLSError


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
