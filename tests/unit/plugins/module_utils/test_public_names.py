# SPDX-License-Identifier: GPL-3.0-or-later
"""What each module_utils file offers is its ``__all__``: every file (but ``__init__.py`` and the generated stubs) has
one, every name in it is defined at the file's top level, and every name another file of plugins/ or tests/ imports
from it is in it, so the list cannot drift from the code as the hand-written "Public API" docstrings did.

Names with a leading underscore are private: a plugins/ file never imports one from another file (the check fails),
while a test may, to hold a private helper to upstream's tables (``_DOMAIN_RE`` against distribution/reference) without
making it part of the API. A name a file only imports from another is not its own: import it from where it is defined.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[4]
PLUGINS = TOP / "plugins"
MODULE_UTILS = PLUGINS / "module_utils"
PREFIX = "ansible_collections.pinned.images.plugins.module_utils."
GENERATED = ("cri_proto", "containerd_proto")


def _module_utils_files():
    return sorted(
        p
        for p in MODULE_UTILS.rglob("*.py")
        if p.name != "__init__.py" and not set(p.relative_to(MODULE_UTILS).parts) & set(GENERATED)
    )


def _module_name(path: Path) -> str:
    return PREFIX + ".".join(path.relative_to(MODULE_UTILS).with_suffix("").parts)


def _declared(tree: ast.Module):
    """The names of the top-level ``__all__``, or None without one."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _defined(body) -> set:
    """The names bound at the top level: functions, classes and assignments, also inside a top-level if or try."""
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.If, ast.Try)):
            names |= _defined(node.body) | _defined(node.orelse) | _defined(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                names |= _defined(handler.body)
    return names


def _imported_names(importers) -> dict:
    """{module name: {(name, importer)}} of every ``from <module_utils module> import name`` in ``importers``."""
    found = defaultdict(set)
    for path in importers:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
                found[node.module].update((alias.name, path) for alias in node.names)
    return found


def _importers():
    return [p for root in (PLUGINS, TOP / "tests") for p in root.rglob("*.py") if not set(p.parts) & set(GENERATED)]


IMPORTED = _imported_names(_importers())


def _problems(path: Path, imported) -> list:
    """What is wrong with ``path``'s ``__all__`` given ``imported`` ({(name, importer)} from other files)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    declared = _declared(tree)
    if declared is None:
        return ["no __all__"]
    problems = [f"{name} is in __all__ twice" for name in sorted({n for n in declared if declared.count(n) > 1})]
    defined = _defined(tree.body)
    problems += [f"{name} is in __all__ but not defined here" for name in declared if name not in defined]
    for name, importer in sorted(imported, key=lambda found: (found[0], str(found[1]))):
        where = importer.relative_to(TOP) if importer.is_relative_to(TOP) else importer
        if importer == path:
            continue
        if name.startswith("_"):
            if PLUGINS in importer.parents:
                problems.append(f"{where} imports the private {name}")
        elif name not in defined:
            problems.append(f"{where} imports {name}, which this file only imports: import it from its own file")
        elif name not in declared:
            problems.append(f"{where} imports {name}, which is not in __all__")
    return problems


@pytest.mark.parametrize("path", _module_utils_files(), ids=lambda p: str(p.relative_to(MODULE_UTILS)))
def test_all_is_what_the_file_defines_and_others_import(path):
    assert _problems(path, IMPORTED[_module_name(path)]) == []


def test_the_check_sees_a_missing_all_and_every_kind_of_drift(tmp_path):
    bare = tmp_path / "bare.py"
    bare.write_text("def run():\n    pass\n")
    assert _problems(bare, set()) == ["no __all__"]
    drifted = tmp_path / "drifted.py"
    drifted.write_text(
        "from somewhere import helper\n"
        "try:\n    import yaml\n    HAS_YAML = True\nexcept ImportError:\n    HAS_YAML = False\n"
        '__all__ = ["HAS_YAML", "run", "gone", "run"]\n'
        "def run():\n    pass\n"
        "def unlisted():\n    pass\n"
        "def _private():\n    pass\n"
    )
    plugin, test = PLUGINS / "modules" / "m.py", TOP / "tests" / "unit" / "test_m.py"
    imported = {("unlisted", test), ("helper", plugin), ("_private", plugin), ("_private", test), ("run", plugin)}
    assert _problems(drifted, imported) == [
        "run is in __all__ twice",
        "gone is in __all__ but not defined here",
        "plugins/modules/m.py imports the private _private",
        "plugins/modules/m.py imports helper, which this file only imports: import it from its own file",
        "tests/unit/test_m.py imports unlisted, which is not in __all__",
    ]
