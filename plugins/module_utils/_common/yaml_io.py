# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's YAML: the guarded PyYAML import, a byte-stable dumper and the safe loaders.

A leaf: it imports only the error root. libyaml's C loader and dumper are used when PyYAML has them; the C
dumper writes the same bytes as the pure-Python one for the objects the collection writes (a unit test compares
both on a large document), so the same object always gives the same file whichever PyYAML is installed.
"""

from __future__ import annotations

from typing import Any, List, Optional, Union

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

try:
    import yaml
except ImportError as _exc:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None
    HAS_YAML = False
    YAML_IMPORT_ERROR: Optional[ImportError] = _exc
    # Never raised without PyYAML: nothing is parsed then.
    YAMLError: Any = ValueError
else:
    HAS_YAML = True
    YAML_IMPORT_ERROR = None
    YAMLError = yaml.YAMLError

    class _PureDumper(yaml.SafeDumper):
        """The pure-Python safe dumper without anchors: a repeated object is written out each time."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    # libyaml's when PyYAML was built with it.
    _FAST_BASE: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class _FastDumper(_FAST_BASE):
        """libyaml's emitter with the same representer settings as _PureDumper."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    _LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

__all__ = ["HAS_YAML", "YAML_IMPORT_ERROR", "YAMLError", "dump_yaml", "load_yaml", "load_yaml_all"]


def _require_yaml() -> None:
    if not HAS_YAML:  # pragma: no cover
        raise CollectionError(f"PyYAML is needed to read or write YAML ({YAML_IMPORT_ERROR})")


# No scalar is ever folded: the two emitters fold long double-quoted scalars at different columns.
_NO_FOLDING = 1 << 30


def _dump_with(obj: Any, dumper: Any) -> str:
    text: str = yaml.dump(
        obj,
        Dumper=dumper,
        default_flow_style=False,
        sort_keys=True,
        indent=2,
        width=_NO_FOLDING,
        allow_unicode=True,
        explicit_start=False,
    )
    return text


def dump_yaml(obj: Any) -> str:
    """Block-style YAML, sorted keys, two-space indent, no line folding, no anchors."""
    _require_yaml()
    return _dump_with(obj, _FastDumper)


def load_yaml(text: Union[str, bytes]) -> Any:
    """The one document of ``text`` (safe types only); raises YAMLError."""
    _require_yaml()
    return yaml.load(text, Loader=_LOADER)


def load_yaml_all(text: str) -> List[Any]:
    """Every document of ``text`` (safe types only); raises YAMLError."""
    _require_yaml()
    return list(yaml.load_all(text, Loader=_LOADER))
