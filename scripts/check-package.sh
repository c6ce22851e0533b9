#!/usr/bin/env bash
# Checks the Debian package (cmake/package.cmake) on this machine, as root:
# builds it from BUILD (default build/default), installs it with apt-get,
# runs the installed `overlap --version` and `overlap simulate` on seed 004,
# removes it, and fails if any file it installed is left behind.
#   scripts/check-package.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/default}
fail() { echo "check-package: FAILED: $*" >&2; exit 1; }
step() { echo "--- check-package: $*"; }
[ "$(id -u)" -eq 0 ] || fail "run as root (it installs and removes a package)"
export DEBIAN_FRONTEND=noninteractive

if dpkg-query -W -f='${Status}' overlap 2>/dev/null | grep -q "install ok installed"; then
  step "an earlier overlap package is installed: purging it first"
  apt-get purge -y -qq overlap >/dev/null
fi

step "build the package from $build"
rm -f "$build"/overlap_*.deb
cmake --build "$build" --target package >"$build/package.log" 2>&1 || { cat "$build/package.log"; fail "cpack"; }
debs=("$build"/overlap_*_amd64.deb)
[ -f "${debs[0]}" ] || fail "no overlap_*_amd64.deb in $build"
deb=$(realpath "${debs[0]}")
dpkg-deb --field "$deb" Package Version Depends

step "install $(basename "$deb")"
apt-get install -y -qq "$deb" >/dev/null || fail "apt-get install $deb"
mapfile -t owned < <(dpkg -L overlap)
[ "$(command -v overlap)" = /usr/bin/overlap ] || fail "overlap is not /usr/bin/overlap after installing"
/usr/bin/overlap --version
total=$(/usr/bin/overlap simulate examples/seed004.yaml | grep '^Total time:')
echo "$total"
[[ "$total" =~ ^Total\ time:\ +4\ units$ ]] || fail "the installed overlap simulated seed 004 as '$total'"
printf '%s\n' "${owned[@]}" | grep -q '/cmake/overlap/overlapConfig\.cmake$' || fail "no CMake package installed"

step "remove it"
apt-get purge -y -qq overlap >/dev/null || fail "apt-get purge overlap"
left=()
for path in "${owned[@]}"; do
  # Folders it shares with the system (/usr, /usr/lib, ...) stay; its files,
  # and its own folders (.../overlap, .../overlap/...), must go.
  if [ -L "$path" ] || [ -f "$path" ] || { [ -d "$path" ] && [[ "$path" == */overlap || "$path" == */overlap/* ]]; }; then
    left+=("$path")
  fi
done
[ ${#left[@]} -eq 0 ] || fail "left behind after removal: ${left[*]}"
echo "check-package: installed, ran, removed; nothing of its ${#owned[@]} paths left behind"
