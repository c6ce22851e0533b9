#!/usr/bin/env bash
# On the lent GPU: the corpus of public programs (bench/corpus) audited with
# `--accesses measured`, one run each, no fix runs, for issue 36's targets
# (no false error; the measuring run's slowdown per program). Results:
# $OUT/corpus-measured-<variant>.json; the log: $OUT/corpus-measured.log.
#   device: scripts/corpus-measured-device-run.sh [VARIANT...]   (carry .devdeps and corpus-src)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export LD_LIBRARY_PATH="$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
log="$OUT/corpus-measured.log"
deps=$PWD/.devdeps/usr
{
  cmake -S . -B build/h100 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DOVERLAP_WERROR=OFF -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$deps"
  cmake --build build/h100 -j "$(nproc)" --target overlap overlap_inject overlap_measure
} >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
[ -e build/corpus-bin/build-summary.json ] || bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)" >>"$log" 2>&1
for variant in "${@:-static}"; do
  python3 bench/audit_corpus.py --overlap build/h100/tools/overlap/overlap --corpus-bin build/corpus-bin \
    --reps 1 --no-fix --variants "$variant" --audit-args "--accesses measured" \
    --json "$OUT/corpus-measured-$variant.json" >>"$log" 2>&1
  tail -25 "$log"
done
