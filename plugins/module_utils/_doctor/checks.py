# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's checks (node side, Python 3.8+): what on a node voids a pin or a prefetch, from facts read
elsewhere (``_doctor/facts``). Each check returns the findings it makes, each with its severity, what it means for
the pins or the prefetch, and the fix; none when the node is fine for it.

Severities: ``error`` (a pin or a prefetch does not hold: fix it first), ``warning`` (it holds only under a
condition the finding names), ``info`` (worth knowing, nothing to fix).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import human_size
from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import split_config_path

__all__ = [
    "ERROR",
    "INFO",
    "LAZY_SNAPSHOTTERS",
    "SEVERITIES",
    "WARNING",
    "Finding",
    "NodeFacts",
    "check_credential_policy",
    "check_crio_override",
    "check_gc",
    "check_image_filesystem",
    "check_k3s_labels",
    "check_kubelet_version",
    "check_lazy_pulling",
    "check_old_containerd",
    "check_transfer_mode",
    "diagnose",
    "finding",
    "no_python_finding",
]

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)
# The snapshotters that pull lazily: a finished pull does not mean the layers are on disk.
LAZY_SNAPSHOTTERS = ("stargz", "soci", "overlaybd", "nydus")
# containerd's CRI honours io.cri-containerd.pinned from 1.7.3.
_LABELS_FROM = (1, 7, 3)
# kubernetes #119986 (1.29, cherry-picked to 1.28 by #120054): before it the kubelet's GC ignored runtime pins.
_KUBELET_HONOURS_PINS_FROM = (1, 29)
# The kubelet's default high threshold, in percent of the image filesystem; at 100 its image GC is off.
_GC_HIGH_DEFAULT = 85
_GC_OFF = 100

Finding = Dict[str, str]


def finding(check: str, severity: str, detail: str, meaning: str, fix: str) -> Finding:
    """One finding: the check's name, its severity, what was found, what it means for the pins or the prefetch,
    and the fix."""
    return {"check": check, "severity": severity, "detail": detail, "meaning": meaning, "fix": fix}


def _version(text: str) -> Optional[Tuple[int, ...]]:
    match = re.match(r"^v?([0-9]+)\.([0-9]+)(?:\.([0-9]+))?", text or "")
    if match is None:
        return None
    return tuple(int(part) for part in match.groups(default="0"))


def _image_name(reference: str) -> str:
    """The name without tag or digest, as the kubelet's allowlist matches it."""
    name = reference.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def _allowlisted(name: str, allowlist: Sequence[str]) -> bool:
    for entry in allowlist:
        if entry.endswith("/*") and name.startswith(entry[:-1]):
            return True
        if entry == name:
            return True
    return False


def check_credential_policy(kubelet: Mapping[str, Any], source: str, wanted: Sequence[str]) -> List[Finding]:
    """KEP-2535: ``AlwaysVerify`` makes the kubelet check the registry again for every prefetched image; an allowlist
    policy does the same for the images its list omits."""
    policy = kubelet.get("imagePullCredentialsVerificationPolicy")
    meaning = (
        "a prefetched image counts as pulled by someone else: a pod with imagePullPolicy IfNotPresent pulls it "
        "again (the registry is back on the critical path), a pod with Never fails"
    )
    if policy == "AlwaysVerify":
        return [
            finding(
                "kubelet_credential_policy",
                ERROR,
                f"{source}: imagePullCredentialsVerificationPolicy is AlwaysVerify",
                meaning,
                "use NeverVerifyPreloadedImages (the default), or NeverVerifyAllowlistedImages with the prefetched "
                "images in preloadedImagesVerificationAllowlist",
            )
        ]
    if policy == "NeverVerifyAllowlistedImages":
        allowlist = [str(entry) for entry in kubelet.get("preloadedImagesVerificationAllowlist") or []]
        omitted = sorted({_image_name(image) for image in wanted if not _allowlisted(_image_name(image), allowlist)})
        if omitted:
            return [
                finding(
                    "kubelet_credential_policy",
                    ERROR,
                    f"{source}: imagePullCredentialsVerificationPolicy is NeverVerifyAllowlistedImages and "
                    f"preloadedImagesVerificationAllowlist omits {len(omitted)} wanted images ({', '.join(omitted)})",
                    meaning + " (for these images)",
                    "add these names (without tag or digest; a trailing /* covers a repository path) to "
                    "preloadedImagesVerificationAllowlist",
                )
            ]
    return []


