# SPDX-License-Identifier: GPL-3.0-or-later
"""registries.conf v2 parsing, prefix matching, mirror rewriting and per-source credentials."""

from __future__ import annotations

import base64
import json
import sys
import types
from pathlib import Path

import pytest
import yaml

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import toml_module
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import parse_image_ref
from ansible_collections.pinned.images.plugins.module_utils._registry import registries_conf as _registries_conf
from ansible_collections.pinned.images.plugins.module_utils._registry.auth import parse_docker_config
from ansible_collections.pinned.images.plugins.module_utils._registry.registries_conf import (
    RegistriesConf,
    RegistriesConfError,
    RegistryBlockedError,
    credentials_for_source,
    load_registries_conf,
    parse_registries_conf,
    registries_from_list,
)
from fixtures.bad_files import error_of

DIGEST = "sha256:" + "ab" * 32
# Test tables kept as data (one line a case).
CASES = Path(__file__).parent / "cases"

CONF = """
unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = "enforcing"

[[registry]]
prefix = "quay.io"
location = "quay.io"
  [[registry.mirror]]
  location = "mirror.local:5000/quay"
  [[registry.mirror]]
  location = "backup.local"
  insecure = true

[[registry]]
prefix = "quay.io/special"
location = "special.example.com/repos"
insecure = true

[[registry]]
location = "docker.io"
mirror-by-digest-only = true
  [[registry.mirror]]
  location = "hub-mirror.local"

[[registry]]
prefix = "*.corp.example.com"
  [[registry.mirror]]
  location = "cache.corp.example.com"

[[registry]]
prefix = "*.example.com"
blocked = true

[[registry]]
prefix = "evil.io"
location = "evil.io"
blocked = true

[[registry]]
location = "tags.io"
  [[registry.mirror]]
  location = "digests-mirror.io"
  pull-from-mirror = "digest-only"
  [[registry.mirror]]
  location = "tags-mirror.io"
  pull-from-mirror = "tag-only"
  [[registry.mirror]]
  location = "all-mirror.io"
  pull-from-mirror = "all"

[[registry]]
prefix = "pinned.io/app:v1"
location = "other.io/app-v1"

[aliases]
"fedora" = "registry.fedoraproject.org/fedora"
"""


@pytest.fixture(scope="module")
def conf():
    return RegistriesConf(parse_registries_conf(CONF, "registries.conf"))


# (image, [(source reference, insecure, mirror), ...])
SOURCE_CASES = [
    (case["image"], [tuple(source) for source in case["sources"]])
    for case in yaml.safe_load((CASES / "registries_conf_sources.yaml").read_text().replace("@DIGEST", "@" + DIGEST))
]


@pytest.mark.parametrize("image, expected", SOURCE_CASES)
def test_pull_sources(conf, image, expected):
    sources = conf.pull_sources(parse_image_ref(image, require_digest=False))
    assert [(str(s.reference), s.insecure, s.mirror) for s in sources] == expected
    for source in sources:
        assert source.registry == source.reference.registry
        assert str(source) == str(source.reference)


@pytest.mark.parametrize("image", ["a.example.com/x@" + DIGEST, "evil.io/x@" + DIGEST, "a.b.example.com/x:t"])
def test_blocked(conf, image):
    with pytest.raises(RegistryBlockedError) as info:
        conf.pull_sources(parse_image_ref(image, require_digest=False))
    assert "blocked" in str(info.value) and "registries.conf" in str(info.value)
    assert isinstance(info.value, RegistriesConfError)


def test_exact_prefix_beats_wildcard_of_same_length():
    conf = RegistriesConf(
        registries_from_list(
            [
                {"prefix": "*.example.com", "blocked": True},
                {"prefix": "reg.example.com", "location": "reg.example.com"},
            ]
        )
    )
    sources = conf.pull_sources(parse_image_ref("reg.example.com/a:t", require_digest=False))
    assert [str(s) for s in sources] == ["reg.example.com/a:t"]


