# SPDX-License-Identifier: GPL-3.0-or-later
"""CONTRIBUTING.md's map is the tree: the layer diagram lists each module_utils package with exactly its files and
the layer test_layers.py gives it, the file list names every file of module_utils and plugin_utils and nothing
else, and every path the "Where a change goes" recipes name exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
MODULE_UTILS = ROOT / "plugins" / "module_utils"
PLUGIN_UTILS = ROOT / "plugins" / "plugin_utils"
GENERATED = {"cri_proto", "containerd_proto"}
LAYER_WORDS = {"leaves": 0, "clients": 1, "domain": 2, "runs": 3}


def _layers() -> dict:
    spec = importlib.util.spec_from_file_location(
        "layers_table", ROOT / "tests" / "unit" / "plugins" / "module_utils" / "test_layers.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LAYERS


def _diagram(text: str = CONTRIBUTING) -> dict:
    """{package: (layer, {file stems})} from the diagram's code block."""
    block = text.split("```\nplugins/module_utils/\n", 1)[1].split("```", 1)[0]
    packages, layer = {}, None
    for line in block.splitlines():
        heading = re.match(r"^  \d (\w+)$", line)
        if heading:
            layer = LAYER_WORDS.get(heading.group(1))
            continue
        entry = re.match(r"^    (_\w+)/\s+(.*)$", line)
        if entry:
            words = re.sub(r"\(.*?\)", "", entry.group(2)).split()
            packages[entry.group(1)] = (layer, {word for word in words if re.fullmatch(r"[a-z0-9_]+", word)})
    return packages


def _files(package: Path) -> set:
    return {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}


def _packages() -> dict:
    return {p.name: p for p in sorted(MODULE_UTILS.iterdir()) if (p / "__init__.py").exists()}


def test_the_diagram_lists_every_package_with_its_layer_and_files():
    diagram, layers = _diagram(), _layers()
    assert set(diagram) == set(_packages())
    for name, path in _packages().items():
        layer, files = diagram[name]
        assert layer == layers[name], f"{name}: the diagram and LAYERS disagree"
        if name == "_runs":
            # One file per module is said in words; the shared ones are named.
            modules = {p.stem for p in (ROOT / "plugins" / "modules").glob("*.py")}
            assert _files(path) - modules == files & _files(path), "name the shared files of _runs in the diagram"
        else:
            assert files == _files(path), f"{name}: the diagram lists {sorted(files)}"


def _listed() -> set:
    """The files the list names: ``_package/file`` for module_utils, ``_file`` for plugin_utils."""
    text = CONTRIBUTING.split("What each file holds", 1)[1].split("\n\n", 2)[1]
    return set(re.findall(r"`(_\w+/\w+|_\w+)`", text))


def test_the_file_list_names_every_file_and_only_files():
    listed = _listed()
    expected = {f"{name}/{stem}" for name, path in _packages().items() if name != "_runs" for stem in _files(path)}
    modules = {p.stem for p in (ROOT / "plugins" / "modules").glob("*.py")}
    expected |= {f"_runs/{stem}" for stem in _files(MODULE_UTILS / "_runs") - modules}
    expected |= {p.stem for p in PLUGIN_UTILS.glob("_*.py") if p.name != "__init__.py"}
    assert listed == expected
    assert "`_runs/<module>`" in CONTRIBUTING, "say that _runs has one file per module"


def test_every_path_of_the_recipes_exists():
    recipes = CONTRIBUTING.split("## Where a change goes", 1)[1].split("\n## ", 1)[0]
    paths = [p for p in re.findall(r"`([^`\s]+)`", recipes) if "/" in p or re.search(r"\.(py|yml|md)$", p)]
    assert paths, "the recipes name no path"
    missing = [p for p in paths if "<name>" not in p and not (ROOT / p).exists()]
    templated = [p for p in paths if "<name>" in p and not (ROOT / p).parent.is_dir()]
    assert missing == [] and templated == []


def test_the_diagram_parser_keeps_file_names_only():
    text = "```\nplugins/module_utils/\n  1 leaves\n    _common/  errors yaml_io (and prose words)\n```\n"
    assert _diagram(text) == {"_common": (0, {"errors", "yaml_io"})}