def _images_table(config: Mapping[str, Any]) -> Tuple[Mapping[str, Any], str]:
    """containerd's CRI image settings and where they are (config version 3, else 2)."""
    plugins = config.get("plugins") or {}
    for key in ("io.containerd.cri.v1.images", "io.containerd.grpc.v1.cri"):
        table = plugins.get(key)
        if isinstance(table, dict):
            return table, key
    return {}, "io.containerd.cri.v1.images"


def check_transfer_mode(version: str, hosts: Mapping[str, Any]) -> List[Finding]:
    """containerd 2.1+ pulls through its transfer service, which takes a multi-entry ``config_path`` as one
    directory: the mirrors, CAs and headers of hosts.toml are silently ignored (containerd #12415, no fixed
    release). ``hosts``: ``cri_image_info``'s ``layout.hosts``, read with its imports by the code the disk guard
    uses (``_registry/containerd_hosts``), which keeps such a list as one root in transfer mode."""
    if hosts.get("pull_mode") != "transfer":
        return []
    lists = [value for value in hosts.get("config_path") or [] if len(split_config_path(value)) > 1]
    if not lists:
        return []
    return [
        finding(
            "transfer_mode_config_path",
            ERROR,
            f"containerd {version} pulls through its transfer service, and config_path is {lists[0]!r}, a list of "
            f"directories (from {hosts.get('source')})",
            "containerd takes the list as one directory name, so it reads none of the hosts.toml files: every pull, "
            "the prefetch's too, goes to the upstream registry, without the mirrors, CAs or headers",
            "set config_path to one directory, or set use_local_image_pull = true in the "
            "[plugins.'io.containerd.cri.v1.images'] table",
        )
    ]


def check_lazy_pulling(config: Optional[Mapping[str, Any]], source: str) -> List[Finding]:
    """A lazy-pulling snapshotter, or a proxy plugin, fetches layers when a container reads them."""
    data = config or {}
    images, key = _images_table(data)
    found: List[str] = []
    snapshotter = str(images.get("snapshotter") or "")
    containerd = ((data.get("plugins") or {}).get("io.containerd.grpc.v1.cri") or {}).get("containerd") or {}
    snapshotter = snapshotter or str(containerd.get("snapshotter") or "")
    if any(lazy in snapshotter for lazy in LAZY_SNAPSHOTTERS):
        found.append(f"snapshotter {snapshotter!r} ([plugins.{key!r}])")
    for name, plugin in sorted((data.get("proxy_plugins") or {}).items()):
        if isinstance(plugin, dict) and plugin.get("type") == "snapshot":
            found.append(f"the snapshot proxy plugin {name!r}")
    if not found:
        return []
    return [
        finding(
            "lazy_pulling",
            WARNING,
            f"{source} uses " + " and ".join(found),
            "a finished prefetch does not mean the layers are on the node: they are fetched when a container reads "
            "them, so the registry stays on the critical path and the disk guard's figures are low",
            "use the overlayfs snapshotter for the images that must not depend on the registry, or accept that "
            "only the manifests are prefetched",
        )
    ]


def check_old_containerd(runtime_name: str, version: str) -> List[Finding]:
    """containerd before 1.7.3 ignores io.cri-containerd.pinned."""
    parsed = _version(version)
    if runtime_name != "containerd" or parsed is None or parsed >= _LABELS_FROM:
        return []
    return [
        finding(
            "old_containerd",
            ERROR,
            f"containerd {version}",
            "containerd before 1.7.3 does not report the io.cri-containerd.pinned label to the kubelet, so the "
            "kubelet's garbage collection removes prefetched images like any other",
            "upgrade containerd to 1.7.3 or later; until then prefetch close to the time the images are needed",
        )
    ]


def check_k3s_labels(both: Sequence[str]) -> List[Finding]:
    """Images with k3s's own pin label and ours: k3s clears both at every start."""
    if not both:
        return []
    return [
        finding(
            "k3s_pin_label",
            WARNING,
            f"{len(both)} images carry both io.cattle.k3s.pinned and io.cri-containerd.pinned ({', '.join(both)})",
            "k3s removes both labels from every image it labelled itself when it starts, so these images lose their "
            "pin at the next k3s restart (k3s #14265; fixed releases unverified)",
            "run the prefetch again after each k3s restart (the node role does on every run), or upgrade k3s to a "
            "release with k3s #14266",
        )
    ]


