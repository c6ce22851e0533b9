#!/usr/bin/env bash
# On the lent GPU, the audit's device checks for a change, in two calls (each
# under the 600 s a call may take; carry .devdeps and corpus-src):
#   scripts/audit-device-check.sh tests
#       builds build/h100 whole, runs the GPU tests in both default-stream
#       builds and every planted app's audit
#   scripts/audit-device-check.sh corpus APP[:FLAG] ...
#       builds the CLI, the tracer and the planted apps named, audits each
#       (with its flag, if any) keeping the raw trace (CPU test data), runs
#       compute-sanitizer memcheck over them, then audits the corpus (static,
#       1 run each, no fix runs), keeping its traces
# e.g. corpus managed_memory managed_memory:--on-demand graph_memory_race:--repaired
# Logs and results land in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export LD_LIBRARY_PATH="$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
started=$SECONDS
overlap=build/h100/tools/overlap/overlap
case "${1:-}" in
  tests)
    scripts/device-build.sh || exit 1
    for t in overlap_gpu_tests overlap_gpu_tests_per_thread; do
      build/h100/tests/$t --gtest_brief=1 >"$OUT/$t.log" 2>&1
      echo "$t rc=$? $(tail -1 "$OUT/$t.log")"
    done
    build/h100/tests/apps/overlap_audit_apps_tests --gtest_brief=1 >"$OUT/apps.log" 2>&1
    echo "apps rc=$? $(grep -c '^\[       OK' "$OUT/apps.log") ok; $(tail -1 "$OUT/apps.log")"
    grep -B2 -A10 "Failure" "$OUT/apps.log" | head -60
    ;;
  corpus)
    shift
    apps=()
    for spec in "$@"; do apps+=("app_${spec%%:*}"); done
    {
      cmake -S . -B build/h100 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DOVERLAP_WERROR=OFF -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$PWD/.devdeps/usr"
      cmake --build build/h100 -j "$(nproc)" --target overlap overlap_inject "${apps[@]}"
    } >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
    echo "built in $((SECONDS - started)) s"
    mkdir -p "$OUT/traces"
    sanitizer=/usr/local/cuda/compute-sanitizer/compute-sanitizer
    for spec in "$@"; do
      app=${spec%%:*}
      flag=""
      [[ $spec == *:* ]] && flag=${spec#*:}
      name=$app${flag:+.${flag#--}}
      timeout 120 "$overlap" audit --raw "$OUT/traces/$name.jsonl" -- "build/h100/tests/apps/app_$app" $flag \
        >"$OUT/traces/$name.txt" 2>&1
      echo "$name rc=$? $(grep -h 'host link\|^warning\|^error' "$OUT/traces/$name.txt" | cut -c1-160 | tr '\n' '|')"
      log="$OUT/traces/memcheck.$name.log"
      timeout 200 "$sanitizer" --tool memcheck --error-exitcode 9 "build/h100/tests/apps/app_$app" $flag >"$log" 2>&1
      echo "  memcheck rc=$? $(grep -h 'ERROR SUMMARY' "$log")"
    done
    tar -C "$OUT" -czf "$OUT/traces.tar.gz" traces && rm -rf "$OUT/traces"
    bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)" >"$OUT/corpus-build.log" 2>&1
    echo "corpus build rc=$?"
    python3 bench/audit_corpus.py --overlap "$overlap" --corpus-bin build/corpus-bin --reps 1 --no-fix \
      --variants static --json "$OUT/corpus-static.json" --keep-traces "$OUT/corpus-traces" >"$OUT/corpus.log" 2>&1
    echo "corpus rc=$?"
    tail -14 "$OUT/corpus.log"
    grep "false:" "$OUT/corpus.log"
    tar -C "$OUT" -czf "$OUT/corpus-traces.tar.gz" corpus-traces && rm -rf "$OUT/corpus-traces"
    ;;
  *)
    echo "usage: scripts/audit-device-check.sh tests | corpus APP[:FLAG] ..." >&2
    exit 2
    ;;
esac
echo "done in $((SECONDS - started)) s"
