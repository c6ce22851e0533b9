#!/usr/bin/env bash
# On a lent machine of two or more GPUs: builds the CLI and the GPU tests
# for sm_90 (scripts/multi-gpu-build.sh), then writes under $OUT:
#   log.txt              every step's output
#   bench-devices-N.json `overlap bench --devices all --json`, CALLS calls in a row
#   bench-devices.txt    the last call's text (the same rows as the JSON)
#   gpu-tests.txt        the GPU tests in both default-stream modes
#   host.json, plan.txt  with PREDICT=1: overlap probe --all-devices, then
#                        overlap plan --devices 1..N of each job on it (the
#                        compute-bound kernel's time: the first call's kernel
#                        alone on one GPU), against the calls' measured rows
#                        (PROBE_FIRST=1: the probe first, and the calls given
#                        it, so they add a Pipeline planned on it)
#   scripts/bench-devices-device-run.sh [CALLS] [GTEST_FILTER]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
CALLS=${1:-2}
FILTER=${2:-*}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
# shellcheck source=scripts/multi-gpu-build.sh
source scripts/multi-gpu-build.sh
build_h100 overlap overlap_gpu_tests overlap_gpu_tests_per_thread
nvidia-smi -L
overlap=$B/tools/overlap/overlap
model=()
if [ "${PROBE_FIRST:-0}" = 1 ]; then
  step "probe --all-devices, for the Pipeline planned on it"
  timeout 300 $overlap probe --all-devices -o "$OUT/host.json" >/dev/null 2>&1
  echo "exit $?"
  model=(--device "$OUT/host.json")
fi
for c in $(seq 1 "$CALLS"); do
  step "overlap bench --devices all, call $c"
  timeout 240 $overlap bench --devices all --json -o "$OUT/bench-devices-$c.json" "${model[@]}"
  echo "exit $?"
  python3 - "$OUT/bench-devices-$c.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for w in r["devices"]["workloads"]:
    for row in w["rows"]:
        print(f'{w["name"]:15} {row["gpus"]} {row["name"]:40} {row["median_ms"]:9.3f} ({row["min_ms"]:.3f}..{row["max_ms"]:.3f}) x floor {row["ratio_to_floor"]:.3f} x 1 GPU {row["throughput_vs_one_gpu"]:.3f}')
for v in r["verdicts"]:
    print(("PASS" if v["pass"] else "FAIL"), v["name"], round(v["value"], 4), "limit", round(v["limit"], 4))
PY
done
if [ "${PREDICT:-0}" = 1 ]; then
  step "probe --all-devices"
  timeout 300 $overlap probe --all-devices -o "$OUT/host.json" 2>/dev/null
  echo "exit $?"
  kernel_ms=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); w=r['devices']['workloads'][1]; print(next(x['median_ms'] for x in w['rows'] if x['gpus']==1 and x['kind']=='devices_kernel'))" "$OUT/bench-devices-1.json")
  gpus=$(nvidia-smi -L | wc -l)
  for n in $(seq 1 "$gpus"); do
    for k in 0 "$kernel_ms"; do
      echo "=== --devices $n --kernel $k" >>"$OUT/plan.txt"
      $overlap plan --bytes-in 1GiB --bytes-out 1GiB --kernel "$k" --devices "$n" --device "$OUT/host.json" \
        --top 1 >>"$OUT/plan.txt" 2>&1
    done
  done
  grep -E "^(===|Best|Predicted|Floor)" "$OUT/plan.txt"
fi
step "the text of one more call (--quick)"
timeout 120 $overlap bench --devices all --quick >"$OUT/bench-devices.txt" 2>&1
echo "exit $?"; tail -30 "$OUT/bench-devices.txt"
for t in overlap_gpu_tests overlap_gpu_tests_per_thread; do
  step "$t"
  echo "=== $t" >>"$OUT/gpu-tests.txt"
  timeout 280 $B/tests/$t --gtest_brief=1 --gtest_filter="$FILTER" >>"$OUT/gpu-tests.txt" 2>&1
  echo "exit $?"; tail -3 "$OUT/gpu-tests.txt"
done
