# SPDX-License-Identifier: GPL-3.0-or-later
"""Test support, one module per concern (see tests/README.md): ``ports`` (free local ports), ``pki`` (the one
certificate maker), ``registry`` (the one docker-registry launcher and its configuration), ``images`` (image
synthesis and the push client), ``node`` (containerd node configuration and process supervision), ``lab`` (the
lab of ``hack/lab.py``), ``pythons`` (the node interpreters 3.8-3.13) and ``apiserver`` (the fake Kubernetes API server: schema and apply logic, HTTP server,
pytest fixtures)."""
