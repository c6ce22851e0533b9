#!/usr/bin/env bash
# On the lent GPU, issue 36's measured accesses for graph launches: builds
# the CLI, both libraries and the planted apps, audits the graph apps
# measured (keeping raw traces and a measuring file), then runs the
# MeasuredRace GPU tests (graph apps included). Results in $OUT.
#   device: scripts/measure-graph-device-check.sh   (carry .devdeps)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT/measured/files"
export LD_LIBRARY_PATH="$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
started=$SECONDS
{
  cmake -S . -B build/h100 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DOVERLAP_WERROR=OFF -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$PWD/.devdeps/usr"
  cmake --build build/h100 -j "$(nproc)" --target overlap overlap_inject overlap_measure overlap_audit_apps_tests \
    app_graph_race app_graph_memory_race app_race_kernels app_race_copy app_race_kernels_static
} >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - started)) s"
overlap=build/h100/tools/overlap/overlap
for args in "graph_race" "graph_race --repaired" "graph_memory_race" "graph_memory_race --repaired"; do
  read -r app flag <<<"$args"
  name=$app${flag:+.${flag#--}}
  timeout 200 "$overlap" audit --accesses measured --raw "$OUT/measured/$name.jsonl" \
    -- "build/h100/tests/apps/app_$app" $flag >"$OUT/measured/$name.txt" 2>&1
  echo "$name rc=$? $(grep -h 'kernel accesses\|^warning\|^error' "$OUT/measured/$name.txt" | cut -c1-160 | tr '\n' '|')"
done
OVERLAP_ACCESSES=measured OVERLAP_TRACE_DIR="$OUT/measured/files" \
  LD_PRELOAD="$PWD/build/h100/tools/inject/libovl_measure.so" build/h100/tests/apps/app_graph_race >/dev/null 2>&1
f=$(ls "$OUT"/measured/files/accesses.*.jsonl)
echo "measuring file: $(grep -c '"graph":"measured"' "$f") measured graph nodes, $(grep -c '"graph":"shared"' "$f") shared"
grep '"t":"launch"' "$f" | head -3 | cut -c1-260
build/h100/tests/apps/overlap_audit_apps_tests --gtest_filter='*MeasuredRace*' --gtest_brief=1 >"$OUT/measured-race.log" 2>&1
echo "MeasuredRace rc=$? $(tail -1 "$OUT/measured-race.log")"
grep -B2 -A8 "Failure" "$OUT/measured-race.log" | head -40
tar -C "$OUT" -czf "$OUT/measured.tar.gz" measured && rm -rf "$OUT/measured"
echo "done in $((SECONDS - started)) s"
