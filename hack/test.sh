#!/usr/bin/env bash
# The project's test command: installs what it needs, checks the programs the tests run, then runs ansible-test
# sanity (newest and oldest supported ansible-core), ansible-lint, the release checks on the built tarball, molecule,
# the unit tests on the oldest ansible-core, and pytest (unit and functional tests against the lab pytest starts).
# Usage: hack/test.sh [pytest args...]
#   SKIP_SANITY=1 / SKIP_LINT=1 / SKIP_RUFF=1 / SKIP_MYPY=1 / SKIP_RELEASE=1 / SKIP_MOLECULE=1 / SKIP_OLDEST=1 shorten local
#   iterations.
# Each stage prints one line; its output goes to .build/logs/<stage>.log and is shown only when the stage fails.
# With CI set, a skipped pytest test fails the run: CI always has the upstream reference files.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
logs=$top/.build/logs
mkdir -p "$logs"

# stage NAME COMMAND...: runs COMMAND with its output in the stage's log; on failure prints the log's end and exits.
stage() {
  local name=$1 log="$logs/$1.log" started=$SECONDS
  shift
  printf '== %-28s ' "$name"
  if "$@" >"$log" 2>&1; then
    echo "ok ($((SECONDS - started)) s)"
  else
    local rc=$?
    echo "FAILED (rc $rc, $((SECONDS - started)) s); last lines of $log:"
    tail -n 60 "$log" | sed 's/^/   | /'
    exit "$rc"
  fi
}

stage setup bash hack/setup.sh
stage programs bash hack/check_programs.sh
export PATH="$top/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$top/.build/collections"

if [ -z "${SKIP_SANITY:-}" ]; then
  stage sanity bash hack/sanity.sh
  [ -n "${SKIP_OLDEST:-}" ] ||
    stage sanity-oldest-core env SANITY_VENV=.build/venv-oldest-core bash hack/sanity.sh --test import --test compile
  stage compile-node-pythons bash hack/compile_node_pythons.sh
fi
# ansible-lint installs the collection it lints into $ANSIBLE_HOME/collections (default ~/.ansible): a copy there would
# outlive the run and shadow the tree in later ones.
[ -n "${SKIP_LINT:-}" ] || stage ansible-lint env ANSIBLE_HOME="$top/.build/ansible-lint-home" ansible-lint --profile production
# Lint and formatting of the Python tree (ruff.toml); ruff format --check changes nothing, it names what differs.
if [ -z "${SKIP_RUFF:-}" ]; then
  stage ruff-check ruff check .
  stage ruff-format ruff format --check .
fi
# Type check of plugins/module_utils (flags in mypy.ini); MYPYPATH makes the tree importable as the collection.
[ -n "${SKIP_MYPY:-}" ] || stage mypy env MYPYPATH="$top/.build/collections" mypy --config-file mypy.ini
[ -n "${SKIP_RELEASE:-}" ] || stage release-checks bash hack/release_checks.sh
if [ -z "${SKIP_MOLECULE:-}" ]; then
  for role in node cluster; do
    stage "molecule-$role" bash -c "cd roles/$role && molecule test"
  done
fi
[ -n "${SKIP_OLDEST:-}" ] ||
  stage unit-oldest-core .build/venv-oldest-core/bin/pytest tests/unit -q -p no:cacheprovider

echo "== pytest"
if [ -n "${CI:-}" ]; then
  export PINNED_IMAGES_FORBID_SKIPS=1
fi
pytest "$@"
