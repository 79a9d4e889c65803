# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The prefetch module's whole run (node side, Python 3.8+): check the input, take the node lock, find what the
node has, guard the disk, pull the rest, pin the images once all are present, and build the module's result.

``PrefetchRequest.from_params(params, check_mode)`` checks every option before the runtime is contacted;
``run_prefetch(request)`` does the rest. Both raise CollectionError (with ``error_kind`` or ``disk_guard``
in its details) for a failure of the task as a whole; failed images are in the result, not raised, and so is a
failed pin (``PrefetchOutcome.pin_failure``), after the pulls it follows.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple, cast

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.host_root import chrooted, host_path
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageRef,
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock
from ansible_collections.pinned.images.plugins.module_utils._node_python.deps import require_node_deps
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import LabelSettings
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DropinSettings, RunCommand
from ansible_collections.pinned.images.plugins.module_utils._pins.method import (
    METHOD_DROPIN,
    METHOD_LABEL,
    METHOD_NONE,
    PIN_AUTO,
    PinSettings,
    mco_pin_method,
    pin_images,
    pin_method,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import (
    parse_size,
    unitless_size_warning,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import PullSources, RetryPolicy
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pace import Pace, PaceOptions, open_pace
from ansible_collections.pinned.images.plugins.module_utils._prefetch.preflight import (
    DiskGuardSettings,
    SourceSettings,
    guard_disk,
    pull_sources,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import (
    PRESENT,
    PULLED,
    WOULD_PULL,
    ImageResult,
    PrefetchOptions,
    failure_message,
    find_present,
    prefetch,
)
from ansible_collections.pinned.images.plugins.module_utils._prune.record import noted, read_record, write_record
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import parse_platform
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    RegistriesConf,
    load_registries_conf,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    NodeStateFiles,
    Problems,
    RegistryOptions,
    RuntimeOptions,
    containerd_client,
    cri_client,
    dropin_settings,
    node_params,
    socket_source,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome

__all__ = [
    "PrefetchOutcome",
    "PrefetchRequest",
    "image_diff",
    "parse_images",
    "record_images",
    "run",
    "run_prefetch",
    "value_problems",
]

# Options with a lower bound (inclusive), and options that must be above 0.
_AT_LEAST = (
    ("concurrency", 1),
    ("retries", 0),
    ("pull_pause", 0),
    ("retry_delay", 0),
    ("retry_max_delay", 0),
    ("pull_timeout", 0),
    ("pace_interval", 0),
)
_ABOVE_ZERO = (
    "expansion_factor",
    "cri_timeout",
    "cri_connect_timeout",
    "settle_timeout",
    "pace_bound_ms",
    "pace_window",
    "pace_max_wait",
)
# The prefetch's own node paths, under host_root (with the shared ones, ``node_params``); containerd_config_path is
# mapped with the registry directories found on the node (``pull_sources``).
_NODE_PATHS = (
    "image_store_path",
    "progress_file",
    "lock_file",
    "mco_dir",
    "dropin_path",
    "crio_pid_file",
    "containerd_config",
    "record_file",
    "pace_path",
)


def parse_images(images: List[str], require_digest: bool) -> List[ImageRef]:
    """Normalise and de-duplicate; one error lists every bad entry."""
    refs: List[ImageRef] = []
    seen: Set[str] = set()
    problems: List[str] = []
    for index, image in enumerate(images):
        try:
            ref = parse_image_ref(image, require_digest=require_digest)
        except ImageReferenceError as err:
            problems.append(f"images[{index}]: {err}")
            continue
        if str(ref) not in seen:
            seen.add(str(ref))
            refs.append(ref)
    if problems:
        raise CollectionError(problems, message="invalid images: " + "; ".join(problems))
    return refs


def image_diff(images: List[ImageResult]) -> Dict[str, str]:
    """Which of the requested images the node has, before and after."""

    def lines(statuses: Tuple[str, ...]) -> str:
        names = sorted(r["image"] for r in images if r["status"] in statuses)
        return "".join(name + "\n" for name in names)

    return dict(
        before_header="requested images on the node",
        before=lines((PRESENT,)),
        after_header="requested images on the node",
        after=lines((PRESENT, PULLED, WOULD_PULL)),
    )


def value_problems(params: Mapping[str, Any], problems: Problems) -> None:
    """Record the problems of single option values, of the options ``params`` holds (every option in a run, those
    of ``node_prefetch_options`` in the controller's check, ``plugin_utils/_variables``)."""
    for name, low in _AT_LEAST:
        if name in params:
            problems.at_least(params, name, low)
    for name in _ABOVE_ZERO:
        if name in params:
            problems.above_zero(params, name)
    if "pace_percentile" in params and not 0 < params["pace_percentile"] <= 100:
        problems.add(f"pace_percentile must be above 0 and at most 100, got {params['pace_percentile']}")
    if "min_free" in params:
        try:
            parse_size(params["min_free"], total=0)
        except CollectionError as error:
            problems.add(f"min_free: {error.message}")


@dataclass(frozen=True)
class PrefetchRequest:
    """Every option of one prefetch, checked; ``secrets`` must join the module's no_log values, and the
    ``warnings`` (of registries.conf, of the options) be given with the result."""

    refs: Tuple[ImageRef, ...]
    registry: RegistryOptions
    check_mode: bool
    pulls: PrefetchOptions
    guard: DiskGuardSettings
    # The node lock and the record of what this collection pulled and pinned, for the prune (``_prune/record``).
    state: NodeStateFiles
    pin: str
    require_digest: bool
    dropin: DropinSettings
    label: LabelSettings
    # How the runtime's client reaches it, and where the host's / is.
    runtime: RuntimeOptions
    fail_on_error: bool
    # The registry files the runtime pulls with, for the guard's estimate.
    sources: SourceSettings
    # Where the machine-config-operator's files tell that it manages this node (``_openshift.mco_node``).
    mco_dir: str
    # The pace between pulls (``_prefetch/pace``); None: off.
    pace: Optional[PaceOptions] = None

    @property
    def auth_config(self) -> DockerConfig:
        """The auth file, read."""
        return self.registry.docker_config

    @property
    def registries(self) -> RegistriesConf:
        """registries.conf with the mirrors, read."""
        return self.registry.registries

    @property
    def secrets(self) -> Set[str]:
        """The auth file's secrets, for the module's no_log values."""
        return self.auth_config.secrets()

    @property
    def warnings(self) -> List[str]:
        """registries.conf's warnings, and a reserve given without its unit."""
        unitless = unitless_size_warning(self.guard.min_free)
        return list(self.registries.warnings) + ([unitless] if unitless else [])

    @classmethod
    def from_params(cls, params: Mapping[str, Any], check_mode: bool) -> "PrefetchRequest":
        """Check the module's parameters; one CollectionError names every bad option (the error itself when
        only one is). Node paths (``_NODE_PATHS``) are taken under ``host_root``."""
        problems = Problems()
        mapped = problems.attempt(lambda: node_params(params, _NODE_PATHS))
        problems.raise_any()
        params = cast(Dict[str, Any], mapped)
        value_problems(params, problems)
        if (
            params["pin"] in (PIN_AUTO, METHOD_DROPIN)
            and params["crio_reload"] == "signal"
            and not params["crio_pid_file"]
        ):
            problems.add("crio_reload=signal needs crio_pid_file")
        progress_dir = os.path.dirname(os.path.abspath(params["progress_file"] or "."))
        if params["progress_file"] and not os.path.isdir(progress_dir):
            problems.add(f"progress_file: directory {progress_dir} does not exist")
        refs = problems.attempt(lambda: parse_images(params["images"], params["require_digest"]))
        if refs is not None and not refs and params["pin"] != METHOD_NONE and not params["allow_empty"]:
            problems.add(
                f"images is empty: with pin={params['pin']} that would remove every pin of this node (the drop-in "
                f"{params['dropin_path']}, or the labels pinned.images set); nothing was changed. Give the images, "
                "allow_empty=true to empty the pins, or pin=none"
            )
        platform = problems.attempt(lambda: parse_platform(params["platform"]) if params["platform"] else None)
        registry = RegistryOptions.from_params(params, problems)
        overrides = problems.attempt(
            lambda: load_registries_conf(
                params["registries_conf"], params["registry_mirrors"], default_path="", default_conf_d=""
            )
        )
        problems.raise_any()
        pulls = PrefetchOptions(
            concurrency=params["concurrency"],
            pull_pause=params["pull_pause"],
            retries=params["retries"],
            retry_delay=params["retry_delay"],
            retry_max_delay=params["retry_max_delay"],
            pull_timeout=params["pull_timeout"] or None,
            check_mode=check_mode,
            progress_file=params["progress_file"],
            run_id=params["run_id"],
        )
        # raise_any() raised when a reader failed: refs and registry are set.
        registry = cast(RegistryOptions, registry)
        guard = DiskGuardSettings(
            mode=params["disk_guard"],
            min_free=params["min_free"],
            expansion_factor=params["expansion_factor"],
            image_store_path=params["image_store_path"],
            docker_config=registry.docker_config,
            certs_dirs=registry.certs_dirs,
            registry_timeout=registry.timeout,
            retry=RetryPolicy(retries=pulls.retries, delay=pulls.retry_delay, max_delay=pulls.retry_max_delay),
            platform=platform,
        )
        sources = SourceSettings(
            registries=registry.registries,
            overrides=cast(RegistriesConf, overrides),
            containerd_config=params["containerd_config"],
            containerd_config_path=params["containerd_config_path"],
            host_root=params["host_root"],
            registries_conf_given=params["registries_conf"] is not None,
            registry_mirrors=params["registry_mirrors"],
            socket_source=socket_source(params),
        )
        return cls(
            refs=tuple(cast(List[ImageRef], refs)),
            registry=registry,
            check_mode=check_mode,
            pulls=pulls,
            guard=guard,
            state=NodeStateFiles.from_params(params),
            pin=params["pin"],
            require_digest=params["require_digest"],
            dropin=dropin_settings(params),
            label=LabelSettings(old_containerd=params["old_containerd"], settle_timeout=params["settle_timeout"]),
            runtime=RuntimeOptions.from_params(params),
            fail_on_error=params["fail_on_error"],
            sources=sources,
            mco_dir=params["mco_dir"],
            pace=_pace_options(params) if params["pace"] else None,
        )

    def auth_for(self, ref: ImageRef) -> Tuple[Optional[Dict[str, str]], str]:
        """(CRI auth fields or None, where they came from, without a secret) for pulling ``ref``."""
        source = self.auth_config.path or "no auth file"
        credentials = self.auth_config.credentials_for(ref.name)
        if credentials is None:
            return None, f"no credentials for {ref.registry} in {source}; pulled anonymously"
        return credentials.cri_auth_fields(), f"credentials for {credentials.server_address} from {source}"


def _pace_options(params: Mapping[str, Any]) -> PaceOptions:
    return PaceOptions(
        path=params["pace_path"],
        bound=params["pace_bound_ms"] / 1000.0,
        percentile=params["pace_percentile"],
        window=params["pace_window"],
        interval=params["pace_interval"],
        max_wait=params["pace_max_wait"],
        on_max_wait=params["pace_on_max_wait"],
    )


def _pace(request: PrefetchRequest, image_fs: Optional[str], to_pull: int) -> Optional[Pace]:
    """The pace of this run (not started), when it is on and the run pulls: none in check mode, whose probe would
    write. Raises PaceError before any pull when it cannot probe."""
    if request.pace is None or request.check_mode or not to_pull:
        return None
    return open_pace(request.pace, request.guard.image_store_path or image_fs)


def _locked(request: PrefetchRequest) -> Optional[NodeLock]:
    if request.check_mode:
        return None
    request.state.prepare(request.check_mode)
    return NodeLock(request.state.lock_file, request.pulls.run_id).acquire()


def record_images(request: PrefetchRequest, images: List[ImageResult], pin: Mapping[str, Any]) -> List[str]:
    """Add the images this run pulled and pinned to the record (not in check mode); a warning when it cannot be
    read or written: the prefetch is done, and a prune then leaves these images alone."""
    if request.check_mode:
        return []
    pulled = [entry["image"] for entry in images if entry["status"] == PULLED]
    pinned = list(pin["images"]) if pin["ran"] and not pin.get("error") else []
    if not pulled and not pinned:
        return []
    ids = {entry["image"]: entry.get("image_id") or "" for entry in images}
    record_file = request.state.record_file
    try:
        entries = read_record(request.state.record_to_read(request.check_mode))
        write_record(record_file, noted(entries, ids, pulled, pinned, request.pulls.run_id, time.time()))
    except CollectionError as err:
        return [f"the images of this run are not recorded for a prune: {err.message}"]
    return []


@dataclass(frozen=True)
class PrefetchOutcome:
    """The module's result, the pull's warnings and the failure message (None when every image is there)."""

    result: Dict[str, Any]
    warnings: List[str]
    failure: Optional[str]
    # The pin failed (after the pulls, which the result reports): the task fails whatever fail_on_error is.
    pin_failure: Optional[str] = None


def run_prefetch(
    request: PrefetchRequest,
    diff: bool = False,
    client_factory: Optional[Callable[[Any], Any]] = None,
    run_command: Optional[RunCommand] = None,
) -> PrefetchOutcome:
    """Lock the node, find the present images, guard the disk, pull the rest, pin; the module's result.

    ``client_factory(request.runtime)`` opens the runtime (default: a containerd client when the pin may set the
    label, else a CRI client); ``run_command(argv) -> (rc, out, err)`` runs ``systemctl`` for a CRI-O reload.
    """
    if client_factory is None:
        labels = request.pin in (PIN_AUTO, METHOD_LABEL)
        client_factory = containerd_client if labels else cri_client
    open_client: Callable[[Any], Any] = client_factory
    lock = _locked(request)
    started = time.monotonic()
    pin_diff: Optional[Dict[str, Any]] = None
    pin_warnings: List[str] = []
    pin_failure: Optional[str] = None
    source_warnings: List[str] = []
    try:
        with open_client(request.runtime) as client:
            runtime = dict(client.version(), endpoint=client.endpoint)
            filesystems = client.image_fs_info()
            # A host path, as every path the runtime reports.
            image_fs = host_path(request.runtime.host_root, filesystems[0]["mountpoint"]) if filesystems else None
            present = find_present(client, list(request.refs))
            missing = [ref for ref in request.refs if str(ref) not in present]
            guard_sources: Optional[PullSources] = None
            if request.guard.mode == "estimate" and missing:
                guard_sources, sources_from, source_warnings = pull_sources(
                    request.sources, runtime, client.status_info
                )
            guard, unreadable = guard_disk(request.guard, image_fs, missing, guard_sources or request.registries)
            if guard is not None and guard_sources is not None:
                guard.update(sources_from)
            pace = _pace(request, image_fs, len([ref for ref in missing if str(ref) not in unreadable]))
            if pace is not None:
                pace.start()
            try:
                report = prefetch(
                    client,
                    list(request.refs),
                    request.auth_for,
                    replace(request.pulls, image_fs=image_fs),
                    present,
                    unreadable,
                    gate=pace,
                )
            finally:
                if pace is not None:
                    pace.stop()
            method, mco_sign, mco_warnings = mco_pin_method(
                request.pin, pin_method(request.pin, runtime), request.mco_dir
            )
            pin_started = time.time()
            try:
                settings = PinSettings(
                    wanted=request.pin,
                    require_digest=request.require_digest,
                    dropin=request.dropin,
                    label=request.label,
                    check_mode=request.check_mode,
                )
                pin, pin_diff, pin_warnings = pin_images(
                    client, settings, method, report["images"], run_command, present, runtime
                )
                pin["mco_managed"] = mco_sign
                pin_warnings = mco_warnings + pin_warnings
            except CollectionError as err:
                # A drop-in written before a failed reload, or labels CRI did not report in time, changed the node.
                written = err.details
                pin = dict(
                    method=method,
                    ran=True,
                    changed=bool(written.get("changed")),
                    images=written.get("images", []),
                    path=written.get("path"),
                    reloaded=bool(written.get("reloaded")),
                    records=written.get("records"),
                    cri_pinned=written.get("cri_pinned", {}),
                    mco_managed=mco_sign,
                    error=err.message,
                )
                pin_warnings = mco_warnings
                pin_failure = f"pinning with the {method} method failed: {err.message}"
            # Wall-clock times, as the images' started and finished: the report draws the pin on the same axis.
            pin.update(started=pin_started, finished=time.time())
            record_warning = record_images(request, report["images"], pin)
    finally:
        if lock is not None:
            lock.release()
    totals = dict(report["totals"], seconds=round(time.monotonic() - started, 3))
    result: Dict[str, Any] = dict(
        changed=totals[PULLED] > 0 or totals[WOULD_PULL] > 0 or pin["changed"],
        images=report["images"],
        totals=totals,
        runtime=runtime,
        pin=pin,
    )
    if diff:
        # Ansible shows a list of diffs one after the other.
        result["diff"] = image_diff(report["images"]) if pin_diff is None else [image_diff(report["images"]), pin_diff]
    if guard is not None:
        result["disk_guard"] = guard
    pace_warnings: List[str] = []
    if pace is not None:
        result["pace"] = pace.report()
        pace_warnings = pace.warnings()
    return PrefetchOutcome(
        result,
        source_warnings + report["warnings"] + pace_warnings + pin_warnings + record_warning,
        failure_message(report["images"]),
        pin_failure,
    )


def run(invocation: Invocation) -> Outcome:
    """The module's run: the auth file's secrets and registries.conf's warnings join the outcome; a failed pin
    fails the task, failed pulls do with ``fail_on_error``."""
    require_node_deps()
    request = PrefetchRequest.from_params(invocation.params, invocation.check_mode)
    secrets = frozenset(request.secrets)
    try:
        # systemctl of the host's own systemd, from a pod.
        run_command = chrooted(request.runtime.host_root, invocation.run_command)
        outcome = run_prefetch(request, diff=invocation.diff, run_command=run_command)
    except CollectionError as error:
        return Outcome(warnings=request.warnings, secrets=secrets, failure=error)
    failure = outcome.pin_failure or (outcome.failure if request.fail_on_error else None)
    return Outcome(
        outcome.result,
        request.warnings + outcome.warnings,
        secrets,
        None if failure is None else CollectionError(failure),
    )
