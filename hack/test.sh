#!/usr/bin/env bash
# The project's test command: installs what it needs, then runs ansible-test sanity, ansible-lint and pytest
# (unit tests, and functional tests against the lab that pytest starts itself).
# Usage: hack/test.sh [pytest args...]   (SKIP_SANITY=1 / SKIP_LINT=1 to iterate faster locally)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

bash hack/setup.sh
export PATH="$top/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$top/.build/collections"

if [ -z "${SKIP_SANITY:-}" ]; then
  echo "== ansible-test sanity"
  # ansible-test wants the collection at .../ansible_collections/pinned/images; a copy keeps the tree clean.
  sanity="$top/.build/sanity/ansible_collections/pinned/images"
  rm -rf "$top/.build/sanity"
  mkdir -p "$sanity"
  git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$sanity"
  # ansible-test bootstraps pip in its sanity venvs with get-pip.py from a host this machine cannot reach.
  pip_version=$(python -c 'import types; from ansible_test._internal.python_requirements import get_venv_packages as g; print(g(types.SimpleNamespace(version="3.11"))["pip"])')
  mkdir -p ~/.ansible/test/cache
  cp hack/get_pip_offline.py ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
  (cd "$sanity" && git init -q && git add -A && ansible-test sanity --local --python 3.11 --color no)
fi

if [ -z "${SKIP_LINT:-}" ]; then
  echo "== ansible-lint (production profile)"
  ansible-lint --profile production
fi

echo "== pytest"
pytest "$@"
