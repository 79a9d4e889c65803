#!/usr/bin/env bash
# ansible-test's compile test on every node Python the collection supports (3.8 to 3.13) that this machine has:
# modules and module_utils run on the nodes' own interpreters (RHCOS 9 has 3.9). Interpreters are found on PATH or
# under pyenv's root. With CI set, a missing interpreter fails the check; elsewhere it is reported and passed over.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

find_python() {
  local version=$1 candidate
  for candidate in "$(command -v "python$version" || true)" "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/"$version".*/bin/"python$version"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c pass 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
}

missing=()
for version in 3.8 3.9 3.10 3.12 3.13; do
  python=$(find_python "$version")
  if [ -z "$python" ]; then
    missing+=("$version")
    continue
  fi
  echo "compile on $python"
  # ansible-test --local looks the interpreter up as pythonX.Y on PATH.
  PATH="$(dirname "$python"):$PATH" bash hack/sanity.sh --test compile --python "$version"
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "no interpreter found for Python ${missing[*]}: the compile check did not run on it"
  [ -z "${CI:-}" ] || exit 1
fi
