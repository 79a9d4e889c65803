#!/usr/bin/env bash
# Prepares a fresh machine: Debian packages for the lab, and the project's virtual environment in .venv.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

debs=(containerd docker-registry runc openssl git shellcheck)
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

# containerd 1.7 (pins through the image label) for the lab, and kubectl to check the fake API server:
# Debian trixie's packages, unpacked into .build/trixie, nothing installed system-wide.
bash hack/trixie_debs.sh containerd kubectl

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # This machine's pip configuration names local indexes that may be absent; their warnings are noise.
  .venv/bin/pip install -q -r requirements-test.txt 2>&1 | { grep -v '^WARNING: Location' || true; }
  echo "$want" > "$stamp"
fi

# ansible-test and ansible's collection loader need the tree under ansible_collections/<ns>/<name>.
mkdir -p .build/collections/ansible_collections/pinned
ln -sfn "$top" .build/collections/ansible_collections/pinned/images