def check_crio_override(path: str, listed: Sequence[str], source: Optional[str], kept: Sequence[str]) -> List[Finding]:
    """A CRI-O drop-in read after ours that sets ``pinned_images``: CRI-O keeps only the last list."""
    if source is None or source == path or not listed:
        return []
    lost = [name for name in listed if name not in kept]
    severity = ERROR if lost else INFO
    detail = f"CRI-O reads {source} after {path}, and its pinned_images ({len(kept)} entries) replaces the whole list"
    if lost:
        detail += f": {len(lost)} of the {len(listed)} images of {path} are not pinned"
    return [
        finding(
            "crio_dropin_override",
            severity,
            detail,
            "CRI-O pins only what the last drop-in that sets pinned_images lists"
            + (", so the kubelet may remove these images" if lost else "; it holds every image of ours today"),
            f"remove pinned_images from {source}, or list these images there too",
        )
    ]


def check_kubelet_version(version: Optional[str]) -> List[Finding]:
    """The kubelet before kubernetes #119986 garbage-collects images the runtime reports as pinned."""
    parsed = _version(version or "")
    if parsed is None or parsed[:2] >= _KUBELET_HONOURS_PINS_FROM:
        return []
    return [
        finding(
            "old_kubelet",
            ERROR if parsed[:2] < (1, 28) else WARNING,
            f"kubelet {version}",
            "a kubelet before kubernetes #119986 (1.29; cherry-picked to 1.28 by #120054) garbage-collects images "
            "the runtime reports as pinned",
            "upgrade the kubelet to 1.29 or later (or a 1.28 patch release with #120054)",
        )
    ]


def _duration_seconds(value: Any) -> Optional[float]:
    """A Go duration (``"72h"``, ``"1h30m"``, ``"0s"``) in seconds; None when it is not one."""
    text = str(value or "").strip()
    parts = re.findall(r"([0-9.]+)(h|ms|m|s)", text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(number) * scale[unit] for number, unit in parts)


def _gc_high_percent(kubelet: Mapping[str, Any]) -> Optional[int]:
    """The kubelet's high threshold, or None when it is 100: that turns its image GC off."""
    try:
        high = int(kubelet.get("imageGCHighThresholdPercent", _GC_HIGH_DEFAULT))
    except (TypeError, ValueError):
        high = _GC_HIGH_DEFAULT
    return None if high >= _GC_OFF else high


def _not_counted(missing: int) -> str:
    return (
        f"; {missing} wanted images not on the node are not counted (the doctor reads no registry: "
        "pinned.images.prefetch in check mode has its disk guard estimate them)"
        if missing
        else ""
    )


def check_gc(
    kubelet: Mapping[str, Any],
    source: str,
    fs_total: Optional[int],
    fs_used: Optional[int],
    missing: int,
    pinned: bool,
) -> List[Finding]:
    """The kubelet's image GC against what the node wants: ``imageMaximumGCAge`` removes unused unpinned images
    after that age; once the image filesystem's use (``fs_used``: its total less its available bytes, as the
    kubelet measures it; the wanted images the node has are in it) reaches the high threshold the kubelet removes
    unpinned ones. ``missing`` wanted images are not on the node, their sizes unknown here."""
    findings: List[Finding] = []
    age = _duration_seconds(kubelet.get("imageMaximumGCAge"))
    if age and not pinned:
        findings.append(
            finding(
                "gc_maximum_age",
                WARNING,
                f"{source}: imageMaximumGCAge is {kubelet.get('imageMaximumGCAge')}",
                "the kubelet removes an unpinned image no container used for that long: a prefetched image that is "
                "not pinned is gone before it is needed when the wait is longer",
                "pin the prefetched images (pin: auto), or prefetch closer to the time they are needed",
            )
        )
    if fs_total and fs_used is not None:
        high = _gc_high_percent(kubelet)
        used = 100.0 * fs_used / fs_total
        if high is not None and used >= high:
            findings.append(
                finding(
                    "gc_threshold",
                    WARNING if pinned else ERROR,
                    f"the image filesystem is {used:.0f}% full; the kubelet's imageGCHighThresholdPercent is {high} "
                    f"({source})" + _not_counted(missing),
                    "past the threshold the kubelet removes unused unpinned images until it is below the low one"
                    + ("; pinned images stay, but every other image goes" if pinned else ", prefetched ones too"),
                    "give the image filesystem more room, or prefetch fewer images at a time",
                )
            )
    return findings


