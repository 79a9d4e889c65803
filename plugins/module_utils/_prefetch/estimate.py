# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read, before any pull, the manifests of the images a node lacks, from where the runtime would pull them.

Pull sources come from the runtime's own configuration: on CRI-O registries.conf (mirrors first, then the primary
location, credentials per source as the reference rules say: _registry.registries_conf.credentials_for_source), on
containerd its hosts.toml files (hosts in file order, then ``server`` or the registry; credentials as containerd's
CRI plugin uses them: _registry.containerd_hosts.containerd_credentials). A source that lacks the image or cannot be
reached is skipped, as the runtime would skip it; the last one's transient errors are retried as its
``RetryPolicy`` says (the prefetch gives its own retry options).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Protocol, Tuple, TypeVar, Union

from ansible_collections.pinned.images.plugins.module_utils._common.errors import (
    AUTH,
    INVALID,
    NOT_FOUND,
    UNAVAILABLE,
    CollectionError,
)
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig, RegistryCredentials
from ansible_collections.pinned.images.plugins.module_utils._registry.client import HostEndpoint

# is_loopback: containerd and Docker allow plain HTTP to loopback registries without configuration; so does the estimate.
from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import (
    containerd_credentials,
    is_loopback,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.errors import (
    ManifestUnknownError,
    RegistryAuthRejected,
    RegistryConnectionError,
    RegistryError,
    RegistryTLSError,
)
from ansible_collections.pinned.images.plugins.module_utils._registry.manifests import ManifestInfo
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import Platform
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    PullSource,
    RegistriesConfError,
    credentials_for_source,
)

__all__ = [
    "MAX_PARALLEL_READS",
    "Failure",
    "ManifestReader",
    "PullEstimator",
    "PullSources",
    "RetryPolicy",
    "RetrySchedule",
    "SourcesFailedError",
    "error_kind",
    "read_from_sources",
    "source_credentials",
]

# Manifest reads are small; more parallel requests than this only queue up at the registry.
MAX_PARALLEL_READS = 8

_T = TypeVar("_T")
# (error message, error kind) of an image whose manifest could not be read.
Failure = Tuple[str, str]


def error_kind(err: Exception) -> str:
    """The prefetch error kind (as _cri_client names them) for a registry or configuration error."""
    if isinstance(err, RegistryAuthRejected):
        return AUTH
    if isinstance(err, ManifestUnknownError):
        return NOT_FOUND
    if isinstance(err, RegistryConnectionError):
        return UNAVAILABLE
    return INVALID


class RetrySchedule(Protocol):
    """What the estimator needs of a retry policy: ``RetryPolicy`` (``PrefetchOptions`` has the same two)."""

    @property
    def retries(self) -> int: ...

    def backoff(self, failed_attempts: int) -> float: ...


@dataclass(frozen=True)
class RetryPolicy:
    """How often the primary location's transient errors are retried, and the delay before the ``n``-th retry:
    ``delay * factor ** (n - 1)``, at most ``max_delay`` seconds."""

    retries: int = 0
    delay: float = 1.0
    factor: float = 2.0
    max_delay: float = 10.0

    def backoff(self, failed_attempts: int) -> float:
        """Seconds to wait after ``failed_attempts`` failed attempts."""
        return min(self.delay * self.factor ** (failed_attempts - 1), self.max_delay)


class ManifestReader(Protocol):
    """What the estimator needs of a registry client: ``RegistryClient``."""

    request_count: int

    def manifest_info(
        self,
        ref: ImageRef,
        credentials: Optional[RegistryCredentials] = None,
        insecure: bool = False,
        platform: Union[str, Platform, None] = None,
        endpoint: Optional[HostEndpoint] = None,
    ) -> ManifestInfo: ...


class PullSources(Protocol):
    """Where the runtime pulls an image from, in order: ``RegistriesConf`` (CRI-O) or ``ContainerdHosts``."""

    def pull_sources(self, ref: ImageRef) -> List[PullSource]: ...


def source_credentials(docker_config: DockerConfig, source: PullSource, ref: ImageRef) -> Optional[RegistryCredentials]:
    """The credentials the runtime uses for ``source``: containerd's rule for a hosts.toml host, else the
    registries.conf rule."""
    if source.endpoint is not None:
        return containerd_credentials(docker_config, ref)
    return credentials_for_source(docker_config, source, ref)


