# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one ending of every module: a run returns an ``Outcome``, ``end_module`` reports it.

A module's ``main()`` is its argument spec and ``end_module(module, run)``. ``run(invocation)`` reads
``invocation.params`` (the only reader of them), does the work and returns an ``Outcome``: the result, the warnings
to give, the secrets to hide (they join ``no_log_values`` before anything is printed) and the failure, a
CollectionError, or None. A CollectionError the run raises is a failure without result fields. ``end_module`` drops
the result's ``diff`` unless diff mode is on, and fails with the failure's message, problems and details over the
result's fields (the details win, so no field is given twice), or exits with the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, NoReturn, Optional, Sequence, Tuple

from ansible_collections.pinned.images.plugins.module_utils._common.errors import CollectionError

__all__ = ["Invocation", "Outcome", "end_module", "hiding", "report"]


@dataclass(frozen=True)
class Outcome:
    """What a run reports: its result, warnings, secrets (for no_log) and failure (None when it succeeded)."""

    result: Mapping[str, Any] = field(default_factory=dict)
    warnings: Sequence[str] = ()
    secrets: FrozenSet[str] = frozenset()
    failure: Optional[CollectionError] = None


class Invocation:
    """What a run may take from its module: the parameters, check and diff mode, a temporary directory and
    ``run_command``; nothing else of the module reaches a run."""

    def __init__(self, module: Any) -> None:
        self._module = module

    @property
    def params(self) -> Mapping[str, Any]:
        """The module's parameters, as the argument spec checked them."""
        return self._module.params  # type: ignore[no-any-return]

    @property
    def check_mode(self) -> bool:
        """Whether the run only reports what it would change."""
        return bool(self._module.check_mode)

    @property
    def diff(self) -> bool:
        """Whether the task asked for a diff."""
        return bool(self._module._diff)  # pylint: disable=protected-access

    @property
    def tmpdir(self) -> str:
        """The module's temporary directory (made on first use, removed when the module ends)."""
        return str(self._module.tmpdir)

    def run_command(self, argv: List[str]) -> Tuple[int, str, str]:
        """``run_command`` for ``reload_crio``. A program not on the PATH is a failed command (rc 127, as a shell
        says, naming it) rather than ``fail_json``, so that the ReloadError's failure result still tells what was
        written."""
        program = self._module.get_bin_path(argv[0])
        if program is None:
            return 127, "", f"{argv[0]} is not on the PATH"
        rc, out, err = self._module.run_command([program] + list(argv[1:]))
        return rc, out, err


def report(module: Any, outcome: Outcome) -> NoReturn:
    """Hide the secrets, give the warnings and exit or fail with the outcome (see the module docstring)."""
    module.no_log_values.update(outcome.secrets)
    for warning in outcome.warnings:
        module.warn(warning)
    result: Dict[str, Any] = dict(outcome.result)
    if not module._diff:  # pylint: disable=protected-access
        result.pop("diff", None)
    failure = outcome.failure
    if failure is not None:
        result.update(failure.details)
        result.update(msg=failure.message, problems=failure.problems)
        module.fail_json(**result)
    else:
        module.exit_json(**result)
    raise AssertionError("exit_json returned")  # pragma: no cover - AnsibleModule.exit_json exits


def end_module(module: Any, run: Callable[[Invocation], Outcome]) -> NoReturn:
    """The whole tail of a module's ``main()``: run, then report the outcome."""
    try:
        outcome = run(Invocation(module))
    except CollectionError as error:
        outcome = Outcome(failure=error)
    report(module, outcome)


def hiding(secrets: Iterable[str], work: Callable[[], Outcome]) -> Outcome:
    """``work()``'s outcome, or its CollectionError as the failure, with ``secrets`` to hide in either."""
    hidden = frozenset(secrets)
    try:
        outcome = work()
    except CollectionError as error:
        return Outcome(secrets=hidden, failure=error)
    return replace(outcome, secrets=outcome.secrets | hidden)
