# SPDX-License-Identifier: GPL-3.0-or-later
"""The one list of upstream cases the collection does not follow, keyed ``<source>:<case id>``.

``DELIBERATE``: in scope, and the collection answers differently on purpose; the test checks that it still does.
``EXCLUDED``: outside the collection's scope; the test skips it with the reason. Cases the transcription itself
left out are listed by upstream-vectors (its ``excluded`` entries) and counted as excluded with their own reason.
Sources: ``reference`` (distribution/reference), ``registries`` (containers/image sysregistriesv2), ``auth``
(containers/image docker/config), ``openshift`` (openshift/api PinnedImageSet suites and the MCO's tables).
"""

from __future__ import annotations

_SHA256_ONLY = ("PinnedImageSet takes sha256 digests of 64 lower-case hex digits only; the collection refuses "
                "other digests that distribution/reference would parse")
_DOCKERCFG = ("legacy .dockercfg layout: the kubelet, which hands the credentials to the runtime over the CRI, reads "
              "its repository-path keys like config.json's, so the collection keeps path-scoped keys there too; "
              "containers/image looks up only the registry key")

_PORT_PREFIX = ("a host prefix never covers that host with a port (example.com vs example.com:5000): upstream "
                "matches it, but its own code calls that 'unintended and undocumented, don't rely on it'; a mirror "
                "rewrite of such a match gives host:port:port and fails the pull there")
_RAW_ENDPOINT = ("upstream builds the Endpoint in Go without parseLocation, so a trailing '/' stays; any location or "
                 "prefix read from a file has it trimmed (TestParseLocation#4 and #5), as the collection does")

DELIBERATE = {
    "registries:TestRefMatchingPrefix#5": _PORT_PREFIX,
    "auth:TestAuthKeyLookupOrder#2": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#4": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#6": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#8": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#10": _DOCKERCFG,
}

EXCLUDED = {
    "registries:TestRewriteReferenceFailedDuringParseNamed#1": _RAW_ENDPOINT,
    "registries:TestRewriteReferenceFailedDuringParseNamed#7": _RAW_ENDPOINT,
}
