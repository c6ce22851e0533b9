#!/usr/bin/env bash
# Builds the `h100` configuration (Release, sm_90 only) on the lent GPU
# machine itself, with its 16 cores, against the Debian packages carried in
# .devdeps/ (the machine has none of them and no network). Building there
# takes a few minutes; building sm_90 here on 2 cores takes far longer.
#   here:    scripts/stage-device-deps.sh            (.devdeps/)
#   device:  scripts/device-build.sh && scripts/audit-device-run.sh ...
# It leaves build/h100 as `cmake --preset h100` would, and exports nothing:
# the run scripts set LD_LIBRARY_PATH to .devdeps' libraries themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
deps=$PWD/.devdeps/usr
[ -d "$deps" ] || { echo "device-build: no .devdeps/ (run scripts/stage-device-deps.sh first)" >&2; exit 2; }
log="$OUT/device-build.log"
started=$SECONDS
{
  cmake -S . -B build/h100 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DOVERLAP_WERROR=OFF -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$deps"
  cmake --build build/h100 -j "$(nproc)"
} >"$log" 2>&1 || { tail -40 "$log"; echo "device-build: failed after $((SECONDS - started)) s" >&2; exit 1; }
echo "device-build: build/h100 built in $((SECONDS - started)) s"
