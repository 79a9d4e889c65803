# SPDX-License-Identifier: GPL-3.0-or-later
"""The one list of upstream cases the collection does not follow, keyed ``<source>:<case id>``.

``DELIBERATE``: in scope, and the collection answers differently on purpose; the test checks that it still does.
``EXCLUDED``: outside the collection's scope; counted in the summary, not asserted. Cases the transcription itself
left out are listed by upstream-vectors (its ``excluded`` entries) and counted as excluded with their own reason.
Sources: ``reference`` (distribution/reference), ``registries`` (containers/image sysregistriesv2), ``auth``
(containers/image docker/config), ``openshift`` (openshift/api PinnedImageSet suites and the MCO's tables),
``containerd`` (containerd's hosts_test.go, transcribed in data/containerd_hosts.json).
"""

from __future__ import annotations

_SHA256_ONLY = (
    "PinnedImageSet takes sha256 digests of 64 lower-case hex digits only; the collection refuses "
    "other digests that distribution/reference would parse"
)
_DOCKERCFG = (
    "legacy .dockercfg layout: the kubelet, which hands the credentials to the runtime over the CRI, reads "
    "its repository-path keys like config.json's, so the collection keeps path-scoped keys there too; "
    "containers/image looks up only the registry key"
)

_PORT_PREFIX = (
    "a host prefix never covers that host with a port (example.com vs example.com:5000): upstream "
    "matches it, but its own code calls that 'unintended and undocumented, don't rely on it'; a mirror "
    "rewrite of such a match gives host:port:port and fails the pull there"
)
_RAW_ENDPOINT = (
    "upstream builds the Endpoint in Go without parseLocation, so a trailing '/' stays; any location or "
    "prefix read from a file has it trimmed (TestParseLocation#4 and #5), as the collection does"
)

_STRICT_NAME = (
    "the PinnedImageSet API's CEL rules accept this name, but distribution/reference, which every runtime "
    "parses names with, refuses it (upper-case path, empty or '..' component, leading '-' or trailing '_', "
    "a path over 255 characters): no node could ever pull it, so the collection refuses it and says so"
)

DELIBERATE = {
    "registries:TestRefMatchingPrefix#5": _PORT_PREFIX,
    "openshift:cel#3": _STRICT_NAME,  # registry.example.com/MyImage
    "openshift:cel#4": _STRICT_NAME,  # registry.example.com/@sha256:...
    "openshift:cel#5": _STRICT_NAME,  # registry.example.com//image
    "openshift:cel#6": _STRICT_NAME,  # registry.example.com/-image
    "openshift:cel#7": _STRICT_NAME,  # registry.example.com/image..x
    "openshift:cel#8": _STRICT_NAME,  # registry.example.com/ns_/image
    "openshift:cel#10": _STRICT_NAME,  # -registry.example.com/image
    "openshift:cel#30": _STRICT_NAME,  # a 447-character name whose path is 370 characters
    "auth:TestAuthKeyLookupOrder#2": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#4": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#6": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#8": _DOCKERCFG,
    "auth:TestAuthKeyLookupOrder#10": _DOCKERCFG,
}

_POOL_STATUS = (
    "MachineConfigPool status rules (machine counts, observedGeneration); the collection reads pools' spec "
    "only and never writes their status"
)

EXCLUDED = {
    "openshift:api:v1-machineconfigpools-PinnedImages:onUpdate#1": _POOL_STATUS,
    "openshift:api:v1-machineconfigpools-PinnedImages:onUpdate#2": _POOL_STATUS,
    "openshift:api:v1-machineconfigpools-PinnedImages:onUpdate#3": _POOL_STATUS,
    "openshift:api:v1-machineconfigpools-PinnedImages:onUpdate#4": _POOL_STATUS,
    "openshift:mco:nodes_for_pool#3": (
        "a Go object built in memory with the pool name 'ïnfra', which the API server refuses "
        "(not an RFC 1123 subdomain); the collection validates pools as the API server "
        "does, so it cannot meet such a pool"
    ),
    "registries:TestRewriteReferenceFailedDuringParseNamed#1": _RAW_ENDPOINT,
    "registries:TestRewriteReferenceFailedDuringParseNamed#7": _RAW_ENDPOINT,
}

_HOST_OPTIONS = (
    "the case sets HostOptions.DefaultScheme or DefaultTLS, which containerd's CRI plugin never sets "
    "(internal/cri/server/images/image_pull.go, registryHosts): the collection models the CRI pull only"
)
EXCLUDED.update({f"containerd:TestHTTPFallback#{n}": _HOST_OPTIONS for n in (1, 2, 6, 7, 8, 12, 13, 15)})