class PullEstimator:
    """Reads manifests for a set of images; ``requests`` and ``seconds`` measure the overhead."""

    def __init__(
        self,
        registry_client: ManifestReader,
        registries: PullSources,
        docker_config: DockerConfig,
        retry: RetrySchedule,
        platform: Optional[Platform] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = registry_client
        self.registries = registries
        self.docker_config = docker_config
        self.retry = retry
        self.platform = platform
        self.sleep = sleep
        self.seconds = 0.0
        # image -> where its manifest was read (PullSource.description), for the result.
        self.sources: Dict[str, str] = {}

    @property
    def requests(self) -> int:
        """HTTP requests the registry client made so far."""
        return self.client.request_count

    def read(self, refs: List[ImageRef]) -> Tuple[List[Tuple[str, ManifestInfo]], Dict[str, Failure]]:
        """Return ([(image, ManifestInfo)] in the order of ``refs``, {image: (error, kind)})."""
        started = time.monotonic()
        workers = max(1, min(MAX_PARALLEL_READS, len(refs)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(self._read_one, refs))
        self.seconds = round(time.monotonic() - started, 3)
        manifests: List[Tuple[str, ManifestInfo]] = []
        failures: Dict[str, Failure] = {}
        for ref, (info, failure) in zip(refs, outcomes):
            if info is not None:
                manifests.append((str(ref), info[0]))
                self.sources[str(ref)] = info[1].description
            elif failure is not None:
                failures[str(ref)] = failure
        return manifests, failures

    def _read_one(self, ref: ImageRef) -> Tuple[Optional[Tuple[ManifestInfo, PullSource]], Optional[Failure]]:
        try:
            read = read_from_sources(
                ref,
                self.registries,
                self.docker_config,
                lambda source, credentials, insecure: self.client.manifest_info(
                    source.reference, credentials, insecure, self.platform, source.endpoint
                ),
                self.retry,
                self.sleep,
            )
        except RegistriesConfError as err:
            return None, (str(err), INVALID)
        except SourcesFailedError as err:
            message = f"size estimate failed, not pulled: {err.last_error}"
            if err.attempts > 1:
                message += f" (gave up after {err.attempts} attempts)"
            return None, (message, error_kind(err.last_error))
        return read, None


class SourcesFailedError(CollectionError):
    """Every pull source failed; ``last_error`` is the primary location's RegistryError."""

    def __init__(self, last_error: Exception, attempts: int) -> None:
        super().__init__(str(last_error), details={"error_kind": error_kind(last_error)})
        self.last_error = last_error
        self.attempts = attempts


def read_from_sources(
    ref: ImageRef,
    registries: PullSources,
    docker_config: DockerConfig,
    read: Callable[[PullSource, Optional[RegistryCredentials], bool], _T],
    retry: RetrySchedule = RetryPolicy(),
    sleep: Callable[[float], None] = time.sleep,
) -> Tuple[_T, PullSource]:
    """``read(source, credentials, insecure)`` on the first pull source that answers; ``(value, source)``.

    Sources are tried as the runtime tries them (mirrors first): a mirror that fails with a RegistryError is
    skipped; the last source's (the primary location's) transient errors are retried ``retry.retries`` times after
    ``retry.backoff(n)`` seconds (the default policy retries none).
    Raises RegistriesConfError (blocked, bad rewrite) or SourcesFailedError; other errors of ``read`` pass.
    """
    last_error: Optional[RegistryError] = None
    attempts = 0
    for source in registries.pull_sources(ref):
        credentials = source_credentials(docker_config, source, ref)
        attempts = 0
        while True:
            attempts += 1
            insecure = source.insecure or is_loopback(source.registry)
            try:
                return read(source, credentials, insecure), source
            except RegistryError as err:
                last_error = err
                transient = isinstance(err, RegistryConnectionError) and not isinstance(err, RegistryTLSError)
                if source.mirror or not transient or attempts > retry.retries:
                    break
                sleep(retry.backoff(attempts))
    if last_error is None:  # pragma: no cover - pull_sources always yields the primary location
        raise RegistriesConfError(f"no pull source for {ref}")
    raise SourcesFailedError(last_error, attempts)
