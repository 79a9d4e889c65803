# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The prefetch module's whole run (node side, Python 3.8+): check the input, take the node lock, find what the
node has, guard the disk, pull the rest, pin the images once all are present, and build the module's result.

``PrefetchRequest.from_params(params, check_mode)`` checks every option before the runtime is contacted;
``run_prefetch(request, params)`` does the rest. Both raise CollectionError (with ``error_kind`` or ``disk_guard``
in its details) for a failure of the task as a whole; failed images are in the result, not raised, and so is a
failed pin (``PrefetchOutcome.pin_failure``), after the pulls it follows.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from ansible_collections.pinned.images.plugins.module_utils._cri.containerd import ContainerdClient
from ansible_collections.pinned.images.plugins.module_utils._pins.containerd_label import (
    LabelSettings,
    auto_pin_problem,
    pin_labels,
    runtime_problem,
    validate_images,
)
from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriClient, CriImage
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import (
    DropinSettings,
    RunCommand,
    missing_images,
    pin_dropin,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.disk_guard import check, estimate, filesystem_stats, parse_size
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import ImageRef, ImageReferenceError, parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._common.node_lock import NodeLock
from ansible_collections.pinned.images.plugins.module_utils._openshift.mco_node import dropin_decision
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pulls import (
    PRESENT,
    PULLED,
    WOULD_PULL,
    ImageResult,
    KnownFailure,
    PrefetchOptions,
    failure_message,
    find_present,
    prefetch,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import PullEstimator, PullSources, RetryPolicy
from ansible_collections.pinned.images.plugins.module_utils._registry.containerd_hosts import ContainerdHosts, locate
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import RegistriesConf, load_registries_conf
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import DockerConfig, load_docker_config
from ansible_collections.pinned.images.plugins.module_utils._registry.client import (
    ManifestInfo,
    Platform,
    RegistryClient,
    parse_platform,
)

# Options with a lower bound (inclusive), and options that must be above 0.
_AT_LEAST = (("concurrency", 1), ("retries", 0), ("throttle", 0), ("retry_delay", 0), ("retry_max_delay", 0),
             ("pull_timeout", 0))
_ABOVE_ZERO = ("expansion_factor", "registry_timeout", "cri_timeout", "cri_connect_timeout", "settle_timeout")

# The values of the pin option, and the methods a run pins with (``auto`` becomes one of the others).
PIN_NONE, PIN_AUTO, PIN_DROPIN, PIN_LABEL = "none", "auto", "dropin", "label"
PIN_CHOICES = (PIN_NONE, PIN_AUTO, PIN_DROPIN, PIN_LABEL)
# The statuses of images a pin covers: the node has them.
_ON_NODE = (PRESENT, PULLED)


class DiskGuardRefused(CollectionError):
    """The missing images do not fit; ``disk_guard`` (the guard's report) is in the details."""

    def __init__(self, guard: Dict[str, Any]) -> None:
        super().__init__(f"disk guard refused the prefetch, nothing was pulled: {guard['message']}",
                         details={"disk_guard": guard})


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

    return dict(before_header="requested images on the node", before=lines((PRESENT,)),
                after_header="requested images on the node", after=lines((PRESENT, PULLED, WOULD_PULL)))


@dataclass(frozen=True)
class PrefetchRequest:
    """Every option of one prefetch, checked; ``secrets`` must join the module's no_log values at once, and the
    ``warnings`` (of registries.conf) be given before the runtime is contacted."""

    refs: Tuple[ImageRef, ...]
    platform: Optional[Platform]
    auth_config: DockerConfig
    registries: RegistriesConf
    check_mode: bool
    # On containerd, which never reads registries.conf: only what the options give explicitly.
    overrides: RegistriesConf = field(default_factory=RegistriesConf)

    @property
    def secrets(self) -> Set[str]:
        """The auth file's secrets, for the module's no_log values."""
        return self.auth_config.secrets()

    @property
    def warnings(self) -> List[str]:
        """registries.conf's warnings."""
        return list(self.registries.warnings)

    @classmethod
    def from_params(cls, params: Mapping[str, Any], check_mode: bool) -> "PrefetchRequest":
        """Check the module's parameters; raise CollectionError naming the first bad option."""
        for name, low in _AT_LEAST:
            if params[name] < low:
                raise CollectionError(f"{name} must be at least {low}, got {params[name]}")
        for name in _ABOVE_ZERO:
            if params[name] <= 0:
                raise CollectionError(f"{name} must be above 0, got {params[name]}")
        if params["pin"] in (PIN_AUTO, PIN_DROPIN) and params["crio_reload"] == "signal" and not params["crio_pid_file"]:
            raise CollectionError("crio_reload=signal needs crio_pid_file")
        progress_dir = os.path.dirname(os.path.abspath(params["progress_file"] or "."))
        if params["progress_file"] and not os.path.isdir(progress_dir):
            raise CollectionError(f"progress_file: directory {progress_dir} does not exist")
        refs = parse_images(params["images"], params["require_digest"])
        if not refs and params["pin"] != PIN_NONE and not params["allow_empty"]:
            raise CollectionError(
                f"images is empty: with pin={params['pin']} that would remove every pin of this node (the drop-in "
                f"{params['dropin_path']}, or the labels pinned.images set); nothing was changed. Give the images, "
                "allow_empty=true to empty the pins, or pin=none")
        parse_size(params["min_free"], total=0)
        platform = parse_platform(params["platform"]) if params["platform"] else None
        return cls(tuple(refs), platform, load_docker_config(params["auth_file"]),
                   load_registries_conf(params["registries_conf"], params["registry_mirrors"]), check_mode,
                   load_registries_conf(params["registries_conf"], params["registry_mirrors"], default_path="",
                                        default_conf_d=""))

    def auth_for(self, ref: ImageRef) -> Tuple[Optional[Dict[str, str]], str]:
        """(CRI auth fields or None, where they came from, without a secret) for pulling ``ref``."""
        source = self.auth_config.path or "no auth file"
        credentials = self.auth_config.credentials_for(ref.name)
        if credentials is None:
            return None, f"no credentials for {ref.registry} in {source}; pulled anonymously"
        return credentials.cri_auth_fields(), f"credentials for {credentials.server_address} from {source}"


def _options(params: Mapping[str, Any], check_mode: bool, image_fs: Optional[str]) -> PrefetchOptions:
    return PrefetchOptions(
        concurrency=params["concurrency"],
        throttle=params["throttle"],
        retries=params["retries"],
        retry_delay=params["retry_delay"],
        retry_max_delay=params["retry_max_delay"],
        pull_timeout=params["pull_timeout"] or None,
        check_mode=check_mode,
        progress_file=params["progress_file"],
        run_id=params["run_id"],
        image_fs=image_fs,
    )


def pull_sources(request: PrefetchRequest, params: Mapping[str, Any], runtime: Mapping[str, Any],
                 status_info: Callable[[], Dict[str, str]]) -> Tuple[PullSources, str, List[str]]:
    """(the runtime's pull sources, which files they come from, their warnings): registries.conf on CRI-O and
    any other runtime, hosts.toml on containerd (``status_info()``: its CRI Status info, asked only when needed)."""
    if runtime.get("runtime_name") != "containerd":
        files = ", ".join(request.registries.files) or "no registries.conf"
        return request.registries, f"registries.conf: {files}", []
    override = params.get("containerd_config_path")
    info = status_info() if override is None and not params.get("containerd_config") else None
    hosts = ContainerdHosts(locate(info, runtime.get("runtime_version", ""), params.get("containerd_config"),
                                   override), request.overrides)
    return hosts, hosts.describe(), list(hosts.config.warnings)


def guard_disk(request: PrefetchRequest, params: Mapping[str, Any], image_fs: Optional[str],
               missing: List[ImageRef], sources: Optional[PullSources] = None,
               ) -> Tuple[Optional[Dict[str, Any]], Dict[str, KnownFailure]]:
    """(the guard's report or None when off, {image: (error, kind)} of unreadable manifests); raise
    DiskGuardRefused before any pull when the missing images do not fit. ``sources``: the runtime's pull sources
    (default: registries.conf)."""
    mode = params["disk_guard"]
    if mode == "off":
        return None, {}
    path = params["image_store_path"] or image_fs
    try:
        total, free = filesystem_stats(path)  # type: ignore[arg-type]  # None is caught as TypeError
    except (OSError, TypeError) as err:
        raise CollectionError(
            f"disk guard cannot read the free space of the image filesystem {path!r} ({err}); "
            "set image_store_path to a path on it, or disk_guard to off"
        ) from err
    manifests: List[Tuple[str, ManifestInfo]] = []
    unreadable: Dict[str, KnownFailure] = {}
    estimator = None
    if mode == "estimate" and missing:
        with RegistryClient(params["registry_timeout"], params["registry_certs_dirs"]) as registry_client:
            retry = RetryPolicy(params["retries"], params["retry_delay"], max_delay=params["retry_max_delay"])
            estimator = PullEstimator(registry_client, sources or request.registries, request.auth_config, retry,
                                      request.platform)
            manifests, unreadable = estimator.read(missing)
    guard = check(estimate(manifests, params["expansion_factor"]), total, free, params["min_free"], mode,
                  pulls=len(missing))
    guard.update(
        filesystem=path,
        registry_requests=estimator.requests if estimator else 0,
        estimate_seconds=estimator.seconds if estimator else 0.0,
        sources=estimator.sources if estimator else {},
    )
    if not guard["ok"]:
        raise DiskGuardRefused(guard)
    return guard, unreadable


def _locked(request: PrefetchRequest, params: Mapping[str, Any]) -> Optional[NodeLock]:
    lock_file = params["lock_file"] or (params["progress_file"] + ".lock" if params["progress_file"] else None)
    if not lock_file or request.check_mode:
        return None
    return NodeLock(lock_file, params["run_id"]).acquire()


def pin_method(wanted: str, runtime: Mapping[str, Any]) -> str:
    """The method a run pins with: ``auto`` is the drop-in on CRI-O, the image label on containerd 1.7.3 and
    later, none on anything else (older containerd stores the label but does not honour it)."""
    if wanted != PIN_AUTO:
        return wanted
    if runtime.get("runtime_name") == "cri-o":
        return PIN_DROPIN
    if runtime.get("runtime_name") == "containerd" and runtime_problem(dict(runtime)) is None:
        return PIN_LABEL
    return PIN_NONE


def mco_pin_method(wanted: str, method: str, mco_dir: str) -> Tuple[str, Optional[str], List[str]]:
    """(method, the MCO sign or None, warnings): on a node the machine-config-operator manages, ``auto`` leaves the
    drop-in to it (no pin) and an explicit ``dropin`` warns (``_openshift.mco_node``)."""
    if method != PIN_DROPIN:
        return method, None, []
    write, sign, warnings = dropin_decision(wanted == PIN_AUTO, mco_dir)
    return (method if write else PIN_NONE), sign, warnings


def pin_images(client: Any, request: PrefetchRequest, params: Mapping[str, Any], method: str,
               images: List[ImageResult], run_command: Optional[RunCommand],
               present: Optional[Mapping[str, CriImage]] = None, runtime: Optional[Mapping[str, Any]] = None,
               ) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]], List[str]]:
    """Pin the requested images with ``method`` once every one is on the node (the same step as
    ``crio_pinned_images`` / ``containerd_pinned_images``), else leave the pins as they are. ``present`` (the run's
    present check) spares the label pin an ImageStatus call for each image that was already there.

    Returns (the result's ``pin``: ``method``, ``ran``, ``changed``, ``images``, ``path``, ``reloaded``,
    ``records``, ``cri_pinned`` (what CRI reports per image after the pin), and ``reason`` when ``auto`` found a
    runtime that cannot pin; the pin's diff or None; warnings). Raises the pin step's CollectionError.
    """
    pin: Dict[str, Any] = dict(method=method, ran=False, changed=False, images=[], path=None, reloaded=False,
                               records=None, cri_pinned={})
    if method == PIN_NONE:
        reason = auto_pin_problem(params["pin"], runtime or {})
        if reason:
            pin["reason"] = reason
        return pin, None, [reason] if reason else []
    if any(entry["status"] not in _ON_NODE for entry in images):
        return pin, None, []
    names = [str(ref) for ref in request.refs]
    if method == PIN_DROPIN:
        dropin = DropinSettings(params["dropin_path"], params["crio_reload"], params["crio_pid_file"],
                                settle_timeout=params["settle_timeout"])
        done = pin_dropin(validate_images(names, params["require_digest"]), dropin, request.check_mode,
                          lambda wanted: missing_images(client, wanted), run_command, client=client, known=present)
        pin.update(ran=True, changed=done["changed"], images=done["images"], path=done["path"],
                   reloaded=done["reloaded"], cri_pinned=done["cri_pinned"])
        return pin, done["diff"], done["warnings"]
    label = LabelSettings(old_runtime=params["old_runtime"], settle_timeout=params["settle_timeout"])
    done = pin_labels(client, validate_images(names, params["require_digest"]), label, request.check_mode,
                      known=present)
    pin.update(ran=True, changed=done["changed"], images=done["images"], records=done["records"],
               cri_pinned=done["cri_pinned"])
    return pin, done["diff"], done["warnings"]


