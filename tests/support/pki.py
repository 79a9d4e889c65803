# SPDX-License-Identifier: GPL-3.0-or-later
"""The one certificate maker of the tests and the lab: a CA, a server certificate for 127.0.0.1 and localhost, and
on request a client certificate and an RSA token-signing pair (``cryptography``, a dependency of ansible-core)."""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

FILES = ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key", "token.crt", "token.key")


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(directory: Path, name: str, key, cert: x509.Certificate) -> None:
    (directory / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = directory / f"{name}.key"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)


def make_pki(
    directory: str | os.PathLike[str],
    *,
    prefix: str = "pinned-test",
    client_cn: str | None = None,
    token_signer: bool = False,
    days: int = 30,
) -> dict[str, str]:
    """Write ``ca``, ``server`` (SAN IP:127.0.0.1, DNS:localhost), with ``client_cn`` a ``client`` certificate of
    that common name, and with ``token_signer`` a self-signed RSA ``token`` pair (RS256 JWTs), as ``<name>.crt`` and
    ``<name>.key`` (0600) in ``directory``; return ``{file name: path}`` of the files written."""
    out = Path(directory)
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    # P-256 keys: generated in milliseconds, unlike RSA.
    ca_key = ec.generate_private_key(ec.SECP256R1())

    def builder(subject: x509.Name, issuer: x509.Name, public_key, ca: bool = False) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        )

    ca_name = _name(f"{prefix} CA")
    ca_cert = (
        builder(ca_name, ca_name, ca_key.public_key(), ca=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write(out, "ca", ca_key, ca_cert)
    authority = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    leaves = [("server", "127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH)]
    if client_cn:
        leaves.append(("client", client_cn, ExtendedKeyUsageOID.CLIENT_AUTH))
    for name, common_name, usage in leaves:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            builder(_name(common_name), ca_name, key.public_key())
            .add_extension(authority, critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if name == "server":
            cert = cert.add_extension(
                x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
                ),
                critical=False,
            )
        _write(out, name, key, cert.sign(ca_key, hashes.SHA256()))
    if token_signer:
        # The registry's token auth checks RS256 signatures; the token server sends this certificate in x5c.
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = _name(f"{prefix} token signer")
        _write(out, "token", key, builder(name, name, key.public_key()).sign(key, hashes.SHA256()))
    return {name: str(out / name) for name in FILES if (out / name).exists()}
