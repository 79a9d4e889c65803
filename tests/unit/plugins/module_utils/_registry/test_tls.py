# SPDX-License-Identifier: GPL-3.0-or-later
"""_registry/tls: the context of a registry with the CAs and client pairs of its certs.d directories."""

from __future__ import annotations

import shutil
import ssl

import pytest

from ansible_collections.pinned.images.plugins.module_utils._registry.errors import RegistryTLSError
from ansible_collections.pinned.images.plugins.module_utils._registry.tls import tls_context
from support.pki import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"), client_cn="puller")


def certs_dir(tmp_path, host, files):
    directory = tmp_path / "certs.d" / host
    directory.mkdir(parents=True)
    for name, source in files.items():
        shutil.copy(source, directory / name)
    return str(tmp_path / "certs.d")


def test_a_ca_of_the_host_directory_is_trusted_and_others_are_not(pki, tmp_path):
    base = certs_dir(tmp_path, "127.0.0.1:5000", {"ca.crt": pki["ca.crt"]})
    ours = tls_context("127.0.0.1:5000", False, [str(tmp_path / "none"), base])
    other = tls_context("127.0.0.1:5001", False, [base])
    names = [cert["subject"] for cert in ours.get_ca_certs()]
    assert any(("commonName", "pinned-test CA") in rdn for subject in names for rdn in subject)
    assert len(ours.get_ca_certs()) == len(other.get_ca_certs()) + 1
    assert ours.verify_mode == ssl.CERT_REQUIRED and ours.check_hostname


def test_insecure_verifies_nothing_but_still_sends_the_client_pair(pki, tmp_path):
    base = certs_dir(tmp_path, "reg.test", {"client.cert": pki["client.crt"], "client.key": pki["client.key"]})
    context = tls_context("reg.test", True, [base])
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname


def test_a_client_certificate_without_its_key_and_a_broken_ca_are_named(pki, tmp_path):
    base = certs_dir(tmp_path, "reg.test", {"client.cert": pki["client.crt"]})
    with pytest.raises(RegistryTLSError, match=r"client certificate .*client\.cert has no matching key"):
        tls_context("reg.test", False, [base])
    broken = tmp_path / "b"
    (broken / "reg.test").mkdir(parents=True)
    (broken / "reg.test" / "ca.crt").write_text("not a certificate")
    with pytest.raises(RegistryTLSError, match=r"cannot load .*ca\.crt for registry reg\.test"):
        tls_context("reg.test", False, [str(broken)])
