#!/usr/bin/env bash
# Checks that every program in hack/programs.txt can be run; names what is missing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

missing=()
while read -r program package; do
  case "$program" in ''|'#'*) continue ;; esac
  case "$package" in
    *:*) [ -x "$program" ] || missing+=("$program (Debian ${package%%:*} package ${package#*:}, hack/debian_debs.sh)") ;;
    *) command -v "$program" >/dev/null || missing+=("$program (Debian package $package)") ;;
  esac
done < hack/programs.txt
if [ "${#missing[@]}" -gt 0 ]; then
  printf 'missing programs, run hack/setup.sh (as root) or install them:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "all programs found"
