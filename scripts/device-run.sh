#!/usr/bin/env bash
# Runs on the lent GPU machine (see bench/RESULTS.md): it has CUDA but none
# of our Debian dependencies, so the `h100` preset is built on the dev machine,
# staged into .devbuild/ by scripts/stage-device-build.sh, and carried over
# with the Debian shared libraries it needs (.devlibs/: libfmt.so.9,
# libyaml-cpp.so.0.7, libbenchmark.so.1debian).
#   here:   cmake --preset h100 && cmake --build --preset h100 && scripts/stage-device-build.sh
#   device: scripts/device-run.sh [STEP...]   (results under $OUT)
#   steps:  tests memcheck examples probe validate bench graph   (default: all)
# `bench` writes bench.json, the best run's Chrome trace and the HTML report
# (bench-report.html), then the text table. `probe` times `overlap probe
# --quick` and writes the full probe's model (model.json); `validate` runs
# the prediction grid of bench/validate on that model (probing first if no
# model.json is there yet).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
# The CPU tests find examples/ by the absolute path of the build machine.
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export LD_LIBRARY_PATH="$PWD/.devlibs:$PWD/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
if [ -d .devbuild/h100 ] && [ ! -e build/h100/tools/overlap/overlap ]; then
  mkdir -p build && cp -a .devbuild/h100 build/h100
fi
B=build/h100
log="$OUT/device-run.log"
steps=${*:-"tests memcheck examples probe validate bench graph"}
status=0
# shellcheck source=scripts/device-steps.sh
source "$(dirname "$0")/device-steps.sh"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } >"$OUT/device.txt" 2>&1
for s in $steps; do
  case $s in
    tests)
      step cpu-tests "$B/tests/overlap_tests" --gtest_brief=1
      for exe in "$B"/tests/overlap_cuda_*tests "$B"/tests/overlap_bench_*tests "$B"/tests/overlap_gpu_tests*; do
        [ -x "$exe" ] && step "$(basename "$exe")" "$exe" --gtest_brief=1
      done ;;
    memcheck)
      [ -x "$B/tests/overlap_gpu_tests" ] &&
        step memcheck compute-sanitizer --tool memcheck --leak-check full --report-api-errors no --error-exitcode 3 \
          "$B/tests/overlap_gpu_tests" --gtest_brief=1 ;;
    examples)
      for ex in "$B"/examples/stream_overlap "$B"/examples/out_of_core "$B"/examples/feed_frames \
                "$B"/examples/graph_branches "$B"/examples/graph_cupy "$B"/examples/graph_halves; do
        [ -x "$ex" ] && step "$(basename "$ex")" "$ex"
      done ;;
    probe)
      step probe-quick "$B/tools/overlap/overlap" probe --quick -o "$OUT/model-quick.json"
      step probe "$B/tools/overlap/overlap" probe -o "$OUT/model.json" ;;
    validate)
      [ -e "$OUT/model.json" ] || step probe "$B/tools/overlap/overlap" probe -o "$OUT/model.json"
      step validate "$B/bench/validate" --device "$OUT/model.json" --json "$OUT/validate.json" ;;
    bench)
      step bench-quick "$B/tools/overlap/overlap" bench --quick
      step bench "$B/tools/overlap/overlap" bench --json --output "$OUT/bench.json" \
        --timeline "$OUT/best-timeline.json" --report "$OUT/bench-report.html"
      step bench-table "$B/tools/overlap/overlap" bench --reps 10 ;;
    graph)
      [ -x "$B/bench/graph_launch_cost" ] &&
        step graph-launch-cost "$B/bench/graph_launch_cost" --benchmark_repetitions=5 \
          --benchmark_report_aggregates_only=true ;;
    *) echo "unknown step '$s' (steps: tests memcheck examples probe validate bench graph)" >&2; status=2 ;;
  esac
done
exit $status
