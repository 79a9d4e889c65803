# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The CRI-O ``pinned_images`` drop-in: validation, rendering and the node-side sync.

The text is byte-identical to what OpenShift's machine-config-operator writes to
``/etc/crio/crio.conf.d/50-pinned-images`` (its struct encoded with BurntSushi/toml's default encoder:
two-space indent per table level, no blank lines, a single-line array with ``", "`` separators, basic
strings, one trailing newline)::

    [crio]
      [crio.image]
        pinned_images = ["quay.io/a/b@sha256:<64 hex>", "registry.example.com/c@sha256:<64 hex>"]
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol, Tuple, Union

from ansible_collections.pinned.images.plugins.module_utils._common.config_file import toml_module
from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError
from ansible_collections.pinned.images.plugins.module_utils._common.image_ref import (
    ImageReferenceError,
    go_trim_space,
    parse_image_ref,
    unique_sorted_images,
)

__all__ = [
    "DEFAULT_PATH",
    "MAX_DROPIN_SIZE",
    "CheckPresence",
    "DropinSettings",
    "ImageStatusClient",
    "LazyStatusClient",
    "MissingImagesError",
    "NotReportedError",
    "OverriddenError",
    "PinnedImagesError",
    "ReloadError",
    "RunCommand",
    "check_overrides",
    "covers",
    "dropin_pinned_images",
    "effective_pins",
    "is_pattern",
    "missing_images",
    "pin_dropin",
    "reload_crio",
    "render_pinned_images",
    "same_content",
    "sync_pinned_images",
    "validate_pinned_images",
    "wait_reported",
]

DEFAULT_PATH = "/etc/crio/crio.conf.d/50-pinned-images"
# Characters an image reference or a CRI-O pattern body may hold.
_PATTERN_BODY_RE = re.compile(r"[A-Za-z0-9._:/@\[\]-]+")

# BurntSushi/toml's basic-string escapes (the MCO's encoder); validated input never needs them.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
# Any character _quote rewrites; most names have none and are quoted without a walk over their characters.
_NEEDS_ESCAPE_RE = re.compile(r'["\\\x00-\x1f\x7f]')

# ``run_command(argv) -> (rc, stdout, stderr)``, as AnsibleModule.run_command.
RunCommand = Callable[[List[str]], Tuple[int, str, str]]
# ``check_presence(images) -> the missing ones``.
CheckPresence = Callable[[List[str]], List[str]]


class ImageStatusClient(Protocol):
    """What the presence check needs of a runtime client: ``CriClient.image_status`` (None when absent)."""

    def image_status(self, image: str) -> Optional[Mapping[str, object]]: ...


class PinnedImagesError(CollectionError):
    """Bad pinned_images entries; ``problems`` lists each."""


def _quote(value: str) -> str:
    if _NEEDS_ESCAPE_RE.search(value) is None:
        return '"' + value + '"'
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render_pinned_images(images: Iterable[object]) -> str:
    """The drop-in text, exactly as the machine-config-operator encodes it, for an already validated list (kept in
    the given order)."""
    given = list(images)
    names = [name for name in given if isinstance(name, str)]
    if len(names) != len(given):
        raise PinnedImagesError("every pinned image must be a string")
    text = "[crio]\n  [crio.image]\n"
    if names:  # the MCO's field is omitempty
        text += "    pinned_images = [" + ", ".join(_quote(name) for name in names) + "]\n"
    return text


def _describe(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text if len(text) <= 100 else text[:97] + "...")


