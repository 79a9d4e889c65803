"""Stand-in for pip's get-pip.py, which ansible-test downloads from a host this machine cannot reach.

ansible-test runs it inside each new sanity virtual environment as ``get-pip.py [pip options] pip==X``.
It bootstraps pip from the interpreter's bundled wheel (ensurepip), then installs the requested packages from
the package index as get-pip.py would.
"""

import ensurepip
import os
import subprocess
import sys

DEBIAN_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
env = dict(os.environ)
ensurepip.bootstrap(upgrade=True)
# ansible-test scrubs the environment (and ensurepip would hide pip.conf): keep the machine's CA bundle.
if "SSL_CERT_FILE" not in env and os.path.exists(DEBIAN_CA_BUNDLE):
    env["SSL_CERT_FILE"] = DEBIAN_CA_BUNDLE
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--upgrade", *args], env=env))
