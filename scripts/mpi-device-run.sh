#!/usr/bin/env bash
# On a lent machine of two or more GPUs: `overlap trace` and `overlap audit`
# of an `mpirun -np 2` job, each rank a CUDA test app on the GPU of its
# local rank. The lent machines have no MPI and no network: Open MPI's
# Debian packages are unpacked into .devmpi/ here (scripts/stage-device-mpi.sh)
# and carried with the tree. Writes under $OUT: log.txt, mpi-audit.json,
# mpi-audit.txt, mpi-trace.txt, and the GPU test MultiProcess.MpirunRanksAreAuditedAndNamed
# in gpu-tests.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
# shellcheck source=scripts/multi-gpu-build.sh
source scripts/multi-gpu-build.sh
mpi=$PWD/.devmpi
[ -d "$mpi/usr" ] || { echo "no .devmpi/ (run scripts/stage-device-mpi.sh first)" >&2; exit 2; }
export PATH=$mpi/usr/bin:$PATH OPAL_PREFIX=$mpi/usr
export LD_LIBRARY_PATH=$mpi/usr/lib/x86_64-linux-gnu:$mpi/usr/lib/x86_64-linux-gnu/openmpi/lib:$mpi/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
build_h100 overlap overlap_inject app_clean_pipeline app_race_kernels overlap_audit_apps_tests
nvidia-smi -L
mpirun.openmpi --version | head -1
O=$B/tools/overlap/overlap
for app in clean_pipeline race_kernels; do
  job=(mpirun.openmpi -np 2 sh -c 'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0"' "$B/tests/apps/app_$app")
  step "$app: the job alone"
  timeout 120 "${job[@]}" >/dev/null 2>"$OUT/$app-job.err"
  echo "exit $?"; grep -v "mca_base_component\|help file\|Sorry\|^---\|unavailable\|help-pcompress" "$OUT/$app-job.err" | tail -3
  step "$app: overlap audit --json"
  timeout 180 $O audit --json -o "$OUT/mpi-audit-$app.json" -- "${job[@]}" >/dev/null 2>"$OUT/$app-audit.err"
  echo "exit $?"; tail -3 "$OUT/$app-audit.err"
  python3 - "$OUT/mpi-audit-$app.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d.get("processes", []):
    r = p["report"]
    print(p["name"], "device", p.get("device"), "findings", [f["rule"] for f in r.get("findings", [])][:6])
PY
  step "$app: overlap audit (text)"
  timeout 180 $O audit -o "$OUT/mpi-audit-$app.txt" -- "${job[@]}" >/dev/null 2>&1
  echo "exit $?"; head -12 "$OUT/mpi-audit-$app.txt"
done
step "overlap trace --format summary"
timeout 180 $O trace --format summary -o "$OUT/mpi-trace.txt" -- mpirun.openmpi -np 2 sh -c \
  'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0"' "$B/tests/apps/app_clean_pipeline" >/dev/null 2>&1
echo "exit $?"; head -20 "$OUT/mpi-trace.txt"
step "GPU test: MultiProcess.MpirunRanksAreAuditedAndNamed"
timeout 300 $B/tests/apps/overlap_audit_apps_tests --gtest_filter='MultiProcess.*' >"$OUT/gpu-tests.txt" 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|^\[       OK|tests ran" "$OUT/gpu-tests.txt"
