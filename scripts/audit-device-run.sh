#!/usr/bin/env bash
# Runs on the lent GPU machine: `overlap trace` / `overlap audit` end to end.
# Built here with the h100 preset, staged with scripts/stage-device-build.sh
# into .devbuild/ (binaries only) and carried with .devlibs/ (see
# scripts/device-run.sh). Everything lands in $OUT/audit.tar.gz plus a log.
#   device: scripts/audit-device-run.sh [STEP...]
#   steps: smoke tests gpu-tests apps python accuracy fidelity overhead overhead-quick
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export LD_LIBRARY_PATH="$PWD/.devlibs:$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
if [ -d .devbuild/h100 ] && [ ! -e build/h100/tools/overlap/overlap ]; then
  mkdir -p build && cp -a .devbuild/h100 build/h100
fi
B=build/h100
O=$B/tools/overlap/overlap
A=$B/tests/apps
R=$(mktemp -d)
log="$OUT/audit-device-run.log"
steps=${*:-"tests gpu-tests apps python accuracy fidelity overhead"}
status=0
# shellcheck source=scripts/device-steps.sh
source "$(dirname "$0")/device-steps.sh"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } >"$R/device.txt" 2>&1
cat "$R/device.txt" >>"$log"

for s in $steps; do
  case $s in
    smoke)
      step smoke-trace "$O" trace --raw "$R/smoke.jsonl" -- "$A/app_race_kernels"
      head -c 3000 "$R/smoke.jsonl" >>"$log"; echo >>"$log"
      grep -c '"t":"call"' "$R/smoke.jsonl" >>"$log" ;;
    tests)
      step audit-gpu-tests "$B/tests/apps/overlap_audit_apps_tests" --gtest_brief=0 ;;
    apps)
      mkdir -p "$R/apps"
      for app in "$A"/app_*; do
        [ -x "$app" ] || continue
        name=$(basename "$app")
        step "audit $name" "$O" audit --json -o "$R/apps/$name.json" --raw "$R/apps/$name.jsonl" -- "$app"
        case $name in
          *clean_pipeline*|*_static|*crash*|*sleeper*|*forker*) ;;
          *) step "audit $name --repaired" "$O" audit --json -o "$R/apps/$name.repaired.json" \
               --raw "$R/apps/$name.repaired.jsonl" -- "$app" --repaired ;;
        esac
      done
      step "trace clean_pipeline" "$O" trace --format chrome -o "$R/apps/clean_pipeline.chrome.json" \
        --program "$R/apps/clean_pipeline.yaml" -- "$A/app_clean_pipeline"
      step "audit text clean_pipeline" "$O" audit -- "$A/app_clean_pipeline"
      step "audit text pageable_copy" "$O" audit -- "$A/app_pageable_copy" ;;
    python)
      mkdir -p "$R/python"
      for script in tests/apps/python/*.py; do
        name=$(basename "$script" .py)
        # The planted script's findings are warnings: exit 0 unless it errs.
        step "audit $name" "$O" audit --json --fail-on error -o "$R/python/$name.json" \
          --raw "$R/python/$name.jsonl" -- python3 "$script"
        step "audit $name --repaired" "$O" audit --json -o "$R/python/$name.repaired.json" \
          --raw "$R/python/$name.repaired.jsonl" -- python3 "$script" --repaired
      done ;;
    accuracy)
      step accuracy python3 bench/audit_accuracy.py --overlap "$O" --apps "$A" --reps 3 --skip-overhead \
        --json "$R/accuracy.json" --keep "$R/accuracy-traces" ;;
    fidelity)
      step fidelity python3 bench/trace_fidelity.py --overlap "$O" --program "$B/bench/recorded_pipeline" \
        --json "$R/fidelity.json" --keep "$R" ;;
    overhead)  # the whole `overlap bench` (256 MiB transfer-bound), with and without trace
      step overhead python3 bench/audit_accuracy.py --overlap "$O" --apps "$A" --skip-accuracy \
        --bench-args "" --overhead-reps 3 --json "$R/overhead.json" ;;
    overhead-quick)
      step overhead-quick python3 bench/audit_accuracy.py --overlap "$O" --apps "$A" --skip-accuracy \
        --overhead-reps 3 --json "$R/overhead-quick.json" ;;
    gpu-tests)  # the Pipeline recorder's GPU tests
      step gpu-tests "$B/tests/overlap_gpu_tests" --gtest_filter='PipelineRecording*' ;;
  esac
done
cp "$log" "$R/"
tar -czf "$OUT/audit.tar.gz" -C "$R" .
exit $status
