#!/usr/bin/env bash
# Prepares a fresh machine: Debian packages for the lab, and the project's virtual environment in .venv.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
OLDEST_CORE=2.17.14  # the floor of meta/runtime.yml's requires_ansible, newest patch
mkdir -p .build

mapfile -t debs < <(awk '!/^#/ && NF && $2 !~ /:/ { print $2 }' hack/programs.txt | sort -u)
missing=()
for pkg in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# containerd 1.7 (trixie) and 2.1 (sid), and kubectl to check the fake API server: other Debian suites' packages,
# unpacked into .build/<suite>, nothing installed system-wide (hack/debian_debs.sh, one apt configuration per suite).
mapfile -t suites < <(awk '!/^#/ && $2 ~ /:/ { split($2, s, ":"); print s[1] }' hack/programs.txt | sort -u)
for suite in "${suites[@]}"; do
  mapfile -t pkgs < <(awk -v s="$suite" '!/^#/ && index($2, s ":") == 1 { print substr($2, length(s) + 2) }' \
    hack/programs.txt | sort -u)
  bash hack/debian_debs.sh "$suite" "${pkgs[@]}"
done

python=${PYTHON:-python3}
# venv DIR REQUIREMENTS...: creates DIR once, then installs the requirement files whenever they change.
venv() {
  local dir=$1 stamp want
  shift
  [ -x "$dir/bin/python" ] || "$python" -m venv "$dir"
  stamp=$dir/.requirements.sha256
  want=$(cat "$@" requirements*.txt tests/requirements-unit.txt | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing Python packages into $dir"
    local args=()
    for file in "$@"; do args+=(-r "$file"); done
    # This machine's pip configuration may name local indexes that are absent; their warnings are noise.
    "$dir/bin/pip" install -q "${args[@]}" 2>&1 | { grep -v '^WARNING: Location' || true; }
    echo "$want" > "$stamp"
  fi
}
venv .venv requirements-test.txt
# The oldest supported ansible-core: sanity (import, compile) and unit tests run on it too.
echo "ansible-core==$OLDEST_CORE" > .build/oldest-core.txt
venv .build/venv-oldest-core tests/requirements-unit.txt .build/oldest-core.txt

# ansible-test and ansible's collection loader need the tree under ansible_collections/<ns>/<name>.
mkdir -p .build/collections/ansible_collections/pinned
ln -sfn "$top" .build/collections/ansible_collections/pinned/images

# kubernetes.core (the pod mode's connection plugin kubernetes.core.kubectl; galaxy.yml's dependency) without Galaxy:
# the collection as PyPI's ansible package ships it, the wheel checked by sha256 and the collection by its version.
KUBERNETES_CORE=6.2.0 ANSIBLE_PACKAGE=ansible-12.3.0-py3-none-any.whl
ANSIBLE_PACKAGE_SHA256=cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414
core=.build/collections/ansible_collections/kubernetes/core
if [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' \
      "$core/MANIFEST.json" 2>/dev/null)" != "$KUBERNETES_CORE" ]; then
  echo "setup: installing kubernetes.core $KUBERNETES_CORE from PyPI's $ANSIBLE_PACKAGE"
  mkdir -p .build/downloads
  if ! echo "$ANSIBLE_PACKAGE_SHA256  .build/downloads/$ANSIBLE_PACKAGE" | sha256sum -c --status 2>/dev/null; then
    version=${ANSIBLE_PACKAGE#ansible-}
    .venv/bin/pip download -q --no-deps --only-binary=:all: --python-version 3.11 -d .build/downloads \
      "ansible==${version%%-*}" 2>&1 | { grep -v '^WARNING: Location' || true; }
    echo "$ANSIBLE_PACKAGE_SHA256  .build/downloads/$ANSIBLE_PACKAGE" | sha256sum -c --quiet
  fi
  rm -rf "$core"
  # Only the collection's own files, out of the package's few thousand.
  .venv/bin/python - ".build/downloads/$ANSIBLE_PACKAGE" .build/collections <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith("ansible_collections/kubernetes/core/")])
PY
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["collection_info"]["version"]; sys.exit(v != sys.argv[2])' \
    "$core/MANIFEST.json" "$KUBERNETES_CORE"
fi