BAD_CONF = [
    ('[registries.search]\nregistries = ["docker.io"]\n', "v1 format"),
    ("[registries.insecure]\nregistries = []\n", "v1 format"),
    ("[[registry]]\nlocation = \n", "not valid TOML"),
    ("registry = 5\n", "array of tables"),
    ("[[registry]]\ninsecure = true\n", "both location and prefix are unset"),
    ('[[registry]]\nprefix = "quay.io"\n', "location is unset"),
    ('[[registry]]\nlocation = "https://quay.io"\n', "URI schemes are not supported"),
    ("[[registry]]\nlocation = 5\n", "location must be a string"),
    ('[[registry]]\nlocation = "quay.io"\ninsecure = "yes"\n', "insecure must be true or false"),
    ('[[registry]]\nlocation = "quay.io"\nblocked = 1\n', "blocked must be true or false"),
    ('[[registry]]\nprefix = "*.example.com/ns"\n', "wildcard prefix must look like"),
    ('[[registry]]\nprefix = "reg.*.com"\nlocation = "a.io"\n', "wildcard prefix must look like"),
    ('[[registry]]\nprefix = "*.example.com:5000"\n', "wildcard prefix must look like"),
    ('[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\ninsecure = true\n', "mirror location is unset"),
    ('[[registry]]\nlocation = "quay.io"\nmirror = 3\n', "mirror must be a list"),
    (
        '[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\nlocation = "m.io"\npull-from-mirror = "x"\n',
        "pull-from-mirror 'x'",
    ),
    (
        '[[registry]]\nlocation = "quay.io"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = "m.io"\n'
        'pull-from-mirror = "all"\n',
        "cannot be combined",
    ),
    (
        '[[registry]]\nlocation = "quay.io"\npull-from-mirror = "all"\n',
        "pull-from-mirror must not be set for a non-mirror registry 'quay.io'",
    ),
    (
        '[[registry]]\nlocation = "quay.io"\n[[registry]]\nprefix = "quay.io/a"\nlocation = "quay.io"\ninsecure = true\n',
        "registry 'quay.io' is defined multiple times with conflicting 'insecure' setting",
    ),
    (
        '[[registry]]\nprefix = "*.a.io"\nblocked = true\n[[registry]]\nprefix = "*.a.io"\n',
        "defined multiple times with conflicting 'blocked' setting",
    ),
    ('[[registry]]\nlocation = "quay io"\n', "contains whitespace"),
]


@pytest.mark.parametrize("text, message", BAD_CONF)
def test_bad_conf(text, message):
    error = error_of(RegistriesConfError, parse_registries_conf, text, "/etc/containers/registries.conf")
    assert message in error
    assert error.startswith("/etc/containers/registries.conf")


# The runtime loads any location without a URI scheme; one that cannot be rewritten onto fails the pull only.
@pytest.mark.parametrize(
    "location, problem",
    [
        ("mirror", "not a canonical reference (it would mean docker.io/mirror/x:t)"),
        ("library/busybox", "not a canonical reference"),
        ("example.com/foo", None),
        ("quay.io/NS", "not a valid reference"),
        ("quay.io/ns:tag", "not a valid reference"),
        ("john.doe@example.com", "not a valid reference"),
    ],
)
def test_location_checked_when_used(location, problem):
    conf = RegistriesConf(parse_registries_conf(f'[[registry]]\nprefix = "src.io"\nlocation = "{location}"\n', "x"))
    ref = parse_image_ref("src.io/x:t", require_digest=False)
    if problem is None:
        assert [str(s) for s in conf.pull_sources(ref)] == [f"{location}/x:t"]
        return
    with pytest.raises(RegistriesConfError) as info:
        conf.pull_sources(ref)
    assert problem in str(info.value) and "rewritten by prefix 'src.io'" in str(info.value)


