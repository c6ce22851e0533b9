#!/usr/bin/env bash
# On a lent machine of two or more GPUs (nvidia-h100-x2): multi-process
# tracing and auditing end to end. Builds the CLI, the injection library,
# the test apps and their GPU test for sm_90 (against .devdeps, as
# scripts/multi-gpu-device-run.sh does), then writes under $OUT:
#   log.txt        every step's output
#   gpu-tests.txt  the MultiProcess GPU tests (a shell job of two ranks, torchrun DDP)
#   rounds.tar.gz  ROUNDS rounds of examples/ddp_train.py under torchrun on 2 GPUs:
#                  audit-N.json (overlap audit, our CUPTI tracer; the steady state is
#                  cudaProfilerStart..Stop around the steps) and
#                  kineto-N/rank*.json (torch.profiler traces of a second run, for HTA:
#                  bench/hta_compare.py), the runs alternating; serialized.txt (the
#                  all-reduce on the compute stream); job.html (the trace's page)
#   scripts/ddp-device-run.sh [ROUNDS]   (default 3)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
ROUNDS=${1:-3}
R=$OUT/rounds
mkdir -p "$OUT" "$R"
exec > >(tee -a "$OUT/log.txt") 2>&1
# shellcheck source=scripts/multi-gpu-build.sh
source scripts/multi-gpu-build.sh
build_h100 overlap overlap_inject overlap_audit_apps_tests
nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())"
O=$B/tools/overlap/overlap
job=(torchrun --standalone --nproc-per-node 2 examples/ddp_train.py --steps 20)

step "GPU tests: MultiProcess.*"
timeout 400 $B/tests/apps/overlap_audit_apps_tests --gtest_filter='MultiProcess.*:Robustness.*' >"$OUT/gpu-tests.txt" 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|tests ran" "$OUT/gpu-tests.txt"

for r in $(seq 1 "$ROUNDS"); do
  step "round $r: audit (CUPTI)"
  timeout 240 $O audit --json --fail-on error -o "$R/audit-$r.json" -- "${job[@]}" >/dev/null 2>"$R/audit-$r.err"
  echo "exit $?"; tail -3 "$R/audit-$r.err"
  python3 -c "
import json; d=json.load(open('$R/audit-$r.json'))
for p in d['processes']:
    c=p['report']['communication']; print(p['name'], 'overlap %.4f idle %.4f comm %.2f ms steady %.1f ms' % (c['overlap_fraction'], c['idle_fraction'], c['communication_ms'], p['report']['verdict']['steady_ms']))"
  step "round $r: torch.profiler"
  timeout 240 "${job[@]}" --profile "$R/kineto-$r" >"$R/kineto-$r.log" 2>&1
  echo "exit $?"; ls -la "$R/kineto-$r"
done

step "serialized all-reduce: audit (text)"
timeout 240 $O audit -o "$R/serialized.txt" -- "${job[@]}" --serialize >/dev/null 2>&1
echo "exit $?"; head -8 "$R/serialized.txt"; grep -A3 "serialized-communication" "$R/serialized.txt" | head -12

step "trace: the job's page"
timeout 240 $O trace --format html -o "$R/job.html" -- "${job[@]}" --steps 5 >/dev/null 2>"$R/trace.err"
echo "exit $?"; tail -4 "$R/trace.err"

tar czf "$OUT/rounds.tar.gz" -C "$OUT" rounds && rm -rf "$R"
ls -la "$OUT"