def _check_entry(value: object, require_digest: bool) -> Optional[str]:
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not value.strip():
        return None  # blank entries are dropped, as the MCO does
    if value != value.strip() or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return f"{_describe(value)} contains whitespace or control characters"
    if "*" in value:
        if require_digest:
            return f"{_describe(value)} is a pattern; patterns are allowed only with require_digest=false"
        if value.startswith("*") and value.endswith("*") and len(value) > 2:
            body, kind = value[1:-1], "keyword pattern"
        elif value.endswith("*") and len(value) > 1:
            body, kind = value[:-1], "glob pattern"
        else:
            return (
                f"{_describe(value)} is not a CRI-O pattern: use a glob with one trailing '*' (quay.io/foo/*) "
                "or a keyword between two '*' (*bar*)"
            )
        if "*" in body or not _PATTERN_BODY_RE.fullmatch(body):
            return f"{_describe(value)} is not a valid {kind}: only one wildcard at the end (glob) or at both ends (keyword)"
        return None
    try:
        ref = parse_image_ref(value, require_digest=require_digest)
    except ImageReferenceError as exc:
        return str(exc)
    canonical = str(ref)
    if value != canonical:
        # CRI-O compares pinned_images with the fully qualified name (registry written out, Docker Hub's official
        # images under library/); any other spelling would pin nothing.
        return (
            f"{_describe(value)} is not fully qualified; CRI-O matches pinned_images against fully "
            f"qualified names, so write {canonical!r}"
        )
    return None


def validate_pinned_images(images: object, require_digest: bool = True) -> List[str]:
    """Check every entry (all problems in one PinnedImagesError); return the blank-free, unique, sorted list (the
    MCO's).

    Digest references written fully qualified, exactly as CRI-O matches them (registry host written out,
    ``docker.io/library/...`` for Docker Hub's official images); with ``require_digest=False`` also tag references
    and CRI-O's glob (``quay.io/foo/*``) and keyword (``*bar*``) patterns.
    """
    if images is None:
        images = []
    if not isinstance(images, (list, tuple)):
        raise PinnedImagesError(f"pinned images must be a list, got {type(images).__name__}")
    problems = []
    for index, value in enumerate(images):
        problem = _check_entry(value, require_digest)
        if problem:
            problems.append(f"images[{index}]: {problem}")
    if problems:
        raise PinnedImagesError(problems)
    return unique_sorted_images(images)


def same_content(old: Union[str, bytes, None], new: Union[str, bytes]) -> bool:
    """The MCO rewrites the file only when ``bytes.Equal(bytes.TrimSpace(old), bytes.TrimSpace(new))`` is false (Go's
    TrimSpace trims U+0085 and U+00A0 too, but not U+001C..U+001F)."""
    if old is None:
        return False
    texts = []
    for value in (old, new):
        # surrogateescape keeps invalid UTF-8 as it is; Go's TrimSpace stops at such bytes too.
        texts.append(value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value)
    return go_trim_space(texts[0]) == go_trim_space(texts[1])


# --------------------------------------------------------------------------- node-side state


class MissingImagesError(PinnedImagesError):
    """Images that are not present in the runtime; ``missing`` lists them."""

    def __init__(self, missing: Iterable[str]) -> None:
        self.missing = list(missing)
        super().__init__(
            [f"{name} is not present in the container runtime" for name in self.missing],
            message=f"refusing to pin {len(self.missing)} image(s) that are not present in the container runtime "
            "(prefetch them first, or set force=true): " + ", ".join(self.missing),
            details={"missing": self.missing},
        )


class ReloadError(CollectionError):
    """CRI-O could not be told to reload its configuration; ``result`` is the sync result when the file was written
    (its ``changed``, ``path`` and ``images`` are then in the details too, for the module's failure result)."""

    def __init__(self, message: str, result: Optional[Mapping[str, Any]] = None) -> None:
        details = {key: result[key] for key in ("changed", "path", "images") if key in result} if result else {}
        super().__init__(message, details=details)
        self.result = result


def is_pattern(name: str) -> bool:
    """True for CRI-O glob/keyword patterns, which name no single image."""
    return "*" in name


def missing_images(client: ImageStatusClient, images: Iterable[str]) -> List[str]:
    """The images ``client.image_status`` reports absent (patterns are skipped)."""
    return [name for name in images if not is_pattern(name) and client.image_status(name) is None]


