#!/usr/bin/env bash
# Unpacks packages of another Debian suite (trixie, sid) into .build/<suite>/<package>/ with a private apt
# configuration per suite: nothing is installed system-wide and the machine's own apt sources are left alone.
# Usage: hack/debian_debs.sh SUITE PACKAGE...   (prints nothing when every package is already unpacked)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
suite=${1:?usage: hack/debian_debs.sh SUITE PACKAGE...}
shift
case "$suite" in
  *[!a-z0-9-]*|'') echo "debian_debs: bad suite name '$suite'" >&2; exit 2 ;;
esac
root="$top/.build/$suite"
apt_dir="$root/apt"

wanted=()
for pkg in "$@"; do
  [ -f "$root/$pkg/.unpacked" ] || wanted+=("$pkg")
done
[ "${#wanted[@]}" -gt 0 ] || exit 0

mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/etc/preferences.d" "$apt_dir/etc/apt.conf.d"
mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
cat > "$apt_dir/etc/sources.list" <<SOURCES
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror:-http://deb.debian.org/debian} $suite main
SOURCES
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list"
  -o "Dir::Etc::SourceParts=-"
  -o "Dir::Etc::Parts=$apt_dir/etc/apt.conf.d"
  -o "Dir::Etc::PreferencesParts=$apt_dir/etc/preferences.d"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir"
  -o "Dir::State::status=/dev/null"
  -o "Acquire::Languages=none"
  -o "Acquire::Check-Valid-Until=false"
)
apt-get "${apt_opts[@]}" update -qq
for pkg in "${wanted[@]}"; do
  rm -rf "${root:?}/$pkg"
  mkdir -p "$root/$pkg"
  (cd "$apt_dir/archives" && apt-get "${apt_opts[@]}" -o APT::Sandbox::User=root download -qq "$pkg")
  debs=("$apt_dir/archives/${pkg}"_*.deb)
  deb=${debs[-1]}
  dpkg-deb -x "$deb" "$root/$pkg"
  dpkg-deb -f "$deb" Version > "$root/$pkg/.unpacked"
  echo "$suite: unpacked $pkg $(cat "$root/$pkg/.unpacked") into $root/$pkg"
done
