#!/usr/bin/env bash
# Checks that every program in hack/programs.txt, and the trixie binaries, can be run; names what is missing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

missing=()
while read -r program package; do
  case "$program" in ''|'#'*) continue ;; esac
  command -v "$program" >/dev/null || missing+=("$program (Debian package $package)")
done < hack/programs.txt
for binary in containerd/usr/bin/containerd kubectl/usr/bin/kubectl; do
  [ -x ".build/trixie/$binary" ] || missing+=(".build/trixie/$binary (hack/trixie_debs.sh)")
done
if [ "${#missing[@]}" -gt 0 ]; then
  printf 'missing programs, run hack/setup.sh (as root) or install them:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "all programs found"
