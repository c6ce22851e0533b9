#!/usr/bin/env bash
# The Debian package built, installed and run on the lent GPU machine
# (Ubuntu 24.04 with CUDA, cmake, ninja and g++, but no network and none of
# overlap's Debian build dependencies). Those travel with the working tree:
#   here:    scripts/stage-device-deps.sh     (.devdeps/: fmt, yaml-cpp, CLI11 and
#                                              nlohmann-json from their Debian packages)
#   device:  scripts/device-package.sh        (results under $OUT)
# It configures a Release build for sm_90 against .devdeps, builds the
# package with CPack, installs it with dpkg, runs the installed `overlap
# --version` and `overlap bench --quick` (libfmt and libyaml-cpp from
# .devdeps through LD_LIBRARY_PATH: the machine has no package for them),
# removes it and checks nothing is left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
deps=$PWD/.devdeps/usr
[ -d "$deps" ] || { echo "device-package: no .devdeps/ (run scripts/stage-device-deps.sh first)" >&2; exit 2; }
build=build/gpu-package
log="$OUT/device-package.log"
{
  echo "=== configure and build ($build)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DOVERLAP_BUILD_TESTS=OFF -DOVERLAP_BUILD_BENCH=OFF -DOVERLAP_BUILD_EXAMPLES=OFF -DCMAKE_PREFIX_PATH="$deps" \
    -DOVERLAP_PACKAGE_LIBRARY_DIRS="$deps/lib/x86_64-linux-gnu"
  cmake --build "$build" -j "$(nproc)"
  echo "=== cpack"
  (cd "$build" && cpack -G DEB)
} >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
deb=$(realpath "$build"/overlap_*_amd64.deb)
cp "$deb" "$OUT/"
dpkg-deb --field "$deb" Package Version Depends | tee "$OUT/package-fields.txt"
dpkg -i "$deb"
mapfile -t owned < <(dpkg -L overlap)
export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
command -v overlap
overlap --version | tee "$OUT/version.txt"
status=0
overlap bench --quick >"$OUT/bench-quick.txt" 2>&1 || status=$?
tail -25 "$OUT/bench-quick.txt"
echo "bench --quick from the installed package: exit $status"
dpkg --purge overlap
left=()
for path in "${owned[@]}"; do
  if [ -L "$path" ] || [ -f "$path" ] || { [ -d "$path" ] && [[ "$path" == */overlap || "$path" == */overlap/* ]]; }; then
    left+=("$path")
  fi
done
[ ${#left[@]} -eq 0 ] || { echo "left behind: ${left[*]}" >&2; exit 1; }
echo "removed: nothing of its ${#owned[@]} paths left behind"
exit "$status"
