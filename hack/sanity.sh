#!/usr/bin/env bash
# Runs ansible-test sanity on a copy of the tree laid out as ansible_collections/pinned/images.
# Arguments go to ansible-test (e.g. --test pep8). Expects hack/setup.sh to have run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH="$top/.venv/bin:$PATH"

sanity="$top/.build/sanity/ansible_collections/pinned/images"
rm -rf "$top/.build/sanity"
mkdir -p "$sanity"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$sanity"

# ansible-test bootstraps pip in its sanity venvs with get-pip.py from a host this machine cannot reach.
pip_version=$(python -c 'import types; from ansible_test._internal.python_requirements import get_venv_packages as g; print(g(types.SimpleNamespace(version="3.11"))["pip"])')
mkdir -p ~/.ansible/test/cache
cp hack/get_pip_offline.py ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"

cd "$sanity"
git init -q && git add -A
exec ansible-test sanity --local --python 3.11 --color no "$@"
