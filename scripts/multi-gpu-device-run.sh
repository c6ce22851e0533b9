#!/usr/bin/env bash
# On a lent machine of two or more GPUs (nvidia-h100-x2): builds the CLI, the
# GPU tests and bench/multi_gpu_copies for sm_90 (against .devdeps, as
# scripts/device-build.sh does), then writes under $OUT (at most 8 files come
# back from the device):
#   log.txt          every step's output: how the GPUs and CPUs are linked
#                    (nvidia-smi topo -m), the probes' summaries, the tests
#   host-full.json   overlap probe --all-devices (the full probe)
#   compare.json     ROUNDS rounds of bench/multi_gpu_copies (the independent
#                    measurement) each beside probe --all-devices --quick,
#                    compared by bench/multi_gpu_compare.py
#   rounds.tar.gz    those rounds' models and measurements
#   plan.txt         overlap plan --devices 1 and 2 on host-full.json (the
#                    transfer-bound workload's predictions)
#   pipeline.json    bench/multi_gpu_pipeline: the Pipeline on one GPU and
#                    two against the best hand-written two-GPU loop and the floors
#   feed.json        bench/multi_gpu_feed: the Feed on one GPU and on two
#   gpu-tests.txt    the GPU tests, legacy and per-thread default stream, and
#                    compute-sanitizer memcheck of the multi-GPU tests
# Each step has its own time limit, so a slow one leaves the others' files.
#   scripts/multi-gpu-device-run.sh [ROUNDS]   (0: the full probe, the Pipeline and the tests only)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
ROUNDS=${1:-2}
mkdir -p "$OUT" "$OUT/rounds"
exec > >(tee -a "$OUT/log.txt") 2>&1
# shellcheck source=scripts/multi-gpu-build.sh
source scripts/multi-gpu-build.sh
build_h100 overlap overlap_gpu_tests overlap_gpu_tests_per_thread multi_gpu_copies multi_gpu_pipeline multi_gpu_feed

step topology
nvidia-smi -L; nvidia-smi topo -m; nproc; grep -m1 "model name" /proc/cpuinfo

overlap=$B/tools/overlap/overlap
step "probe --all-devices (full)"
timeout 300 $overlap probe --all-devices -o "$OUT/host-full.json" 2>/dev/null
echo "exit $?"

pairs=()
for r in $(seq 1 "$ROUNDS"); do
  step "round $r: bench/multi_gpu_copies, then probe --all-devices --quick"
  R=$OUT/rounds
  timeout 120 $B/bench/multi_gpu_copies --bytes 64 --copies 8 --reps 7 >"$R/copies-$r.json"
  echo "exit $?"; cat "$R/copies-$r.json"
  timeout 200 $overlap probe --all-devices --quick -o "$R/host-quick-$r.json" >"$R/host-quick-$r.txt" 2>&1
  echo "exit $?"; grep -A3 "all at once" "$R/host-quick-$r.txt"
  pairs+=(--round "$R/host-quick-$r.json" "$R/copies-$r.json")
done
if [ "$ROUNDS" -gt 0 ]; then
  step "the probe against the independent measurement"
  python3 bench/multi_gpu_compare.py "${pairs[@]}" --json "$OUT/compare.json"
  tar -czf "$OUT/rounds.tar.gz" -C "$OUT" rounds
fi
rm -rf "$OUT/rounds"

step "overlap plan on the probed host: 1 GiB each way, no kernel, on 1 and 2 GPUs"
for n in 1 2; do
  $overlap plan --bytes-in 1GiB --bytes-out 1GiB --kernel 0 --devices $n --device "$OUT/host-full.json" \
    --top 3 >>"$OUT/plan.txt" 2>&1
  echo "exit $?"
done
grep -E "^(Best|Predicted|Floor|            the)" "$OUT/plan.txt"

step "the Pipeline on one GPU and on two (bench/multi_gpu_pipeline)"
timeout 300 $B/bench/multi_gpu_pipeline --reps "${PIPELINE_REPS:-7}" --model "$OUT/host-full.json" \
  --json "$OUT/pipeline.json"
echo "exit $?"

step "the Feed on one GPU and on two (bench/multi_gpu_feed)"
timeout 200 $B/bench/multi_gpu_feed --reps 9 --json "$OUT/feed.json"
echo "exit $?"

for t in overlap_gpu_tests overlap_gpu_tests_per_thread; do
  step "$t"
  echo "=== $t" >>"$OUT/gpu-tests.txt"
  timeout 240 $B/tests/$t --gtest_brief=1 >>"$OUT/gpu-tests.txt" 2>&1
  echo "exit $?"; tail -3 "$OUT/gpu-tests.txt"
done

step "memcheck of the multi-GPU tests"
echo "=== memcheck" >>"$OUT/gpu-tests.txt"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 $B/tests/overlap_gpu_tests \
  --gtest_filter='HostProbe.*:MultiGpu*' >>"$OUT/gpu-tests.txt" 2>&1
echo "exit $?"; tail -3 "$OUT/gpu-tests.txt"
step done
