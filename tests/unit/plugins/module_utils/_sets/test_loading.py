# SPDX-License-Identifier: GPL-3.0-or-later
"""_sets/loading: set files, directories and dicts; every problem at once; YAML alias bombs and big files refused."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.pinned.images.plugins.module_utils._sets import loading as _set_loading
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
from ansible_collections.pinned.images.plugins.module_utils._sets.model import (
    API_VERSION,
    PinnedImageSetError,
    validate_set,
)
from fixtures.openshift_objects import img, make_pool, make_set, write


def alias_bomb(levels: int, where: str) -> str:
    """A ~600-byte YAML set whose ``where`` (apiVersion or an image name) expands to 9**levels strings."""
    anchors = ['  a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    anchors += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    top = f"*a{levels - 1}"
    api_version = top if where == "apiVersion" else API_VERSION
    image = top if where == "image" else img(1)
    return (
        "x-anchors:\n" + "\n".join(anchors) + f"\napiVersion: {api_version}\nkind: PinnedImageSet\n"
        f"metadata: {{name: bomb}}\nspec: {{pinnedImages: [{{name: {image}}}]}}\n"
    )


LOAD_UNDER_LIMITS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024, 512 * 1024 * 1024))
from ansible_collections.pinned.images.plugins.module_utils._sets.model import PinnedImageSetError
from ansible_collections.pinned.images.plugins.module_utils._sets.loading import load_sets
try:
    load_sets(sys.argv[1])
except PinnedImageSetError as exc:
    print(exc)
"""


def test_load_from_files_directories_and_dicts(tmp_path):
    directory = tmp_path / "sets"
    directory.mkdir()
    write(directory / "b.yml", make_set("b", images=(3,)))
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}}
    write(
        directory / "a.yaml",
        make_set("a", images=(1,)),
        config_map,
        make_pool("worker", {"matchLabels": {"node-role.kubernetes.io/worker": ""}}),
    )
    (directory / "notes.txt").write_text("not: [yaml")
    (directory / "sub.yaml").mkdir()
    listed = write(tmp_path / "list.yaml", {"apiVersion": "v1", "kind": "List", "items": [make_set("c", images=(4,))]})
    sets, pools = load_sets([str(directory), listed, make_set("d", images=(5,)), validate_set(make_set("e"))])
    assert [s.name for s in sets] == ["a", "b", "c", "d", "e"]
    assert [p.name for p in pools] == ["worker"]
    assert sets[0].source == f"{directory / 'a.yaml'} (document 1)"
    assert sets[1].source == str(directory / "b.yml")
    assert sets[2].source == f"{listed} items[0]"
    assert sets[3].source == "sets[2]"


def test_load_reports_every_problem_across_sources(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: [unclosed\n")
    bad = write(tmp_path / "bad.yaml", make_set("ok"), make_set("bad", images=("quay.io/a/b:v1",)))
    with pytest.raises(PinnedImageSetError) as info:
        load_sets(
            [
                str(broken),
                str(bad),
                str(tmp_path / "missing.yaml"),
                {"kind": "Secret"},
                "x" and 42,
                make_set("ok", images=(9,)),
            ]
        )
    text = "\n".join(info.value.problems)
    assert f"{broken}: not valid YAML" in text
    assert f"{bad} (document 2): PinnedImageSet 'bad': spec.pinnedImages[0].name 'quay.io/a/b:v1' is a tag" in text
    assert f"{tmp_path / 'missing.yaml'}: no such file or directory" in text
    assert "sets[3]: kind is 'Secret'" in text
    assert "sets[4]: expected a Kubernetes object (mapping), got number" in text
    assert "'ok' is also defined, differently" in text
    assert len(info.value.problems) == 6


def test_identical_repeats_are_dropped(tmp_path):
    path = write(tmp_path / "a.yaml", make_set("a"))
    sets, _pools = load_sets([str(path), str(path), make_set("a")])
    assert [s.name for s in sets] == ["a"]


def test_differing_pool_definitions_are_a_problem():
    one = make_pool("worker", {"matchLabels": {"a": "1"}})
    two = make_pool("worker", {"matchLabels": {"a": "2"}})
    assert [p.name for p in load_sets([one, one])[1]] == ["worker"]
    with pytest.raises(PinnedImageSetError, match="MachineConfigPool 'worker' is also defined, differently"):
        load_sets([one, two])


def test_load_accepts_a_single_source_and_none(tmp_path):
    assert load_sets(None) == ([], [])
    sets, _pools = load_sets(make_set("x"))
    assert sets[0].name == "x"


@pytest.mark.parametrize("levels, where", [(6, "apiVersion"), (10, "apiVersion"), (10, "image")])
def test_alias_bombs_are_refused_without_expanding(tmp_path, levels, where):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(levels, where))
    assert path.stat().st_size < 1000
    # Bounds, not a benchmark: the refusal must come in a process that may not grow past 512 MiB.
    done = subprocess.run(
        [sys.executable, "-c", LOAD_UNDER_LIMITS, str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=True,
    )
    assert f"{path}: expands to more than {_set_loading.MAX_EXPANDED_NODES} values once its YAML aliases" in done.stdout
    assert len(done.stdout) < 500


def test_small_aliases_and_self_references(tmp_path):
    shared = tmp_path / "shared.yaml"
    shared.write_text(
        f"metadata: {{name: a, labels: &l {{team: x}}}}\napiVersion: {API_VERSION}\n"
        f"kind: PinnedImageSet\nspec: {{pinnedImages: [{{name: '{img(1)}'}}], x: *l}}\n"
    )
    assert load_sets(str(shared))[0][0].labels == {"team": "x"}
    loop = tmp_path / "loop.yaml"
    loop.write_text("kind: PinnedImageSet\nspec: &s {pinnedImages: *s}\n")
    with pytest.raises(PinnedImageSetError, match="refers to itself"):
        load_sets(str(loop))
    nested = [make_set("a")]
    for _level in range(12):
        nested = [nested] * 9
    with pytest.raises(PinnedImageSetError, match=r"sets\[0\]: expands to more than"):
        load_sets([nested])


def test_a_big_set_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.yaml"
    line = f"  - name: {img(1)}\n"
    with path.open("w") as handle:
        handle.write(
            f"apiVersion: {API_VERSION}\nkind: PinnedImageSet\nmetadata: {{name: big}}\nspec:\n  pinnedImages:\n"
        )
        handle.write(line * (50 * 1024 * 1024 // len(line)))
    done = subprocess.run(
        [sys.executable, "-c", LOAD_UNDER_LIMITS, str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=True,
    )
    assert done.stdout.strip() == f"set file {path} is larger than {_set_loading.MAX_SET_FILE_SIZE} bytes"


def test_error_values_are_cut_short():
    deep = ["x" * 1000]
    for _level in range(40):
        deep = [deep] * 9
    bad = make_set("a")
    bad["apiVersion"] = deep
    bad["spec"]["pinnedImages"] = [{"name": {"k": "v" * 10_000}}]
    with pytest.raises(PinnedImageSetError) as info:
        validate_set(bad)
    assert all(len(problem) < 400 for problem in info.value.problems)
