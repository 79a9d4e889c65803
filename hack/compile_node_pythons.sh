#!/usr/bin/env bash
# ansible-test's compile test on every node Python the collection supports (3.8 to 3.13) that this machine has:
# modules and module_utils run on the nodes' own interpreters (RHCOS 9 has 3.9). The interpreters are found by
# tests/support/pythons.py (PATH, pyenv's root, $PINNED_IMAGES_TEST_PYXY), the finder the tests use too. 3.11 is
# the controller's: the sanity stage compiles on it. With CI set, a missing interpreter fails the check; elsewhere
# it is reported and passed over.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

status=0
found=$(python3 tests/support/pythons.py ${CI:+--strict} 3.8 3.9 3.10 3.12 3.13) || status=$?
while read -r version python; do
  [ -n "$version" ] || continue
  echo "compile on $python"
  # ansible-test --local looks the interpreter up as pythonX.Y on PATH.
  PATH="$(dirname "$python"):$PATH" bash hack/sanity.sh --test compile --python "$version"
done <<<"$found"
exit "$status"
