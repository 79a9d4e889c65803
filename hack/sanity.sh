#!/usr/bin/env bash
# Runs ansible-test sanity on a copy of the tree laid out as ansible_collections/pinned/images.
# Arguments go to ansible-test (e.g. --test pep8). Expects hack/setup.sh to have run.
# SANITY_VENV=.build/venv-oldest-core runs the oldest supported ansible-core's ansible-test instead.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
venv=$(cd "${SANITY_VENV:-.venv}" && pwd)
export PATH="$venv/bin:$PATH"

sanity_root="$top/.build/sanity-$(basename "$venv")"
sanity="$sanity_root/ansible_collections/pinned/images"
rm -rf "$sanity_root"
mkdir -p "$sanity"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$sanity"

# ansible-test bootstraps pip in its sanity venvs with get-pip.py from a host this machine cannot reach.
pip_version=$(python -c 'import types; from ansible_test._internal.python_requirements import get_venv_packages as g; print(g(types.SimpleNamespace(version="3.11"))["pip"])')
mkdir -p ~/.ansible/test/cache
cp hack/get_pip_offline.py ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"

cd "$sanity"
git init -q && git add -A
# --python 3.11 unless the caller names another.
case " $* " in *" --python "*) python_args=() ;; *) python_args=(--python 3.11) ;; esac
exec ansible-test sanity --local "${python_args[@]}" --color no "$@"
