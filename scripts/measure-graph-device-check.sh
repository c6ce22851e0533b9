#!/usr/bin/env bash
# On the lent GPU, issue 36's measured accesses for graph launches: builds
# the CLI, both libraries and the planted apps, audits the graph apps
# measured (keeping raw traces and measuring files), runs the MeasuredRace
# GPU tests (graph apps included), then audits the corpus's graph programs
# measured (1 run each). Results in $OUT.
#   device: scripts/measure-graph-device-check.sh   (carry .devdeps and corpus-src)
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
    app_graph_race app_graph_memory_race app_graph_shared_kernel app_race_kernels app_race_copy \
    app_race_kernels_static
} >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - started)) s"
overlap=build/h100/tools/overlap/overlap
for args in "graph_race" "graph_race --repaired" "graph_memory_race" "graph_memory_race --repaired" \
  "graph_shared_kernel" "graph_shared_kernel --repaired"; do
  read -r app flag <<<"$args"
  name=$app${flag:+.${flag#--}}
  timeout 200 "$overlap" audit --accesses measured --raw "$OUT/measured/$name.jsonl" \
    -- "build/h100/tests/apps/app_$app" $flag >"$OUT/measured/$name.txt" 2>&1
  echo "$name rc=$? $(grep -h 'kernel accesses\|^warning\|^error' "$OUT/measured/$name.txt" | cut -c1-160 | tr '\n' '|')"
done
# The measuring files alone, lazy module loading (the default) and eager.
for run in graph_race graph_shared_kernel graph_shared_kernel:EAGER; do
  app=${run%%:*}
  loading=LAZY
  [[ $run == *:* ]] && loading=${run#*:}
  mkdir -p "$OUT/measured/files/$run"
  CUDA_MODULE_LOADING=$loading OVERLAP_ACCESSES=measured OVERLAP_TRACE_DIR="$OUT/measured/files/$run" \
    LD_PRELOAD="$PWD/build/h100/tools/inject/libovl_measure.so" "build/h100/tests/apps/app_$app" >/dev/null 2>&1
  f=$(ls "$OUT"/measured/files/$run/accesses.*.jsonl)
  echo "$run measuring file: $(grep -c '"graph":"measured"' "$f") measured graph nodes," \
    "$(grep -c '"graph":"shared"' "$f") shared, $(grep -c '"graph":"unseen"' "$f") unseen," \
    "$(grep -c '"t":"unmatched"' "$f") unmatched"
  grep '"t":"unmatched"' "$f" | head -3 | cut -c1-260
  grep '"t":"launch"' "$f" | head -3 | cut -c1-260
done
build/h100/tests/apps/overlap_audit_apps_tests --gtest_filter='*MeasuredRace*' --gtest_brief=1 >"$OUT/measured-race.log" 2>&1
echo "MeasuredRace rc=$? $(tail -1 "$OUT/measured-race.log")"
grep -B2 -A8 "Failure" "$OUT/measured-race.log" | head -40
tar -C "$OUT" -czf "$OUT/measured.tar.gz" measured && rm -rf "$OUT/measured"
graphs=simpleCudaGraphs,graphMemoryNodes,jacobiCudaGraphs,jacobiCudaGraphs-update,cudaGraphsPerfScaling
graphs+=,graphConditionalNodes,graphMemoryFootprint
bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)" >"$OUT/corpus-build.log" 2>&1
echo "corpus build rc=$?"
python3 bench/audit_corpus.py --overlap "$overlap" --corpus-bin build/corpus-bin --reps 1 --no-fix \
  --variants static --only "$graphs" --audit-args '--accesses measured' --json "$OUT/corpus-measured.json" \
  --keep-traces "$OUT/corpus-traces" >"$OUT/corpus-measured.log" 2>&1
echo "corpus measured rc=$?"
tail -14 "$OUT/corpus-measured.log"
grep "false:" "$OUT/corpus-measured.log"
# Each graph program's measuring file alone: how many graph nodes were measured.
python3 - "$OUT/corpus-measured.json" "$PWD/build/h100/tools/inject/libovl_measure.so" "$OUT/corpus-files" <<'PY'
import json, os, subprocess, sys
result, library, files = sys.argv[1:4]
for row in json.load(open(result))["rows"]:
    print(f"{row['id']}: audit {row.get('overhead')} x plain, false errors {row.get('false_errors')}")
manifest = json.load(open("bench/corpus/manifest.json"))
for p in manifest["programs"]:
    if "raph" not in p["id"]:
        continue
    binary = os.path.abspath(os.path.join("build/corpus-bin", p.get("binary_from") or p["id"], "static", p["exe"]))
    where = os.path.join(files, p["id"])
    os.makedirs(where, exist_ok=True)
    env = dict(os.environ, OVERLAP_ACCESSES="measured", OVERLAP_TRACE_DIR=where, LD_PRELOAD=library)
    command = [binary if item == "{bin}" else item for item in p["run"]]
    try:
        rc = subprocess.run(command, env=env, cwd=where, capture_output=True, timeout=200).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    counts = {"measured": 0, "shared": 0, "unseen": 0, "unmatched": 0, "launch": 0}
    first = None
    for name in os.listdir(where):
        if not name.startswith("accesses."):
            continue
        for line in open(os.path.join(where, name)):
            counts["measured"] += '"graph":"measured"' in line
            counts["shared"] += '"graph":"shared"' in line
            counts["unseen"] += '"graph":"unseen"' in line
            counts["launch"] += line.startswith('{"t":"launch"')
            if line.startswith('{"t":"unmatched"'):
                counts["unmatched"] += 1
                first = first or line.strip()[:240]
    print(p["id"], "rc", rc, counts, first or "")
PY
tar -C "$OUT" -czf "$OUT/corpus-files.tar.gz" corpus-files && rm -rf "$OUT/corpus-files"
tar -C "$OUT" -czf "$OUT/corpus-traces.tar.gz" corpus-traces && rm -rf "$OUT/corpus-traces"
echo "done in $((SECONDS - started)) s"