@dataclass(frozen=True)
class PrefetchOutcome:
    """The module's result, the pull's warnings and the failure message (None when every image is there)."""

    result: Dict[str, Any]
    warnings: List[str]
    failure: Optional[str]
    # The pin failed (after the pulls, which the result reports): the task fails whatever fail_on_error is.
    pin_failure: Optional[str] = None


def run_prefetch(request: PrefetchRequest, params: Mapping[str, Any], diff: bool = False,
                 client_factory: Optional[Callable[[Any], Any]] = None,
                 run_command: Optional[RunCommand] = None) -> PrefetchOutcome:
    """Lock the node, find the present images, guard the disk, pull the rest, pin; the module's result.

    ``client_factory(params)`` opens the runtime (default: a containerd client when the pin may set the
    label, else a CRI client); ``run_command(argv) -> (rc, out, err)`` runs ``systemctl`` for a CRI-O reload.
    """
    if client_factory is None:
        labels = params["pin"] in (PIN_AUTO, PIN_LABEL)
        client_factory = ContainerdClient.from_params if labels else CriClient.from_params
    open_client: Callable[[Any], Any] = client_factory
    lock = _locked(request, params)
    started = time.monotonic()
    pin_diff: Optional[Dict[str, Any]] = None
    pin_warnings: List[str] = []
    pin_failure: Optional[str] = None
    source_warnings: List[str] = []
    try:
        with open_client(params) as client:
            runtime = dict(client.version(), endpoint=client.endpoint)
            filesystems = client.image_fs_info()
            image_fs = filesystems[0]["mountpoint"] if filesystems else None
            present = find_present(client, list(request.refs))
            missing = [ref for ref in request.refs if str(ref) not in present]
            guard_sources: Optional[PullSources] = None
            if params["disk_guard"] == "estimate" and missing:
                guard_sources, sources_from, source_warnings = pull_sources(request, params, runtime,
                                                                            client.status_info)
            guard, unreadable = guard_disk(request, params, image_fs, missing, guard_sources)
            if guard is not None and guard_sources is not None:
                guard["sources_from"] = sources_from
            report = prefetch(client, list(request.refs), request.auth_for,
                              _options(params, request.check_mode, image_fs), present, unreadable)
            method, mco_sign, mco_warnings = mco_pin_method(params["pin"], pin_method(params["pin"], runtime),
                                                            params["mco_dir"])
            pin_started = time.time()
            try:
                pin, pin_diff, pin_warnings = pin_images(client, request, params, method, report["images"],
                                                         run_command, present, runtime)
                pin["mco_managed"] = mco_sign
                pin_warnings = mco_warnings + pin_warnings
            except CollectionError as err:
                # A drop-in written before a failed reload, or labels CRI did not report in time, changed the node.
                written = err.details
                pin = dict(method=method, ran=True, changed=bool(written.get("changed")),
                           images=written.get("images", []), path=written.get("path"),
                           reloaded=bool(written.get("reloaded")), records=written.get("records"),
                           cri_pinned=written.get("cri_pinned", {}), mco_managed=mco_sign, error=err.message)
                pin_warnings = mco_warnings
                pin_failure = f"pinning with the {method} method failed: {err.message}"
            # Wall-clock times, as the images' started and finished: the report draws the pin on the same axis.
            pin.update(started=pin_started, finished=time.time())
    finally:
        if lock is not None:
            lock.release()
    totals = dict(report["totals"], seconds=round(time.monotonic() - started, 3))
    result: Dict[str, Any] = dict(changed=totals[PULLED] > 0 or totals[WOULD_PULL] > 0 or pin["changed"],
                                  images=report["images"], totals=totals, runtime=runtime, pin=pin)
    if diff:
        # Ansible shows a list of diffs one after the other.
        result["diff"] = image_diff(report["images"]) if pin_diff is None else [image_diff(report["images"]), pin_diff]
    if guard is not None:
        result["disk_guard"] = guard
    return PrefetchOutcome(result, source_warnings + report["warnings"] + pin_warnings,
                           failure_message(report["images"]), pin_failure)
