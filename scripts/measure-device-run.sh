#!/usr/bin/env bash
# On the lent GPU, for issue 36's measured accesses: builds build/h100, runs
# the GPU tests in both default-stream builds and the planted apps' audits,
# then scripts/measure-device-check.sh (planted races, inferred beside
# measured) and the PyTorch side-stream loop audited both ways, timed
# against a plain run. Everything lands in $OUT (tarballs, logs).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
export LD_LIBRARY_PATH="$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
scripts/device-build.sh || exit 1
for t in overlap_gpu_tests overlap_gpu_tests_per_thread; do
  build/h100/tests/$t --gtest_brief=1 >"$OUT/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$OUT/$t.log")"
done
build/h100/tests/apps/overlap_audit_apps_tests --gtest_brief=1 >"$OUT/apps.log" 2>&1; echo "apps rc=$? $(tail -1 "$OUT/apps.log")"
scripts/measure-device-check.sh race_kernels race_copy stream_ordered_free clean_pipeline
overlap=build/h100/tools/overlap/overlap
mkdir -p "$OUT/torch"
plain() { local s; s=$(date +%s%N); python3 tests/torch/side_stream_race.py 12 "$@" >/dev/null 2>&1; echo $(( ($(date +%s%N) - s) / 1000000 )); }
echo "torch plain ms: $(plain) $(plain) $(plain)"
for mode in inferred measured; do
  for v in racy fixed; do
    arg=(); [ "$v" = fixed ] && arg=(fixed)
    s=$(date +%s%N)
    timeout 250 "$overlap" audit --accesses "$mode" --timings --json -o "$OUT/torch/$mode.$v.json" \
      --raw "$OUT/torch/$mode.$v.jsonl" -- python3 tests/torch/side_stream_race.py 12 "${arg[@]}" >"$OUT/torch/$mode.$v.log" 2>&1
    rc=$?
    echo "torch $mode $v rc=$rc ms=$(( ($(date +%s%N) - s) / 1000000 )) $(grep -h 'measuring run:\|measured accesses:' "$OUT/torch/$mode.$v.log" | tr '\n' ' ')"
  done
done
# The measuring run's own file, for the racy loop.
mkdir -p "$OUT/torch/measuring"
OVERLAP_ACCESSES=measured OVERLAP_TRACE_DIR="$OUT/torch/measuring" \
  LD_PRELOAD="$PWD/build/h100/tools/inject/libovl_measure.so" python3 tests/torch/side_stream_race.py 12 >/dev/null 2>&1
tar -C "$OUT" -czf "$OUT/torch.tar.gz" torch && rm -rf "$OUT/torch"
