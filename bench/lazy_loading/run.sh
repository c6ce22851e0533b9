#!/usr/bin/env bash
# On the GPU machine: what lazy module loading costs app_lazy_module_load
# (tests/apps/lazy_module_load.cu), and what the audit says of it. REPS
# rounds (default 7), each running in turn: the app as it is, the app under
# CUDA_MODULE_LOADING=EAGER, and its --repaired twin (kernels touched with
# cudaFuncGetAttributes in set-up); the median of when the side kernel was
# done (ms from the busy kernel's launch, as the app prints it) with its runs,
# then the audit's findings of each variant.
#   bench/lazy_loading/run.sh [REPS] -> $OUT/lazy-loading.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}; mkdir -p "$OUT"; reps=${1:-7}
B=${OVERLAP_BUILD:-build/h100}
app=$B/tests/apps/app_lazy_module_load
O=$B/tools/overlap/overlap
log=$OUT/lazy-loading.txt
elapsed() { "$@" 2>/dev/null | sed -n 's/.*side kernel done after \([0-9.]*\) ms/\1/p'; }
declare -A t=()
for _ in $(seq "$reps"); do
  t[lazy]+="$(elapsed "$app") "
  t[eager]+="$(elapsed env CUDA_MODULE_LOADING=EAGER "$app") "
  t[repaired]+="$(elapsed "$app" --repaired) "
done
for k in lazy eager repaired; do
  med=$(printf '%s\n' ${t[$k]} | sort -g | sed -n "$(( (reps + 1) / 2 ))p")
  echo "$k: median $med ms of runs: ${t[$k]}" >>"$log"
done
for variant in "" "EAGER" "--repaired"; do
  if [ "$variant" = EAGER ]; then
    CUDA_MODULE_LOADING=EAGER "$O" audit --json -o "$OUT/lazy-audit-eager.json" -- "$app" >/dev/null 2>&1
    f=$OUT/lazy-audit-eager.json
  elif [ -n "$variant" ]; then
    "$O" audit --json -o "$OUT/lazy-audit-repaired.json" -- "$app" --repaired >/dev/null 2>&1
    f=$OUT/lazy-audit-repaired.json
  else
    "$O" audit --json -o "$OUT/lazy-audit.json" -- "$app" >/dev/null 2>&1
    f=$OUT/lazy-audit.json
  fi
  python3 -c "
import json,sys; a=json.load(open('$f'))
print('audit ${variant:-lazy}:', a['verdict']['bound'], round(a['verdict']['steady_ms'],3), 'ms;',
      [(x['rule'], x['severity'], x.get('measured',{}).get('time_ms')) for x in a['findings']] or 'no findings')" >>"$log"
done
cat "$log"
