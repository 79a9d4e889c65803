#!/usr/bin/env bash
# What a user and Galaxy get: builds the tarball, installs it into an empty collections path, and checks that copy
# with galaxy-importer (no warnings), antsibull-docs, ansible-doc (every module and role), antsibull-changelog and
# ansible-builder. Expects hack/setup.sh to have run. Prints the tarball's size and file count.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH="$top/.venv/bin:$PATH"

out=$top/.build/release
rm -rf "$out"
mkdir -p "$out/dist" "$out/installed"

ansible-galaxy collection build --force --output-path "$out/dist" .
tarball=$(echo "$out"/dist/pinned-images-*.tar.gz)
echo "tarball: $(basename "$tarball"), $(stat -c %s "$tarball") bytes, $(tar tzf "$tarball" | grep -vc '/$') files"
# galaxy.yml's dependency kubernetes.core: the copy hack/setup.sh installed (Galaxy is not reached), so that the
# offline install below resolves it as a user's would.
mkdir -p "$out/installed/ansible_collections/kubernetes"
cp -a .build/collections/ansible_collections/kubernetes/core "$out/installed/ansible_collections/kubernetes/core"
ANSIBLE_COLLECTIONS_PATH=$out/installed ansible-galaxy collection install --offline --force -p "$out/installed" "$tarball"
installed=$out/installed/ansible_collections/pinned/images

echo "== galaxy-importer"
# The importer's own ansible-test run needs a container engine; everything else it checks runs here.
printf '[galaxy-importer]\nRUN_ANSIBLE_TEST = False\nRUN_ANSIBLE_LINT = True\n' > "$out/importer.cfg"
# Its ansible-lint looks for the collection (stage_release.yml imports pinned.images.prefetch) under
# ~/.ansible/collections and refreshes a copy it finds there: a HOME of its own, holding the installed copy, keeps
# the user's ~/.ansible out of it.
rm -rf "${out:?}/home" && mkdir -p "$out/home/.ansible" && ln -s "$out/installed" "$out/home/.ansible/collections"
(cd "$out" && HOME=$out/home GALAXY_IMPORTER_CONFIG=$out/importer.cfg \
  python -m galaxy_importer.main "$tarball" \
  > "$out/importer.log" 2>&1) || { cat "$out/importer.log"; exit 1; }
cat "$out/importer.log"
if grep -E '(WARNING|ERROR)' "$out/importer.log"; then
  echo "galaxy-importer reported the lines above" >&2
  exit 1
fi

echo "== antsibull-docs lint-collection-docs"
# The installed path holds the dependency kubernetes.core too, which antsibull-docs loads with the collection.
ANSIBLE_COLLECTIONS_PATH=$out/installed antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck "$installed"

echo "== ansible-doc from the installed copy"
export ANSIBLE_COLLECTIONS_PATH=$out/installed
for module in "$installed"/plugins/modules/*.py; do
  name=pinned.images.$(basename "$module" .py)
  ansible-doc "$name" >/dev/null
  ansible-doc --json "$name" | python -c 'import json,sys; d=json.load(sys.stdin); assert all(v["doc"] for v in d.values())'
done
for role in "$installed"/roles/*/; do
  ansible-doc -t role "pinned.images.$(basename "$role")" >/dev/null
done
echo "documented: $(find "$installed"/plugins/modules -name "*.py" | wc -l) modules, $(find "$installed"/roles -mindepth 1 -maxdepth 1 -type d | wc -l) roles"
unset ANSIBLE_COLLECTIONS_PATH

echo "== antsibull-changelog lint"
antsibull-changelog lint

echo "== ansible-builder create"
# The root definition takes the tarball from build/ (see its header); it is built in a copy so build/ stays as it was.
mkdir -p "$out/ee/build"
cp execution-environment.yml "$out/ee/"
cp "$tarball" "$out/ee/build/"
(cd "$out/ee" && ansible-builder create --file execution-environment.yml --context context --output-filename Containerfile)
grep -q 'ansible-doc -l pinned.images' "$out/ee/context/Containerfile"
