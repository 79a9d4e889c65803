# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the node role: its wanted images, the pin option, the step after the check and the node's result
(documented in the .yml files; the logic is in ``plugin_utils/_node.py``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.pinned.images.plugins.plugin_utils import _audit, _node


def node_wanted_images(images: Sequence[str], sets: Sequence[Mapping[str, Any]]) -> List[str]:
    """The node's own images, then those of its sets, each once."""
    return _node.wanted_images(images, sets)


def node_pin_option(node_pin: Any) -> str:
    """The prefetch module's pin option for the role's node_pin (a ValueError, which Ansible reports with the
    template, for any other value; ansible.errors is not imported here, as it would mark a test process as the
    controller)."""
    return _node.pin_option(node_pin)


def node_next_step(check: Mapping[str, Any], check_mode: bool = False, deps_tried: bool = False) -> str:
    """deps, pull, pin or none after the check call."""
    return _node.next_step(check, check_mode, deps_tried)


def node_result(
    results: Sequence[Any],
    node: str,
    control_plane: bool,
    check_mode: bool,
    error: str,
    images: Sequence[str],
    sets: Sequence[Any],
    started: float,
    prune: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The role's node_result from its prefetch calls, and the prune's result when it ran."""
    return _node.node_result(results, node, control_plane, check_mode, error, images, sets, started, prune=prune)


def node_result_line(result: Mapping[str, Any]) -> str:
    """The line the role prints for a node."""
    return _node.result_line(result)


def node_prefetch_args(options: Mapping[str, Any]) -> Dict[str, Any]:
    """The prefetch options without the unset ones."""
    return _node.prefetch_args(options)


def node_python_dir_env(path: str) -> Dict[str, str]:
    """The environment that names the private Python directory, {} for the default one."""
    return _node.python_dir_env(path)


def node_prune_files(record_file: str, lock_file: str, progress_file: str) -> Dict[str, Optional[str]]:
    """The prefetch's and the prune's record and lock files, and the record the role kept before."""
    return _node.prune_files(record_file, lock_file, progress_file)


def node_prune_blocker(results: Sequence[Any], check_mode: bool = False, wanted: Optional[Sequence[Any]] = None) -> str:
    """Why the prune must not run after the prefetch calls' results (or for a node that wants no image); empty when
    it may."""
    return _node.prune_blocker(results, check_mode, wanted)


def node_host_path(path: str, host_root: Any = None) -> str:
    """``path`` under the host's root in a pod (as is without one)."""
    return _node.node_host_path(path, str(host_root) if host_root else None)


def node_python_default_dir(host_root: Any = None) -> str:
    """The default private Python directory: the node's, under the host's root in a pod."""
    return _node.python_deps_dir(str(host_root) if host_root else None)


def node_failure_line(failed: Mapping[str, Any]) -> str:
    """The one line of a failed task of the role."""
    return _node.failure_line(failed)


def node_audit(result: Mapping[str, Any], node: str, control_plane: Any, sets: Sequence[Any]) -> Dict[str, Any]:
    """The node's audit row from its pin_audit result."""
    return _audit.audit_row(result, node, bool(control_plane), sets)


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {
            "node_wanted_images": node_wanted_images,
            "node_pin_option": node_pin_option,
            "node_next_step": node_next_step,
            "node_result": node_result,
            "node_result_line": node_result_line,
            "node_audit": node_audit,
            "node_python_dir_env": node_python_dir_env,
            "node_prefetch_args": node_prefetch_args,
            "node_failure_line": node_failure_line,
            "node_prune_files": node_prune_files,
            "node_prune_blocker": node_prune_blocker,
            "node_host_path": node_host_path,
            "node_python_default_dir": node_python_default_dir,
        }
