#!/usr/bin/env bash
# The project's test command: installs what it needs, then runs ansible-test sanity, ansible-lint and pytest
# (unit tests, and functional tests against the lab that pytest starts itself).
# Usage: hack/test.sh [pytest args...]   (SKIP_SANITY=1 / SKIP_LINT=1 / SKIP_MOLECULE=1 to iterate faster locally)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

bash hack/setup.sh
export PATH="$top/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$top/.build/collections"

if [ -z "${SKIP_SANITY:-}" ]; then
  echo "== ansible-test sanity"
  bash hack/sanity.sh
fi

if [ -z "${SKIP_LINT:-}" ]; then
  echo "== ansible-lint (production profile)"
  ansible-lint --profile production
fi

if [ -z "${SKIP_MOLECULE:-}" ]; then
  echo "== molecule (roles/node, roles/cluster: default scenarios against lab nodes)"
  for role in node cluster; do (cd "roles/$role" && molecule test); done
fi

echo "== pytest"
pytest "$@"
