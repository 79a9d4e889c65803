# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The release_image_set module's run (controller side): read the release, select its images, build the sets,
estimate their size and write ``dest``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple, cast

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import atomic_write
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageRef,
    ImageReferenceError,
    parse_image_ref,
)
from ansible_collections.pinned.images.plugins.module_utils._common.yaml_io import (
    HAS_YAML,
    YAML_IMPORT_ERROR,
    dump_yaml,
)
from ansible_collections.pinned.images.plugins.module_utils._openshift.release_payload import (
    ReleasePayloadError,
    build_sets,
    default_set_name,
    estimate_payload,
    read_release,
    select_components,
)
from ansible_collections.pinned.images.plugins.module_utils._prefetch.estimate import SourcesFailedError
from ansible_collections.pinned.images.plugins.module_utils._registry.client import RegistryClient
from ansible_collections.pinned.images.plugins.module_utils._registry.platforms import Platform, parse_platform
from ansible_collections.pinned.images.plugins.module_utils._runs.options import Problems, RegistryOptions
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import Invocation, Outcome, hiding

__all__ = ["ReleaseRequest", "release_sets", "run"]


@dataclass(frozen=True)
class ReleaseRequest:
    """The module's options, checked: the release, what to select, the sets to build, the registry."""

    release: ImageRef
    platform: Optional[Platform]
    include: Tuple[str, ...]
    exclude: Tuple[str, ...]
    include_release_image: bool
    name: Optional[str]
    labels: Dict[str, str]
    pools: Tuple[str, ...]
    estimate: bool
    expansion_factor: float
    dest: Optional[str]
    registry: RegistryOptions

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "ReleaseRequest":
        """Every problem of the options at once (CollectionError naming each option)."""
        problems = Problems()
        problems.above_zero(params, "expansion_factor")
        registry = RegistryOptions.from_params(params, problems)

        def release() -> ImageRef:
            try:
                return parse_image_ref(params["release"], require_digest=False)
            except ImageReferenceError as err:
                raise CollectionError(f"release {params['release']!r}: {err}") from err

        ref = problems.attempt(release)
        platform = problems.attempt(lambda: parse_platform(params["platform"]) if params["platform"] else None)
        problems.raise_any()
        # raise_any() raised when a reader failed: ref and registry are set.
        return cls(
            release=cast(ImageRef, ref),
            platform=platform,
            include=tuple(params["include"]),
            exclude=tuple(params["exclude"]),
            include_release_image=params["include_release_image"],
            name=params["name"],
            labels=dict(params["labels"]),
            pools=tuple(params["pools"]),
            estimate=params["estimate"],
            expansion_factor=params["expansion_factor"],
            dest=params["dest"],
            registry=cast(RegistryOptions, registry),
        )


def release_sets(request: ReleaseRequest, check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Read the release, select, build the sets, estimate, write ``dest``; the module's result. Every failure is a
    CollectionError whose message names the release or the option."""
    registry = request.registry
    ref = request.release
    with RegistryClient(registry.timeout, registry.certs_dirs) as client:
        try:
            payload = read_release(client, ref, registry.registries, registry.docker_config, request.platform)
            components = select_components(payload.components, list(request.include), list(request.exclude))
            images = sorted(
                set(components.values()) | ({payload.reference} if request.include_release_image else set())
            )
            if not images:
                raise ReleasePayloadError(f"include and exclude leave no image of release {payload.reference}")
            sets = build_sets(
                images, request.name or default_set_name(payload.version), request.labels, list(request.pools)
            )
            result: Dict[str, Any] = dict(
                changed=False,
                release_image=payload.reference,
                version=payload.version,
                metadata=payload.metadata,
                images=images,
                components=components,
                sets=sets,
                source=payload.source,
                platform=payload.platform,
                layer=payload.layer,
                bytes_read=payload.bytes_read,
            )
            if len(sets) == 1:
                result["set"] = sets[0]
            if request.estimate:
                result["estimate"] = estimate_payload(
                    client,
                    images,
                    registry.registries,
                    registry.docker_config,
                    request.platform,
                    request.expansion_factor,
                )
        except SourcesFailedError as err:
            raise CollectionError(f"cannot read release image {ref}: {err.last_error}") from err
    if request.dest:
        written = atomic_write(
            request.dest, "".join("---\n" + dump_yaml(obj) for obj in sets), mode=0o644, check_mode=check_mode
        )
        result.update(changed=written["changed"], dest=request.dest)
        if diff:
            result["diff"] = written["diff"]
    return result


def run(invocation: Invocation) -> Outcome:
    """The module's run: the pull secret's secrets join the outcome as soon as it is read."""
    if not HAS_YAML:
        raise CollectionError(missing_required_lib("PyYAML"), details={"exception": YAML_IMPORT_ERROR})
    request = ReleaseRequest.from_params(invocation.params)
    return hiding(
        request.registry.docker_config.secrets(),
        lambda: Outcome(release_sets(request, invocation.check_mode, invocation.diff)),
    )
