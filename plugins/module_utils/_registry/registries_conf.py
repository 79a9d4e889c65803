# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Registry mirrors and blocks from containers-registries.conf(5) v2, plus an explicit list.

The CRI runtime decides on its own where it pulls from; this module predicts the same pull sources
(mirrors first, then the primary location) so that manifests can be read for the disk estimate and
credentials can be chosen per source. Matching follows containers/image ``sysregistriesv2``: the longest
matching prefix wins, a prefix is ``host``, ``host/path`` (optionally with tag or digest) or ``*.example.com``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Tuple, Type, Union

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import (
    StrPath,
    read_config_text,
    short_value,
    toml_module,
)
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageRef,
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig, RegistryCredentials
from ansible_collections.pinned.images.plugins.module_utils._registry.client import HostEndpoint

__all__ = [
    "DEFAULT_REGISTRIES_CONF",
    "DEFAULT_REGISTRIES_CONF_D",
    "MAX_CONF_SIZE",
    "PULL_FROM_MIRROR_VALUES",
    "Endpoint",
    "Mirror",
    "PullSource",
    "RegistriesConf",
    "RegistriesConfError",
    "Registry",
    "RegistryBlockedError",
    "credentials_for_source",
    "load_registries_conf",
    "load_toml",
    "parse_registries_conf",
    "registries_from_list",
]

DEFAULT_REGISTRIES_CONF = "/etc/containers/registries.conf"
DEFAULT_REGISTRIES_CONF_D = "/etc/containers/registries.conf.d"
# registries.conf files are small; refuse to parse anything absurd.
MAX_CONF_SIZE = 4 * 1024 * 1024
PULL_FROM_MIRROR_VALUES = ("", "all", "digest-only", "tag-only")
# The keys containers/image decodes (sysregistriesv2); others are ignored by it and here, with a warning.
_CONF_KEYS = frozenset(
    (
        "registry",
        "registries",
        "unqualified-search-registries",
        "short-name-mode",
        "credential-helpers",
        "aliases",
        "additional-layer-store-auth-helper",
    )
)
_REGISTRY_KEYS = frozenset(("prefix", "location", "insecure", "blocked", "mirror", "mirror-by-digest-only"))
_CONF_MIRROR_KEYS = frozenset(("location", "insecure", "pull-from-mirror", "pull_from_mirror"))


class RegistriesConfError(CollectionError):
    """registries.conf or the explicit mirror list is unreadable or invalid."""


class RegistryBlockedError(RegistriesConfError):
    """The image's registry is marked ``blocked``; the runtime would refuse the pull."""


@dataclass(frozen=True)
class Endpoint:
    """Where images are pulled from (``host[:port][/path]``) and whether plain HTTP or unverified TLS is allowed."""

    location: str
    insecure: bool = False


@dataclass(frozen=True)
class Mirror(Endpoint):
    """A mirror of a registry entry; ``pull_from_mirror`` is ``all``, ``digest-only``, ``tag-only`` or empty."""

    pull_from_mirror: str = ""


@dataclass(frozen=True)
class Registry(Endpoint):
    """A ``[[registry]]`` entry; ``prefix`` is the image name prefix it applies to (``location`` when unset)."""

    prefix: str = ""
    blocked: bool = False
    mirrors: Tuple[Mirror, ...] = ()
    mirror_by_digest_only: bool = False
    source: str = ""


@dataclass(frozen=True)
class PullSource:
    """One place the runtime would try: ``reference`` is the image rewritten onto it; ``endpoint`` the containerd
    hosts.toml host that serves it (None: the registry of ``reference`` itself)."""

    reference: ImageRef
    registry: str
    insecure: bool = False
    mirror: bool = False
    endpoint: Optional[HostEndpoint] = None

    def __str__(self) -> str:
        return str(self.reference)

    @property
    def description(self) -> str:
        """Where the manifest was read, for the result: the host and the file that named it, or the reference."""
        if self.endpoint is None:
            return str(self.reference)
        return f"{self.endpoint} ({self.endpoint.source})"


def _matching_prefix_length(ref: str, prefix: str) -> int:
    """Length of ``ref`` covered by ``prefix``, or -1 (containers/image ``refMatchingPrefix``).

    A wildcard covers a host with a port (``*.example.com`` matches ``a.example.com:5000/x``), as upstream intends.
    A plain host prefix does not (``example.com`` never matches ``example.com:5000/x``): upstream matches it, but
    marks that "unintended and undocumented, don't rely on it" (a deliberate difference, see docs/registries.md).
    """
    if prefix.startswith("*."):
        suffix = prefix[1:]
        index = ref.find(suffix)
        if index == -1 or "/" in ref[:index]:
            return -1
        index += len(suffix)
        if index == len(ref) or ref[index] in ":/@":
            return index
        return -1
    if ref == prefix:
        return len(prefix)
    if len(ref) > len(prefix) and ref.startswith(prefix) and ref[len(prefix)] in ":/@":
        # ':' right after a host-only prefix starts a port, not a tag.
        if ref[len(prefix)] == ":" and "/" not in prefix:
            return -1
        return len(prefix)
    return -1


