# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read, before any pull, the manifests of the images a node lacks, from where the runtime would pull them.

Pull sources come from registries.conf (mirrors first, then the primary location) and credentials per source
follow the reference rules (see _registries_conf.credentials_for_source). A mirror that lacks the image or cannot
be reached is skipped, as the runtime would skip it; the primary location's transient errors are retried as its
``RetryPolicy`` says (the prefetch gives its own retry options).
"""

from __future__ import annotations

import ipaddress
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from ansible_collections.pinned.images.plugins.module_utils._errors import AUTH, INVALID, NOT_FOUND, UNAVAILABLE, CollectionError
from ansible_collections.pinned.images.plugins.module_utils._registries_conf import RegistriesConfError, credentials_for_source
from ansible_collections.pinned.images.plugins.module_utils._registry_client import (
    ManifestUnknownError,
    RegistryAuthRejected,
    RegistryConnectionError,
    RegistryError,
    RegistryTLSError,
)

# Manifest reads are small; more parallel requests than this only queue up at the registry.
MAX_PARALLEL_READS = 8


def is_loopback(registry: str) -> bool:
    """containerd and Docker allow plain HTTP to loopback registries without configuration; so does the estimate."""
    if registry.startswith("["):
        host = registry[1:registry.find("]")]
    else:
        host = registry.rsplit(":", 1)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


class PullEstimator:
    """Reads manifests for a set of images; ``requests`` and ``seconds`` measure the overhead."""

    def __init__(self, registry_client, registries, docker_config, retry: RetrySchedule, platform=None,
                 sleep=time.sleep) -> None:
        self.client = registry_client
        self.registries = registries
        self.docker_config = docker_config
        self.retry = retry
        self.platform = platform
        self.sleep = sleep
        self.seconds = 0.0

    @property
    def requests(self) -> int:
        return self.client.request_count

    def read(self, refs: list) -> tuple[list, dict]:
        """Return ([(image, ManifestInfo)] in the order of ``refs``, {image: (error, kind)})."""
        started = time.monotonic()
        workers = max(1, min(MAX_PARALLEL_READS, len(refs)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(self._read_one, refs))
        self.seconds = round(time.monotonic() - started, 3)
        manifests, failures = [], {}
        for ref, (info, failure) in zip(refs, outcomes):
            if failure is None:
                manifests.append((str(ref), info))
            else:
                failures[str(ref)] = failure
        return manifests, failures

    def _read_one(self, ref):
        try:
            info, _source = read_from_sources(
                ref, self.registries, self.docker_config,
                lambda source, credentials, insecure: self.client.manifest_info(
                    source.reference, credentials, insecure, self.platform),
                self.retry.retries, self.retry.backoff, self.sleep)
        except RegistriesConfError as err:
            return None, (str(err), INVALID)
        except SourcesFailedError as err:
            message = f"size estimate failed, not pulled: {err.last_error}"
            if err.attempts > 1:
                message += f" (gave up after {err.attempts} attempts)"
            return None, (message, error_kind(err.last_error))
        return info, None


class SourcesFailedError(CollectionError):
    """Every pull source failed; ``last_error`` is the primary location's RegistryError."""

    def __init__(self, last_error: Exception, attempts: int) -> None:
        super().__init__(str(last_error), details={"error_kind": error_kind(last_error)})
        self.last_error = last_error
        self.attempts = attempts


def read_from_sources(ref, registries, docker_config, read, retries: int = 0, backoff=None, sleep=time.sleep):
    """``read(source, credentials, insecure)`` on the first pull source that answers; ``(value, source)``.

    Sources are tried as the runtime tries them (mirrors first): a mirror that fails with a RegistryError is
    skipped; the primary location's transient errors are retried ``retries`` times after ``backoff(n)`` seconds.
    Raises RegistriesConfError (blocked, bad rewrite) or SourcesFailedError; other errors of ``read`` pass.
    """
    last_error, attempts = None, 0
    for source in registries.pull_sources(ref):
        credentials = credentials_for_source(docker_config, source, ref)
        attempts = 0
        while True:
            attempts += 1
            insecure = source.insecure or is_loopback(source.registry)
            try:
                return read(source, credentials, insecure), source
            except RegistryError as err:
                last_error = err
                transient = isinstance(err, RegistryConnectionError) and not isinstance(err, RegistryTLSError)
                if source.mirror or not transient or attempts > retries:
                    break
                sleep(backoff(attempts))
    if last_error is None:  # pragma: no cover - pull_sources always yields the primary location
        raise RegistriesConfError(f"no pull source for {ref}")
    raise SourcesFailedError(last_error, attempts)