def test_rewrite_that_would_land_on_docker_hub_is_refused():
    conf = RegistriesConf(registries_from_list([{"prefix": "example.com/foo", "location": "example.com"}]))
    with pytest.raises(RegistriesConfError) as info:
        conf.pull_sources(parse_image_ref("example.com/foo@" + DIGEST))
    assert "'example.com@" + DIGEST + "'" in str(info.value) and "not a canonical reference" in str(info.value)


def test_longest_wildcard_wins_and_first_of_equal_prefixes():
    conf = RegistriesConf(
        parse_registries_conf(
            '[[registry]]\nprefix = "*.example.com"\nlocation = "short.io"\n'
            '[[registry]]\nprefix = "*.sub.example.com"\nlocation = "long.io"\n'
            '[[registry]]\nprefix = "dup.io"\nlocation = "first.io"\n'
            '[[registry]]\nprefix = "dup.io"\nlocation = "second.io"\n',
            "x",
        )
    )
    assert conf.find_registry(parse_image_ref("a.sub.example.com/x:t", require_digest=False)).location == "long.io"
    assert conf.find_registry(parse_image_ref("a.sub.example.com:5000/x:t", require_digest=False)).location == "long.io"
    assert conf.find_registry(parse_image_ref("dup.io/x:t", require_digest=False)).location == "first.io"


@pytest.mark.parametrize("location", ["docker.io", "index.docker.io", "registry-1.docker.io/library", "docker.io/org"])
def test_every_docker_hub_spelling_is_a_location(location):
    (reg,) = parse_registries_conf(f'[[registry]]\nlocation = "{location}"\n', "x")
    assert reg.location == location


def test_prefix_defaults_to_location_and_trailing_slash():
    (reg,) = parse_registries_conf('[[registry]]\nlocation = "quay.io/ns/"\n', "x")
    assert reg.prefix == "quay.io/ns" and reg.location == "quay.io/ns"


def test_ignored_keys():
    text = 'unqualified-search-registries = ["x.io"]\ncredential-helpers = ["a"]\n[aliases]\n"a" = "x.io/a"\n'
    warnings = []
    assert parse_registries_conf(text, "x", warnings) == []
    assert warnings == []


def test_unknown_keys_are_ignored_with_a_warning(tmp_path):
    conf = tmp_path / "registries.conf"
    conf.write_text(
        'unqualified-search-registry = ["x.io"]\n[[registry]]\nlocation = "quay.io"\nblock = true\n'
        '[[registry.mirror]]\nlocation = "m.example.com"\ninsecur = true\n'
    )
    loaded = load_registries_conf(conf)
    (reg,) = loaded.registries
    assert reg.blocked is False and reg.mirrors[0].insecure is False
    assert loaded.warnings == [
        f"{conf}: unknown keys 'unqualified-search-registry' are ignored (a typo?); known are "
        "additional-layer-store-auth-helper, aliases, credential-helpers, registries, registry, short-name-mode, "
        "unqualified-search-registries",
        f"{conf}: [[registry]] #1: unknown keys 'block' are ignored (a typo?); known are blocked, insecure, "
        "location, mirror, mirror-by-digest-only, prefix",
        f"{conf}: [[registry]] #1 mirror[0]: unknown keys 'insecur' are ignored (a typo?); known are insecure, "
        "location, pull-from-mirror, pull_from_mirror",
    ]


def test_many_unknown_keys_make_one_short_warning():
    text = "".join(f"k{i:03}{'x' * 200} = 1\n" for i in range(500))
    warnings = []
    parse_registries_conf(text, "x", warnings)
    (warning,) = warnings
    assert warning.count("'k") == 10 and "and 490 more" in warning and len(warning) < 1200


