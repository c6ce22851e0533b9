#!/usr/bin/env bash
# Runs on the lent GPU machine: the audit judged on the corpus of public
# programs (bench/corpus/README.md), plus the GPU tests the audit work needs.
#   here:    scripts/stage-device-deps.sh && scripts/corpus-layout.sh   (.devdeps/, corpus-src/)
#   device:  scripts/corpus-device-run.sh [STEP...]   (carry .devdeps and corpus-src)
#   steps:   build gpu-tests false-dependency apps corpus-build static shared python recheck
#   recheck: the programs in RECHECK (comma-separated ids) again, static and shared,
#            with RECHECK_REPS (default 11) runs each and no fix runs: the wall-time
#            ratio of programs whose own run time spreads widely, on more samples.
# CORPUS_REPS (default 3) sets the plain and audited runs of each program.
# Each step appends to $OUT/corpus-device-run.log; the scores go to
# $OUT/corpus-<variant>.json and the raw traces into $OUT/corpus-traces.tar.gz.
# A step whose prerequisite is missing (a machine handed back between calls)
# builds it first, so any step list works on a fresh machine.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export LD_LIBRARY_PATH="$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
B=build/h100
O=$B/tools/overlap/overlap
log="$OUT/corpus-device-run.log"
traces=$(mktemp -d)
steps=${*:-"build gpu-tests false-dependency apps corpus-build static shared python"}
status=0
# shellcheck source=scripts/device-steps.sh
source "$here/device-steps.sh"
built() { [ -x "$O" ] || step build scripts/device-build.sh; }
corpus_built() { [ -e build/corpus-bin/build-summary.json ] || step corpus-build bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)"; }
score() {  # score VARIANT
  built; corpus_built
  step "corpus $1" python3 bench/audit_corpus.py --overlap "$O" --corpus-bin build/corpus-bin --reps "${CORPUS_REPS:-3}" \
    --variants "$1" --json "$OUT/corpus-$1.json" --keep-traces "$traces/$1"
}
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } >>"$log" 2>&1
for s in $steps; do
  case $s in
    build) built ;;
    gpu-tests)  # both default-stream builds, and the audit's planted apps
      built
      for exe in "$B"/tests/overlap_gpu_tests "$B"/tests/overlap_gpu_tests_per_thread \
                 "$B"/tests/apps/overlap_audit_apps_tests; do
        [ -x "$exe" ] && step "$(basename "$exe")" "$exe" --gtest_brief=1
      done ;;
    false-dependency)  # dependent kernel pairs over more streams than connections
      built
      step "false-dependency (8 connections)" "$B/tests/overlap_gpu_tests" --gtest_filter='ProbeFalseDependency.*'
      CUDA_DEVICE_MAX_CONNECTIONS=32 step "false-dependency (32 connections)" \
        "$B/tests/overlap_gpu_tests" --gtest_filter='ProbeFalseDependency.*' ;;
    apps)  # every planted app audited, JSON kept beside the corpus traces
      built; mkdir -p "$traces/apps"
      for app in "$B"/tests/apps/app_*; do
        [ -x "$app" ] || continue
        name=$(basename "$app")
        step "audit $name" "$O" audit --json --fail-on error -o "$traces/apps/$name.json" \
          --raw "$traces/apps/$name.jsonl" -- "$app"
      done ;;
    corpus-build) built; corpus_built; cp build/corpus-bin/build-summary.json "$OUT/" 2>/dev/null ;;
    static | shared | python) score "$s" ;;
    recheck)
      built; corpus_built
      step "corpus recheck" python3 bench/audit_corpus.py --overlap "$O" --corpus-bin build/corpus-bin \
        --reps "${RECHECK_REPS:-11}" --no-fix --variants static,shared --only "${RECHECK:?set RECHECK to program ids}" \
        --json "$OUT/corpus-recheck.json" ;;
    *) echo "corpus-device-run: unknown step '$s'" >&2; status=2 ;;
  esac
done
tar -czf "$OUT/corpus-traces.tar.gz" -C "$traces" .
exit $status