class NotReportedError(CollectionError):
    """The pins are written but CRI did not report the images as wanted in time; its details say what changed."""


def _reported_pinned(client: ImageStatusClient, name: str) -> Optional[bool]:
    status = client.image_status(name)
    return bool(status.get("pinned", False)) if status else None


def wait_reported(
    client: ImageStatusClient,
    expected: Mapping[str, bool],
    timeout: float,
    what: str = "the pins are written",
    interval: float = 0.1,
    first: Optional[Mapping[str, Optional[bool]]] = None,
) -> Dict[str, Optional[bool]]:
    """Poll CRI ImageStatus until every image name in ``expected`` reports that ``pinned`` value; return what CRI
    reports per image (None: the image is absent). ``first`` is a first reading the caller made already.

    The runtime applies a change after the call that made it returns (containerd from its event stream, CRI-O
    after SIGHUP). Raises NotReportedError naming the images still off after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    first = first or {}
    reported = {name: first[name] if name in first else _reported_pinned(client, name) for name in expected}
    while True:
        pending = {name: want for name, want in expected.items() if bool(reported[name]) != want}
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(interval)
        reported.update((name, _reported_pinned(client, name)) for name in pending)
    if pending:
        raise NotReportedError(
            f"{what}, but after {timeout:g}s CRI still reports "
            + ", ".join(f"{name} as {'not ' if want else ''}pinned" for name, want in sorted(pending.items())),
            details={"cri_pinned": reported},
        )
    return reported


# A drop-in larger than this is not a CRI-O drop-in; read no more of it.
MAX_DROPIN_SIZE = 1024 * 1024
# Without a TOML reader (Python < 3.11 without tomli): the key and the strings of its array.
_KEY_RE = re.compile(r"^[ \t]*pinned_images[ \t]*=[ \t]*\[(.*?)\]", re.MULTILINE | re.DOTALL)
_STRING_RE = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'')


class OverriddenError(CollectionError):
    """A drop-in CRI-O reads after ours sets ``pinned_images``, which replaces ours; ``files`` names them."""

    def __init__(self, message: str, files: List[str]) -> None:
        super().__init__(message, details={"overridden_by": files})
        self.files = files


def dropin_pinned_images(text: str) -> Optional[List[str]]:
    """The ``[crio.image] pinned_images`` a drop-in sets, None when it sets none (or is not TOML CRI-O could read:
    CRI-O then refuses to reload, which the CRI read-back shows)."""
    toml = toml_module()
    if toml is not None:
        try:
            images = toml.loads(text).get("crio", {}).get("image", {}).get("pinned_images")
        except (toml.TOMLDecodeError, AttributeError, RecursionError):
            return None
        return [str(name) for name in images] if isinstance(images, list) else None
    match = _KEY_RE.search(text)
    if match is None:
        return None
    return [double if double or not single else single for double, single in _STRING_RE.findall(match.group(1))]


def _read_dropin(path: str) -> Optional[List[str]]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_DROPIN_SIZE)
    except OSError:
        return None
    return dropin_pinned_images(data.decode("utf-8", "replace"))


def effective_pins(path: str, images: List[str]) -> Tuple[List[str], Optional[str]]:
    """(the pinned_images CRI-O keeps once ``path`` holds ``images`` (empty: ``path`` absent), the file it comes
    from, None when no drop-in sets it). CRI-O reads every file of the directory in name order; the last that sets
    ``pinned_images`` wins."""
    directory, own = os.path.split(path)
    try:
        names = sorted(os.listdir(directory or "."))
    except OSError:
        names = []
    found: Tuple[List[str], Optional[str]] = ([], None)
    for name in sorted(set(names) | {own}):
        full = os.path.join(directory, name)
        if name == own:
            listed: Optional[List[str]] = images or None
        elif name.startswith(".") or not os.path.isfile(full):
            continue  # our own atomic writes' temporary files start with a dot
        else:
            listed = _read_dropin(full)
        if listed is not None:
            found = (listed, full)
    return found


def covers(patterns: Iterable[str], name: str) -> bool:
    """True when CRI-O's ``pinned_images`` ``patterns`` pin the image ``name``: exact, glob (``quay.io/a/*``, a
    prefix) or keyword (``*bar*``, a substring)."""
    for pattern in patterns:
        if pattern.startswith("*") and pattern.endswith("*") and len(pattern) > 1:
            if pattern.strip("*") in name:
                return True
        elif pattern.endswith("*"):
            if name.startswith(pattern[:-1]):
                return True
        elif pattern == name:
            return True
    return False


def check_overrides(path: str, images: List[str]) -> Tuple[List[str], List[str]]:
    """(the list CRI-O will keep, warnings) for ``path`` holding ``images``; OverriddenError when a later drop-in
    sets ``pinned_images`` without some of ``images``: CRI-O would pin none of those."""
    kept, source = effective_pins(path, images)
    if not images or source == path or source is None:
        return kept, []
    lost = [name for name in images if not is_pattern(name) and not covers(kept, name)]
    what = f"CRI-O reads {source} after {path}, and its pinned_images ({len(kept)} entries) replaces the whole list"
    if lost:
        raise OverriddenError(
            f"{what}: {len(lost)} of the {len(images)} images would not be pinned ({', '.join(lost)}); remove "
            f"pinned_images from {source}, or put these images in it",
            [source],
        )
    return kept, [f"{what}; it pins every image of {path} too, so they stay pinned while it does"]


class LazyStatusClient:
    """An ImageStatusClient that opens the runtime (``open_client()``, a context manager such as a CriClient) on its
    first call only, so that a run that needs no CRI call never connects; ``close()`` closes it."""

    def __init__(self, open_client: Callable[[], Any]) -> None:
        self._open = open_client
        self._client: Any = None

    def image_status(self, image: str) -> Optional[Mapping[str, object]]:
        if self._client is None:
            self._client = self._open().__enter__()
        status: Optional[Mapping[str, object]] = self._client.image_status(image)
        return status

    def close(self) -> None:
        if self._client is not None:
            self._client.__exit__(None, None, None)
            self._client = None


def reload_crio(
    method: str, run_command: Optional[RunCommand] = None, pid_file: Optional[str] = None, service: str = "crio"
) -> None:
    """``systemd``: ``systemctl reload <service>`` through ``run_command(argv) -> (rc, out, err)``;
    ``signal``: SIGHUP to the pid in ``pid_file``; ``none``: nothing."""
    import os
    import signal

    if method == "none":
        return
    if method == "systemd":
        if run_command is None:
            raise ReloadError("no way to run systemctl was given")
        rc, out, err = run_command(["systemctl", "reload", service])
        if rc != 0:
            detail = (err or out or "").strip()
            raise ReloadError(f"systemctl reload {service} failed (rc={rc}): {detail}")
        return
    if method == "signal":
        if not pid_file:
            raise ReloadError("reload=signal needs pid_file")
        try:
            with open(pid_file, encoding="ascii") as handle:
                text = handle.read().strip()
        except OSError as exc:
            raise ReloadError(f"cannot read the CRI-O pid from {pid_file}: {exc.strerror or exc}") from exc
        if not text.isdigit() or int(text) <= 1:
            raise ReloadError(f"{pid_file} does not hold a process id: {text[:40]!r}")
        try:
            os.kill(int(text), signal.SIGHUP)
        except OSError as exc:
            raise ReloadError(
                f"cannot send SIGHUP to CRI-O (pid {text} from {pid_file}): {exc.strerror or exc}"
            ) from exc
        return
    raise ReloadError(f"unknown reload method {method!r}; use none, systemd or signal")


def sync_pinned_images(
    path: str,
    images: Optional[Iterable[str]],
    state: str = "present",
    check_mode: bool = False,
    force: bool = False,
    check_presence: Optional[CheckPresence] = None,
    reload: str = "none",
    run_command: Optional[RunCommand] = None,
    pid_file: Optional[str] = None,
    client: Optional[ImageStatusClient] = None,
    settle_timeout: float = 10.0,
    known: Optional[Mapping[str, Mapping[str, Any]]] = None,
) -> Dict[str, Any]:
    """Bring the drop-in at ``path`` to ``images`` (already validated and sorted), as the MCO does, and prove it.

    Present with images: first the other drop-ins of the directory, in CRI-O's order: one read after ``path`` that
    sets ``pinned_images`` without these images fails the step (OverriddenError, in check mode too, nothing
    written). Render; when the file would change and ``force`` is false, ``check_presence(images)`` must return
    no missing image (MissingImagesError otherwise, nothing written); write atomically, rewriting only when the
    text differs beyond surrounding whitespace. Absent, or no images: remove the file.
    Reload only when the content changed (not in check mode). Then, with a ``client`` and a reload method, CRI
    must report every present wanted image pinned and every image the file no longer lists (and no other
    drop-in pins) not pinned: waited for up to ``settle_timeout`` seconds after a reload, read once on a rerun
    (NotReportedError otherwise). A rerun whose file is as wanted but whose CRI disagrees reloads once, then
    waits the same way: a failed reload heals on the next run. Returns ``{changed, path, images, reloaded, diff, cri_pinned, warnings}``;
    ``cri_pinned`` maps each image to what CRI reports (None: not on the node), empty without a client; ``known``
    holds CRI images a caller read already (the prefetch's present check), not asked again unless waited for.
    """
    from ansible_collections.pinned.images.plugins.module_utils._common.atomic_file import (
        atomic_write,
        compare_limit,
        read_bytes,
        remove_file,
    )

    names = list(images or [])
    previous = _read_dropin(path) or []
    warnings: List[str] = []
    if state == "absent" or not names:
        outcome = remove_file(path, check_mode=check_mode)
        content_changed = outcome["changed"]
        names = []
        kept, _source = effective_pins(path, [])
    else:
        kept, warnings = check_overrides(path, names)
        content = render_pinned_images(names)
        before = read_bytes(path, compare_limit(content))
        content_changed = not same_content(before, content)
        if content_changed and not force and check_presence is not None:
            missing = check_presence(names)
            if missing:
                raise MissingImagesError(missing)
        outcome = atomic_write(path, content, mode=0o644, check_mode=check_mode, same=same_content)
    result: Dict[str, Any] = {
        "changed": outcome["changed"],
        "path": path,
        "images": names,
        "reloaded": False,
        "diff": outcome["diff"],
        "cri_pinned": {},
        "warnings": warnings,
    }
    if content_changed and not check_mode and reload != "none":
        try:
            reload_crio(reload, run_command=run_command, pid_file=pid_file)
        except ReloadError as exc:
            raise ReloadError(f"{path} was written, but CRI-O was not reloaded: {exc.message}", result=result) from exc
        result["reloaded"] = True
    if client is not None:
        result["cri_pinned"] = _read_back(
            client,
            path,
            (names, previous, kept),
            result,
            {"method": reload, "run_command": run_command, "pid_file": pid_file},
            settle_timeout,
            check_mode,
            known or {},
        )
    return result


def _read_back(
    client: ImageStatusClient,
    path: str,
    lists: Tuple[List[str], List[str], List[str]],
    result: Dict[str, Any],
    reload_with: Mapping[str, Any],
    settle_timeout: float,
    check_mode: bool,
    known: Mapping[str, Mapping[str, Any]],
) -> Dict[str, Optional[bool]]:
    """What CRI reports for the wanted and the removed images (``lists``: the file's new and previous images, the
    list CRI-O keeps). With a reload method, not in check mode, NotReportedError when that is not what the drop-ins
    say (waited for after a reload). A file already as wanted that CRI-O does not apply (an earlier reload failed,
    or CRI-O runs an older configuration) is reloaded once first: ``changed`` (in check mode too) and ``reloaded``
    say so, a warning names the images."""
    names, previous, kept = lists
    wanted = [name for name in names if not is_pattern(name)]
    removed = [name for name in previous if not is_pattern(name) and name not in names]
    statuses = {
        name: bool(known[name].get("pinned"))
        if name in known and not result["reloaded"]
        else _reported_pinned(client, name)
        for name in wanted + removed
    }
    present = {name: status for name, status in statuses.items() if status is not None}
    expected = {name: covers(kept, name) for name in present}
    if reload_with["method"] == "none":
        return statuses
    stale = sorted(name for name, want in expected.items() if bool(statuses[name]) != want)
    healed = bool(stale) and not result["reloaded"]
    if healed:
        result["changed"] = True
        if check_mode:
            return statuses
        try:
            reload_crio(**reload_with)
        except ReloadError as exc:
            raise ReloadError(
                f"{path} is as wanted but CRI-O does not apply it, and it was not reloaded: {exc.message}",
                result=dict(result, changed=False),
            ) from exc
        result["reloaded"] = True
        result["warnings"].append(
            f"{path} was as wanted but CRI-O did not apply it (CRI reported "
            + ", ".join(f"{name} as {'not ' if expected[name] else ''}pinned" for name in stale)
            + "): CRI-O reloaded"
        )
    elif check_mode:
        return statuses
    if result["reloaded"]:
        what = f"{path} is {'as wanted' if healed else 'written'} and CRI-O reloaded"
    else:
        what = f"{path} is as wanted (CRI-O not reloaded: nothing changed)"
    try:
        statuses.update(
            wait_reported(
                client,
                expected,
                settle_timeout if result["reloaded"] else 0,
                what,
                # Read again after the reload that healed: the first reading is what CRI-O had before.
                first={} if healed else statuses,
            )
        )
    except NotReportedError as exc:
        fields = {key: result[key] for key in ("changed", "path", "images", "reloaded")}
        raise NotReportedError(
            exc.message + "; CRI-O did not apply the drop-in (see its log, and the other files of "
            f"{os.path.dirname(path) or '.'})",
            details=dict(exc.details, **fields),
        ) from exc
    return statuses


# --------------------------------------------------------------------------- the pinning step of the modules


@dataclass(frozen=True)
class DropinSettings:
    """Where the drop-in goes and how CRI-O is told to read it (the options of ``reload_crio``)."""

    path: str = DEFAULT_PATH
    reload: str = "none"
    pid_file: Optional[str] = None
    force: bool = False
    settle_timeout: float = 10.0


def pin_dropin(
    images: List[str],
    settings: DropinSettings,
    check_mode: bool,
    check_presence: Optional[CheckPresence],
    run_command: Optional[RunCommand],
    state: str = "present",
    client: Optional[ImageStatusClient] = None,
    known: Optional[Mapping[str, Mapping[str, Any]]] = None,
) -> Dict[str, Any]:
    """``sync_pinned_images`` for ``crio_pinned_images`` and the prefetch's pin, its CRI read-back through
    ``client``: the same result; a CRI error is raised as a CollectionError that says so (its details kept)."""
    # Here, not at the top: the drop-in's rendering (machine_config, on the controller) must not import grpc.
    from ansible_collections.pinned.images.plugins.module_utils._cri.client import CriError

    try:
        return sync_pinned_images(
            settings.path,
            images,
            state=state,
            check_mode=check_mode,
            force=settings.force,
            check_presence=check_presence,
            reload=settings.reload,
            run_command=run_command,
            pid_file=settings.pid_file,
            client=client,
            settle_timeout=settings.settle_timeout,
            known=known,
        )
    except CriError as exc:
        raise CollectionError(
            exc.problems, message="cannot read the images' state through CRI: " + exc.message, details=exc.details
        ) from exc