def check_image_filesystem(
    kubelet: Mapping[str, Any],
    source: str,
    wanted_present_bytes: int,
    fs_total: Optional[int],
    mountpoint: str,
    missing: int,
    pinned: bool = True,
) -> List[Finding]:
    """The wanted images the node holds (``wanted_present_bytes``: their CRI sizes, once per image) take the
    kubelet's high threshold share of the image filesystem or more: pinned, they alone keep it past the GC
    threshold; unpinned, the GC removes them. A lower bound when ``missing`` wanted images are not on the node."""
    high = _gc_high_percent(kubelet)
    if not fs_total or high is None:
        return []
    share = 100.0 * wanted_present_bytes / fs_total
    if share < high:
        return []
    return [
        finding(
            "image_filesystem_size",
            ERROR,
            f"the wanted images on the node take {human_size(wanted_present_bytes)}, {share:.0f}% of the "
            f"{human_size(fs_total)} image filesystem {mountpoint}; the kubelet's imageGCHighThresholdPercent is "
            f"{high} ({source})" + _not_counted(missing),
            "the pins alone keep the image filesystem past the kubelet's GC threshold: the kubelet keeps removing "
            "every other unpinned image, and the node has no room for more"
            if pinned
            else "past the kubelet's GC threshold the kubelet removes unused unpinned images, these among them, until "
            "the image filesystem is below the low threshold",
            "split the node's sets, or give the image filesystem more room",
        )
    ]


def no_python_finding(host: str) -> Finding:
    """A node without Python 3 (Talos, Bottlerocket, Flatcar, kind): no module runs there over SSH."""
    return finding(
        "no_python",
        ERROR,
        f"{host} has no python3",
        "no module of the collection runs on it over SSH, the doctor's checks included",
        "the prefetch and audit playbooks reach such a node in pod mode (-e cluster_node_access=pod), which runs "
        "the modules in a pod with its own Python; the doctor has no pod mode: its checks need python3 on the node",
    )


@dataclass(frozen=True)
class NodeFacts:
    """What the doctor read on one node (``_doctor/facts``, and ``cri_image_info``'s images, image filesystem and
    layout), for ``diagnose``."""

    runtime_name: str
    runtime_version: str
    wanted: Tuple[str, ...] = ()
    # The CRI sizes of the wanted images the node has (once per image id), and how many it lacks (sizes unknown).
    wanted_present_bytes: int = 0
    wanted_missing: int = 0
    # Whether every wanted image the node has is pinned.
    wanted_pinned: bool = False
    kubelet: Mapping[str, Any] = field(default_factory=dict)
    kubelet_source: str = ""
    kubelet_version: Optional[str] = None
    containerd_config: Optional[Mapping[str, Any]] = None
    containerd_config_source: str = ""
    # cri_image_info's layout.hosts: containerd's config_path and pull mode, as the disk guard reads them.
    registry_hosts: Mapping[str, Any] = field(default_factory=dict)
    both_labels: Tuple[str, ...] = ()
    dropin_path: str = ""
    dropin_listed: Tuple[str, ...] = ()
    dropin_source: Optional[str] = None
    dropin_kept: Tuple[str, ...] = ()
    # The image filesystem from statvfs: its size, and its use as the kubelet measures it (total less available).
    fs_mountpoint: str = ""
    fs_total: Optional[int] = None
    fs_used: Optional[int] = None


def diagnose(facts: NodeFacts) -> List[Finding]:
    """Every check that applies to the node's runtime, errors first."""
    found: List[Finding] = []
    found += check_credential_policy(facts.kubelet, facts.kubelet_source, facts.wanted)
    found += check_kubelet_version(facts.kubelet_version)
    found += check_gc(
        facts.kubelet, facts.kubelet_source, facts.fs_total, facts.fs_used, facts.wanted_missing, facts.wanted_pinned
    )
    found += check_image_filesystem(
        facts.kubelet,
        facts.kubelet_source,
        facts.wanted_present_bytes,
        facts.fs_total,
        facts.fs_mountpoint,
        facts.wanted_missing,
        facts.wanted_pinned,
    )
    if facts.runtime_name == "containerd":
        found += check_old_containerd(facts.runtime_name, facts.runtime_version)
        found += check_transfer_mode(facts.runtime_version, facts.registry_hosts)
        found += check_lazy_pulling(facts.containerd_config, facts.containerd_config_source)
        found += check_k3s_labels(facts.both_labels)
    elif facts.runtime_name == "cri-o":
        found += check_crio_override(facts.dropin_path, facts.dropin_listed, facts.dropin_source, facts.dropin_kept)
    return sorted(found, key=lambda item: SEVERITIES.index(item["severity"]))