BAD_LIST = [
    ("x", "must be a list"),
    (["x"], "registry_mirrors[0] must be a dict"),
    ([{"prefix": "quay.io", "location": "q.io", "bogus": 1}], "unknown keys bogus"),
    ([{"location": "q.io", "mirrors": [{"location": "m.io", "insecur": True}]}], "mirrors[0]: unknown keys insecur"),
    ([{"location": "q.io", "mirrors": ["m.io"]}], "mirror[0] must be a table"),
    ([{"prefix": "quay.io"}], "location is unset"),
    ([{"location": "q.io", "mirrors": [{"location": None}]}], "location is unset"),
]


@pytest.mark.parametrize("items, message", BAD_LIST)
def test_bad_list(items, message):
    with pytest.raises(RegistriesConfError) as info:
        registries_from_list(items)
    assert message in str(info.value)


def test_list_accepts_ansible_nones():
    (reg,) = registries_from_list(
        [
            {
                "prefix": None,
                "location": "quay.io",
                "insecure": None,
                "blocked": None,
                "mirror_by_digest_only": None,
                "mirrors": [{"location": "m.io", "insecure": None, "pull_from_mirror": None}],
            }
        ]
    )
    assert reg.prefix == "quay.io" and not reg.insecure and not reg.blocked and reg.mirrors[0].location == "m.io"


def test_load_files_drop_ins_and_explicit_list(tmp_path):
    main = tmp_path / "registries.conf"
    main.write_text(
        '[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\nlocation = "file-mirror.io"\n'
        '[[registry]]\nlocation = "ghcr.io"\n[[registry.mirror]]\nlocation = "gh-mirror.io"\n'
    )
    conf_d = tmp_path / "registries.conf.d"
    conf_d.mkdir()
    (conf_d / "10-ghcr.conf").write_text('[[registry]]\nlocation = "ghcr.io"\nblocked = true\n')
    (conf_d / "20-other.conf").write_text('[[registry]]\nlocation = "other.io"\ninsecure = true\n')
    (conf_d / "README").write_text("not toml at all [[[")

    ghcr = parse_image_ref("ghcr.io/a@" + DIGEST)
    quay = parse_image_ref("quay.io/a@" + DIGEST)

    conf = load_registries_conf(default_path=str(main), default_conf_d=str(conf_d))
    assert conf.files == [str(main), str(conf_d / "10-ghcr.conf"), str(conf_d / "20-other.conf")]
    with pytest.raises(RegistryBlockedError, match="10-ghcr.conf"):
        conf.pull_sources(ghcr)
    assert conf.pull_sources(parse_image_ref("other.io/a@" + DIGEST))[0].insecure

    # The explicit list overrides an entry with the same prefix and keeps the others.
    conf = load_registries_conf(
        default_path=str(main),
        default_conf_d=str(conf_d),
        mirrors=[
            {"prefix": "ghcr.io", "location": "ghcr.io"},
            {
                "prefix": "quay.io",
                "location": "quay.io",
                "mirrors": [{"location": "param-mirror.io", "insecure": True}],
            },
        ],
    )
    assert [str(s) for s in conf.pull_sources(ghcr)] == ["ghcr.io/a@" + DIGEST]
    assert [(str(s), s.insecure) for s in conf.pull_sources(quay)] == [
        ("param-mirror.io/a@" + DIGEST, True),
        ("quay.io/a@" + DIGEST, False),
    ]

    # An explicit path reads no default drop-ins.
    conf = load_registries_conf(str(main), default_conf_d=str(conf_d))
    assert conf.files == [str(main)]
    assert [str(s) for s in conf.pull_sources(ghcr)] == ["gh-mirror.io/a@" + DIGEST, "ghcr.io/a@" + DIGEST]


def test_load_defaults_absent(tmp_path):
    conf = load_registries_conf(default_path=str(tmp_path / "none"), default_conf_d=str(tmp_path / "none.d"))
    assert conf.files == [] and conf.registries == []
    ref = parse_image_ref("quay.io/a@" + DIGEST)
    assert [str(s) for s in conf.pull_sources(ref)] == [str(ref)]


