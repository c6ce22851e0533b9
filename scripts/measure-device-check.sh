#!/usr/bin/env bash
# On the lent GPU: `overlap audit --accesses measured` (tools/measure) on
# planted apps, beside the same audits inferred, into $OUT/measure.tar.gz:
# raw traces, the measuring runs' files, audits (JSON), logs and wall times.
#   scripts/measure-device-check.sh [APP...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
work=$(mktemp -d)
overlap=build/h100/tools/overlap/overlap
apps=("$@")
[ ${#apps[@]} -gt 0 ] || apps=(race_kernels race_copy clean_pipeline stream_ordered_free)
for app in "${apps[@]}"; do
  for mode in inferred measured; do
    for variant in racy repaired; do
      # app_clean_pipeline has no trap to repair: its one run is the clean one.
      [ "$app" = clean_pipeline ] && [ "$variant" = repaired ] && continue
      flag=(); [ "$variant" = repaired ] && flag=(--repaired)
      name=$app.$mode.$variant
      start=$(date +%s%N)
      timeout 300 "$overlap" audit --accesses "$mode" --timings --json -o "$work/$name.json" \
        --raw "$work/$name.jsonl" -- "build/h100/tests/apps/app_$app" "${flag[@]}" >"$work/$name.log" 2>&1
      rc=$?
      end=$(date +%s%N)
      findings=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(';'.join(f\"{f['rule']}:{f['severity']}\" for f in d.get('findings',[])))" "$work/$name.json" 2>/dev/null)
      echo "$name rc=$rc wall_ms=$(( (end - start) / 1000000 )) accesses=$(grep -c '"t":"accesses"' "$work/$name.jsonl" 2>/dev/null) findings=$findings" | tee -a "$work/summary.txt"
    done
  done
done
tar -C "$work" -czf "$OUT/measure.tar.gz" .