def _require(value: object, kind: type, where: str, noun: str) -> None:
    """Raise RegistriesConfError ``<where> must be <noun>, got <type>`` unless ``value`` is a ``kind``."""
    if not isinstance(value, kind):
        raise RegistriesConfError(f"{where} must be {noun}, got {type(value).__name__}")


def _check_location(value: object, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise RegistriesConfError(f"{where}: {what} must be a string, got {type(value).__name__}")
    value = value.strip()
    if value.startswith(("http://", "https://")):
        raise RegistriesConfError(f"{where}: {what} {short_value(value)}: URI schemes are not supported")
    value = value.rstrip("/")
    if any(ch.isspace() for ch in value):
        raise RegistriesConfError(f"{where}: {what} {short_value(value)} contains whitespace")
    return value


def _check_bool(value: object, where: str, what: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RegistriesConfError(f"{where}: {what} must be true or false, got {short_value(value)}")
    return value


def _build_registry(
    prefix: object,
    location: object,
    insecure: object,
    blocked: object,
    mirrors: Any,
    by_digest_only: object,
    where: str,
) -> Registry:
    location = _check_location(location or "", where, "location")
    prefix = _check_location(prefix or "", where, "prefix")
    if not prefix:
        if not location:
            raise RegistriesConfError(f"{where}: both location and prefix are unset")
        prefix = location
    if "*" in prefix:
        if not prefix.startswith("*.") or "*" in prefix[1:] or any(ch in prefix for ch in "/@:"):
            raise RegistriesConfError(
                f"{where}: prefix {short_value(prefix)}: a wildcard prefix must look like *.example.com"
            )
    elif not location:
        raise RegistriesConfError(
            f"{where}: location is unset and prefix {short_value(prefix)} is not a *.example.com wildcard"
        )
    if mirrors is None:
        mirrors = []
    _require(mirrors, list, f"{where}: mirror", "a list")
    parsed = []
    for index, mirror in enumerate(mirrors):
        mwhere = f"{where} mirror[{index}]"
        _require(mirror, dict, mwhere, "a table")
        mlocation = _check_location(mirror.get("location") or "", mwhere, "location")
        if not mlocation:
            raise RegistriesConfError(f"{mwhere}: invalid condition: mirror location is unset")
        pull_from = mirror.get("pull-from-mirror", mirror.get("pull_from_mirror")) or ""
        if pull_from not in PULL_FROM_MIRROR_VALUES:
            raise RegistriesConfError(
                f"{mwhere}: pull-from-mirror {short_value(pull_from)} is not one of all, digest-only, tag-only"
            )
        parsed.append(Mirror(mlocation, _check_bool(mirror.get("insecure"), mwhere, "insecure"), pull_from))
    by_digest_only = _check_bool(by_digest_only, where, "mirror-by-digest-only")
    if by_digest_only and any(m.pull_from_mirror for m in parsed):
        # containers/image refuses this combination too.
        raise RegistriesConfError(f"{where}: pull-from-mirror cannot be combined with mirror-by-digest-only")
    return Registry(
        prefix=prefix,
        location=location,
        insecure=_check_bool(insecure, where, "insecure"),
        blocked=_check_bool(blocked, where, "blocked"),
        mirrors=tuple(parsed),
        mirror_by_digest_only=by_digest_only,
        source=where,
    )


def _check_conflicts(registries: List[Registry], source: str) -> None:
    """Refuse entries for one location (or wildcard prefix) that disagree on insecure or blocked, as upstream."""
    first: Dict[str, Registry] = {}
    for reg in registries:
        key = reg.location or reg.prefix
        other = first.setdefault(key, reg)
        for setting in ("insecure", "blocked"):
            if getattr(reg, setting) != getattr(other, setting):
                raise RegistriesConfError(
                    f"{source}: registry {key!r} is defined multiple times with conflicting {setting!r} "
                    f"setting ({other.source} and {reg.source})"
                )


def _unknown_keys(table: Dict[Any, Any], known: FrozenSet[str], where: str, warnings: List[str]) -> None:
    unknown = sorted(str(key) for key in table if key not in known)
    if unknown:
        shown = ", ".join(repr(key[:64]) for key in unknown[:10])
        if len(unknown) > 10:
            shown += f" and {len(unknown) - 10} more"
        warnings.append(f"{where}: unknown keys {shown} are ignored (a typo?); known are {', '.join(sorted(known))}")


def load_toml(text: str, source: str, error_class: Type[CollectionError] = RegistriesConfError) -> Dict[str, Any]:
    """A TOML document; ``error_class`` naming ``source`` when it does not parse or no TOML reader is there."""
    toml = toml_module()
    if toml is None:
        raise error_class(f"{source}: reading TOML needs Python 3.11+ (tomllib) or the 'tomli' package on this host")
    try:
        document: Dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise error_class(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # arrays or tables nested thousands deep
        raise error_class(f"{source}: not valid TOML: nested too deeply") from None
    return document


def parse_registries_conf(
    text: str, source: str = "<registries.conf>", warnings: Optional[List[str]] = None
) -> List[Registry]:
    """The ``[[registry]]`` entries of a v2 registries.conf document.

    Keys that containers/image does not know are ignored, as it does; ``warnings`` (when given) receives one line
    per table that has some.
    """
    warnings = [] if warnings is None else warnings
    document = load_toml(text, source)
    if "registries" in document:
        raise RegistriesConfError(
            f"{source}: uses the v1 format ([registries.search], [registries.insecure], [registries.block]), "
            "which is not supported; convert it to v2 [[registry]] tables (see containers-registries.conf(5))"
        )
    entries = document.get("registry", [])
    if not isinstance(entries, list):
        raise RegistriesConfError(f"{source}: 'registry' must be an array of tables ([[registry]])")
    _unknown_keys(document, _CONF_KEYS, source, warnings)
    registries = []
    for index, entry in enumerate(entries):
        where = f"{source}: [[registry]] #{index + 1}"
        if not isinstance(entry, dict):
            raise RegistriesConfError(f"{where} must be a table")
        if entry.get("pull-from-mirror"):
            raise RegistriesConfError(
                f"{where}: pull-from-mirror must not be set for a non-mirror registry "
                f"{entry.get('prefix') or entry.get('location')!r}; set it on a [[registry.mirror]]"
            )
        _unknown_keys(entry, _REGISTRY_KEYS, where, warnings)
        mirrors = entry.get("mirror")
        for mindex, mirror in enumerate(mirrors if isinstance(mirrors, list) else []):
            if isinstance(mirror, dict):
                _unknown_keys(mirror, _CONF_MIRROR_KEYS, f"{where} mirror[{mindex}]", warnings)
        registries.append(
            _build_registry(
                entry.get("prefix"),
                entry.get("location"),
                entry.get("insecure"),
                entry.get("blocked"),
                entry.get("mirror"),
                entry.get("mirror-by-digest-only"),
                where,
            )
        )
    _check_conflicts(registries, source)
    return registries


_LIST_KEYS = frozenset(("prefix", "location", "insecure", "blocked", "mirrors", "mirror_by_digest_only"))
_MIRROR_KEYS = frozenset(("location", "insecure", "pull_from_mirror"))


def registries_from_list(items: Any, source: str = "registry_mirrors") -> List[Registry]:
    """Registries from the module's ``registry_mirrors`` parameter (same fields, snake_case)."""
    if items is None:
        return []
    _require(items, list, source, "a list")
    registries = []
    for index, item in enumerate(items):
        where = f"{source}[{index}]"
        _require(item, dict, where, "a dict")
        unknown = sorted(set(item) - _LIST_KEYS)
        if unknown:
            raise RegistriesConfError(
                f"{where}: unknown keys {', '.join(map(str, unknown))}; allowed are {', '.join(sorted(_LIST_KEYS))}"
            )
        mirrors = item.get("mirrors")
        for mindex, mirror in enumerate(mirrors or []):
            if isinstance(mirror, dict):
                unknown = sorted(set(mirror) - _MIRROR_KEYS)
                if unknown:
                    raise RegistriesConfError(
                        f"{where} mirrors[{mindex}]: unknown keys {', '.join(map(str, unknown))}; "
                        f"allowed are {', '.join(sorted(_MIRROR_KEYS))}"
                    )
        registries.append(
            _build_registry(
                item.get("prefix"),
                item.get("location"),
                item.get("insecure"),
                item.get("blocked"),
                mirrors,
                item.get("mirror_by_digest_only"),
                where,
            )
        )
    _check_conflicts(registries, source)
    return registries


def _read(path: str) -> str:
    return read_config_text(path, "registries file", MAX_CONF_SIZE, RegistriesConfError)


def _merge(base: List[Registry], updates: List[Registry]) -> List[Registry]:
    # As containers/image merges drop-ins: a later entry replaces an earlier one with the same prefix.
    # Nothing to merge leaves the file as it is: within one file the first of two equal prefixes wins.
    if not updates:
        return base
    merged = {reg.prefix: reg for reg in base}
    merged.update((reg.prefix, reg) for reg in updates)
    return list(merged.values())


@dataclass
class RegistriesConf:
    """The registries of registries.conf, its drop-ins and the explicit list, and the files read."""

    registries: List[Registry] = field(default_factory=list)
    files: List[str] = field(default_factory=list)
    # Unknown keys found in the files (ignored, as containers/image does).
    warnings: List[str] = field(default_factory=list)

    def find_registry(self, ref: Union[ImageRef, str]) -> Optional[Registry]:
        """The matching entry with the longest prefix, or None; on a tie the first one (``FindRegistry``).

        ``ref`` is an ImageRef or, as upstream accepts, a host or namespace string. Upstream compares the
        prefixes' own lengths, so ``*.sub.example.com`` beats ``*.example.com``.
        """
        text = str(ref)
        best = None
        for reg in self.registries:
            if _matching_prefix_length(text, reg.prefix) >= 0 and (best is None or len(reg.prefix) > len(best.prefix)):
                best = reg
        return best

    def pull_sources(self, ref: ImageRef) -> List[PullSource]:
        """Where the runtime would pull ``ref`` from, in order; RegistryBlockedError when blocked."""
        reg = self.find_registry(ref)
        if reg is None:
            return [PullSource(ref, ref.registry, False, False)]
        if reg.blocked:
            raise RegistryBlockedError(f"image {ref} is blocked by registry entry prefix {reg.prefix!r} ({reg.source})")
        digested = ref.digest is not None
        sources = []
        for mirror in reg.mirrors:
            if reg.mirror_by_digest_only and not digested:
                continue
            if mirror.pull_from_mirror == "digest-only" and not digested:
                continue
            if mirror.pull_from_mirror == "tag-only" and digested:
                continue
            sources.append(self._rewrite(ref, reg, mirror.location, mirror.insecure, True))
        sources.append(self._rewrite(ref, reg, reg.location, reg.insecure, False))
        return sources

    @staticmethod
    def _rewrite(ref: ImageRef, reg: Registry, location: str, insecure: bool, mirror: bool) -> PullSource:
        if not location:
            # A wildcard entry without location pulls from the image's own host.
            return PullSource(ref, ref.registry, insecure, mirror)
        text = str(ref)
        rewritten = location + text[_matching_prefix_length(text, reg.prefix) :]
        problem = f"image {ref} rewritten by prefix {reg.prefix!r} ({reg.source}) to location {location!r} gives {rewritten!r}"
        try:
            new_ref = parse_image_ref(rewritten, require_digest=False)
        except ImageReferenceError as exc:
            raise RegistriesConfError(f"{problem}, which is not a valid reference: {exc}") from None
        # containers/image takes the result with ParseNamed, which refuses a name it would have to normalise.
        if str(new_ref) != rewritten:
            raise RegistriesConfError(
                f"{problem}, which is not a canonical reference (it would mean {new_ref}); the runtime refuses "
                "this rewrite: write the location out in full (host[:port][/path])"
            )
        return PullSource(new_ref, new_ref.registry, insecure, mirror)


def load_registries_conf(
    path: Optional[StrPath] = None,
    mirrors: object = None,
    default_path: str = DEFAULT_REGISTRIES_CONF,
    conf_d: Optional[str] = None,
    default_conf_d: str = DEFAULT_REGISTRIES_CONF_D,
) -> RegistriesConf:
    """Read registries.conf and its drop-in directory, then apply ``mirrors`` (the explicit list) on top.

    ``path`` None means ``default_path`` when it exists, with ``default_conf_d``; an explicit ``path`` must exist.
    Drop-ins (``*.conf``, in name order) are read only from ``conf_d`` or, for the default file, ``default_conf_d``.
    """
    conf = RegistriesConf()
    if path is None:
        if default_path and os.path.exists(default_path):
            path = default_path
        if conf_d is None:
            conf_d = default_conf_d
    if path is not None:
        path = os.fspath(path)
        conf.registries = parse_registries_conf(_read(path), path, conf.warnings)
        conf.files.append(path)
    if conf_d and os.path.isdir(conf_d):
        for name in sorted(os.listdir(conf_d)):
            if not name.endswith(".conf"):
                continue
            drop_in = os.path.join(conf_d, name)
            conf.registries = _merge(conf.registries, parse_registries_conf(_read(drop_in), drop_in, conf.warnings))
            conf.files.append(drop_in)
    conf.registries = _merge(conf.registries, registries_from_list(mirrors))
    return conf


def credentials_for_source(config: DockerConfig, source: PullSource, ref: ImageRef) -> Optional[RegistryCredentials]:
    """Credentials for one pull source: its most specific key, else the image's own name/host, else None.

    ``config`` is a ``_registry.auth.DockerConfig``.
    """
    credentials = config.credentials_for(source.reference.name)
    if credentials is None and source.reference.name != ref.name:
        credentials = config.credentials_for(ref.name)
    return credentials