def test_load_errors_name_the_file(bad_file):
    error = error_of(RegistriesConfError, load_registries_conf, str(bad_file.path), default_conf_d=None)
    assert str(bad_file.path) in error and bad_file.message in error


def test_missing_toml_library(monkeypatch):
    monkeypatch.setattr(_registries_conf, "toml_module", lambda: None)
    with pytest.raises(RegistriesConfError, match="tomli"):
        parse_registries_conf("", "registries.conf")
    # An explicit list alone needs no TOML library.
    assert load_registries_conf(default_path=None, default_conf_d=None, mirrors=[{"location": "q.io"}]).registries


def test_the_toml_reader_is_looked_up_when_used(monkeypatch):
    """A node's private directory (tomli for Python < 3.11) joins sys.path after the modules are imported."""
    monkeypatch.setitem(sys.modules, "tomllib", None)  # None in sys.modules: importing it raises ImportError
    monkeypatch.setitem(sys.modules, "tomli", None)
    assert toml_module() is None
    arrived = types.ModuleType("tomli")
    monkeypatch.setitem(sys.modules, "tomli", arrived)
    assert toml_module() is arrived


def b64(text):
    return base64.b64encode(text.encode()).decode()


# (auth keys, image, expected username per source in order; None = anonymous)
CREDENTIAL_CASES = [
    # Mirror's own key, then the image's own host as fallback.
    (["mirror.local:5000", "quay.io"], "quay.io/ns/app", ["mirror.local:5000", "quay.io", "quay.io"]),
    (["quay.io"], "quay.io/ns/app", ["quay.io", "quay.io", "quay.io"]),
    # The most specific key of the mirror location path.
    (
        ["mirror.local:5000/quay/ns", "mirror.local:5000", "backup.local/ns/app"],
        "quay.io/ns/app",
        ["mirror.local:5000/quay/ns", "backup.local/ns/app", None],
    ),
    # The image's own repository-path key is used for fallbacks too.
    (["quay.io/ns"], "quay.io/ns/app", ["quay.io/ns", "quay.io/ns", "quay.io/ns"]),
    ([], "quay.io/ns/app", [None, None, None]),
    (
        ["hub-mirror.local", "https://index.docker.io/v1/"],
        "busybox",
        ["hub-mirror.local", "https://index.docker.io/v1/"],
    ),
]


@pytest.mark.parametrize("keys, image, expected", CREDENTIAL_CASES)
def test_credentials_for_source(conf, keys, image, expected):
    # The username is the key's index, so keys may contain ':'.
    auth = parse_docker_config(json.dumps({"auths": {k: {"auth": b64(f"{i}:pw")} for i, k in enumerate(keys)}}), "a")
    ref = parse_image_ref(image + "@" + DIGEST)
    found = []
    for source in conf.pull_sources(ref):
        creds = credentials_for_source(auth, source, ref)
        found.append(keys[int(creds.username)] if creds else None)
    assert found == expected


@pytest.mark.parametrize(
    "text",
    [
        '[[registry]]\nlocation = "https://' + "x" * 1_000_000 + '"\n',
        '[[registry]]\nlocation = "quay.io"\ninsecure = [' + ", ".join(["1"] * 100_000) + "]\n",
    ],
)
def test_error_values_are_cut_short(text):
    with pytest.raises(RegistriesConfError) as info:
        parse_registries_conf(text, "x")
    assert len(str(info.value)) < 300


def test_a_nesting_bomb_and_a_50_mib_file_are_refused(tmp_path):
    with pytest.raises(RegistriesConfError, match="x: not valid TOML: nested too deeply"):
        parse_registries_conf("a = " + "[" * 100_000 + "]" * 100_000, "x")
    big = tmp_path / "registries.conf"
    with big.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    with pytest.raises(RegistriesConfError, match=f"registries file {big} is larger than 4194304 bytes"):
        load_registries_conf(big)
