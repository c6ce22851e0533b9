#!/usr/bin/env bash
# Builds only what `overlap audit` needs (the CLI and the injection library)
# for the lent GPU machine's H100 (sm_90), into BUILD (default build/h100),
# unless it is there already; the Debian packages come from .devdeps
# (scripts/stage-device-deps.sh). For bench/overhead/run.sh and
# bench/kineto/record.sh. Prints the seconds it took; the build's log goes
# to LOG (default /dev/null), and its last lines to stderr on failure.
#   scripts/device-build-audit-tools.sh [BUILD] [LOG]
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build/h100}; log=${2:-/dev/null}
deps=$PWD/.devdeps/usr
s=$SECONDS
if [ ! -x "$B/tools/overlap/overlap" ]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DOVERLAP_WERROR=OFF \
    -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$deps" >"$log" 2>&1
  cmake --build "$B" -j "$(nproc)" --target overlap overlap_inject >>"$log" 2>&1 ||
    { tail -30 "$log" >&2; exit 1; }
fi
echo "$((SECONDS - s))"
