#!/usr/bin/env bash
# On the lent GPU, issue 36's managed, mapped and graph memory, in two calls
# (each under the 600 s a call may take; carry .devdeps and corpus-src):
#   scripts/memory-device-check.sh tests    builds build/h100 whole, runs the GPU
#                                          tests in both default-stream builds and
#                                          every planted app's audit
#   scripts/memory-device-check.sh corpus   builds the CLI, tracer and the new apps,
#                                          keeps their raw traces (CPU test data),
#                                          runs compute-sanitizer memcheck over the
#                                          new apps, then audits the corpus (static,
#                                          1 run each, no fix runs)
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
    {
      cmake -S . -B build/h100 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DOVERLAP_WERROR=OFF -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$PWD/.devdeps/usr"
      cmake --build build/h100 -j "$(nproc)" --target overlap overlap_inject app_managed_memory app_graph_memory_race
    } >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
    echo "built in $((SECONDS - started)) s"
    mkdir -p "$OUT/traces"
    for args in "managed_memory" "managed_memory --on-demand" "graph_memory_race" "graph_memory_race --repaired"; do
      read -r app flag <<<"$args"
      name=$app${flag:+.${flag#--}}
      timeout 120 "$overlap" audit --raw "$OUT/traces/$name.jsonl" -- "build/h100/tests/apps/app_$app" $flag \
        >"$OUT/traces/$name.txt" 2>&1
      echo "$name rc=$? $(grep -h 'host link\|^warning\|^error' "$OUT/traces/$name.txt" | cut -c1-160 | tr '\n' '|')"
      echo "  migration records: $(grep -c '"t":"migration"' "$OUT/traces/$name.jsonl")"
    done
    sanitizer=/usr/local/cuda/compute-sanitizer/compute-sanitizer
    for args in "managed_memory" "managed_memory --on-demand" "graph_memory_race --repaired"; do
      read -r app flag <<<"$args"
      log="$OUT/traces/memcheck.$app${flag:+.${flag#--}}.log"
      timeout 200 "$sanitizer" --tool memcheck --error-exitcode 9 "build/h100/tests/apps/app_$app" $flag >"$log" 2>&1
      echo "memcheck $app $flag rc=$? $(grep -h 'ERROR SUMMARY' "$log")"
    done
    tar -C "$OUT" -czf "$OUT/traces.tar.gz" traces && rm -rf "$OUT/traces"
    bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)" >"$OUT/corpus-build.log" 2>&1
    echo "corpus build rc=$?"
    python3 bench/audit_corpus.py --overlap "$overlap" --corpus-bin build/corpus-bin --reps 1 --no-fix \
      --variants static --json "$OUT/corpus-static.json" --keep-traces "$OUT/corpus-traces" >"$OUT/corpus.log" 2>&1
    echo "corpus rc=$?"
    for p in hecbench-prefetch UnifiedMemoryStreams; do
      echo "$p migration records: $(grep -c '"t":"migration"' "$OUT/corpus-traces/$p.static.1.jsonl")"
    done
    tail -14 "$OUT/corpus.log"
    grep "false:" "$OUT/corpus.log"
    tar -C "$OUT" -czf "$OUT/corpus-traces.tar.gz" corpus-traces && rm -rf "$OUT/corpus-traces"
    ;;
  *)
    echo "usage: scripts/memory-device-check.sh tests|corpus" >&2
    exit 2
    ;;
esac
echo "done in $((SECONDS - started)) s"
