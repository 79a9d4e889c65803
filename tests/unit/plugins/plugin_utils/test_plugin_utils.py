# SPDX-License-Identifier: GPL-3.0-or-later
"""The rules of plugin_utils as a whole: every file has its test file (``_<name>.py`` is tested in
``test_<name>.py`` here), and its ``__all__`` names what it offers: names it defines, among them every name a filter,
an action, another plugin_utils file, a test or a hack script takes from it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[4]
PLUGIN_UTILS = ROOT / "plugins" / "plugin_utils"
TESTS = Path(__file__).resolve().parent
PACKAGE = "ansible_collections.pinned.images.plugins.plugin_utils"


def _plugin_utils_files(directory: Path = PLUGIN_UTILS) -> List[Path]:
    return sorted(path for path in directory.glob("*.py") if path.name != "__init__.py")


def _untested(files: Iterable[Path], tests: Path = TESTS) -> List[str]:
    """The names of ``files`` without ``tests/test_<name>.py`` (the name without its leading underscore)."""
    return [path.name for path in files if not (tests / f"test_{path.name.lstrip('_')}").exists()]


def test_every_plugin_utils_file_has_a_test_file():
    assert _untested(_plugin_utils_files()) == []


def test_the_test_file_check_names_the_files_without_one(tmp_path):
    (tmp_path / "plugin_utils").mkdir()
    for name in ("__init__.py", "_plan.py", "_results.py"):
        (tmp_path / "plugin_utils" / name).write_text("")
    (tmp_path / "test_plan.py").write_text("")
    assert _untested(_plugin_utils_files(tmp_path / "plugin_utils"), tmp_path) == ["_results.py"]


def _all_and_defined(path: Path) -> Tuple[object, Set[str]]:
    """The value of ``__all__`` in ``path`` (None without one, the source text when it is not a list of strings) and
    the names the file defines at its top level."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    listed: object = None
    defined: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names = [target] if isinstance(target, ast.Name) else getattr(target, "elts", [])
                defined.update(name.id for name in names if isinstance(name, ast.Name))
                if getattr(target, "id", None) == "__all__":
                    value = node.value
                    strings = isinstance(value, ast.List) and all(
                        isinstance(item, ast.Constant) and isinstance(item.value, str) for item in value.elts
                    )
                    listed = [item.value for item in value.elts] if strings else ast.unparse(value)
    return listed, defined


def _taken(path: Path) -> Set[Tuple[str, str]]:
    """(plugin_utils file, name) of each name ``path`` takes from a plugin_utils file: ``from ..._x import name``,
    or ``from ...plugin_utils import _x`` (or ``import ..._x as y``) and ``_x.name``."""
    text = path.read_text(encoding="utf-8")
    if PACKAGE not in text:
        return set()
    tree = ast.parse(text, str(path))
    modules: Dict[str, str] = {}
    taken = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            taken.update((node.module[len(PACKAGE) + 1 :], alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            modules.update({alias.asname or alias.name: alias.name for alias in node.names})
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + ".") and alias.asname:
                    modules[alias.asname] = alias.name[len(PACKAGE) + 1 :]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            taken.add((modules[node.value.id], node.attr))
    return taken


def _users(root: Path = ROOT) -> List[Path]:
    """The files that may take names from plugin_utils (module_utils and modules never do: test_layers.py)."""
    folders = ("plugins/filter", "plugins/action", "plugins/plugin_utils", "tests", "hack")
    return sorted(path for folder in folders for path in (root / folder).rglob("*.py"))


def _public_name_problems(files: Iterable[Path], users: Iterable[Path], root: Path = ROOT) -> List[str]:
    """What is wrong with the ``__all__`` of ``files``, as used by ``users`` (files under ``root``)."""
    problems = []
    offered: Dict[str, Set[str]] = {}
    for path in files:
        listed, defined = _all_and_defined(path)
        if not isinstance(listed, list):
            problems.append(f"{path.name}: no __all__ (a list of names)" + (f", got {listed}" if listed else ""))
            continue
        problems.extend(
            f"{path.name}: __all__ names {name}, which it does not define" for name in listed if name not in defined
        )
        problems.extend(
            f"{path.name}: __all__ names {name} twice" for name in sorted({n for n in listed if listed.count(n) > 1})
        )
        offered[path.stem] = set(listed)
    for user in users:
        for module, name in sorted(_taken(user)):
            if module in offered and name not in offered[module]:
                problems.append(f"{user.relative_to(root)}: takes {name} from {module}, whose __all__ does not list it")
    return problems


def test_every_plugin_utils_file_lists_what_it_offers_in_all():
    assert _public_name_problems(_plugin_utils_files(), _users()) == []


def test_the_all_check_sees_a_missing_all_a_name_not_defined_and_a_name_not_listed(tmp_path):
    (tmp_path / "_offers.py").write_text(
        "from typing import Any\n__all__ = ['Any', 'plan', 'gone']\nTOTAL, LIMIT = 1, 2\ndef plan(): ...\ndef lines(): ...\n"
    )
    (tmp_path / "_bare.py").write_text("def f(): ...\n")
    (tmp_path / "_computed.py").write_text("__all__ = sorted(globals())\n")
    user = tmp_path / "tests" / "test_x.py"
    user.parent.mkdir()
    user.write_text(
        f"from {PACKAGE}._offers import plan, lines\n"
        f"from {PACKAGE} import _offers\n"
        "def test():\n    return _offers.TOTAL, _offers.plan\n"
    )
    assert _public_name_problems(sorted(tmp_path.glob("_*.py")), [user], tmp_path) == [
        "_bare.py: no __all__ (a list of names)",
        "_computed.py: no __all__ (a list of names), got sorted(globals())",
        "_offers.py: __all__ names gone, which it does not define",
        "tests/test_x.py: takes TOTAL from _offers, whose __all__ does not list it",
        "tests/test_x.py: takes lines from _offers, whose __all__ does not list it",
    ]
