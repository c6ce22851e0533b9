#!/usr/bin/env bash
# Tracer overhead, split into its parts (run on the GPU machine; carry .devdeps, corpus-src).
#   bench/overhead/run.sh [REPS]   -> $OUT/overhead.txt (median wall ms per app and configuration)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}; mkdir -p "$OUT"; reps=${1:-3}
deps=$PWD/.devdeps/usr
export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
log=$OUT/overhead.txt
B=build/h100
s=$SECONDS
if [ ! -x $B/tools/overlap/overlap ]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DOVERLAP_WERROR=OFF \
    -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$deps" >"$OUT/build.log" 2>&1
  cmake --build $B -j "$(nproc)" --target overlap overlap_inject >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
echo "build $((SECONDS - s)) s" >>"$log"
[ -x build/corpus-bin/simpleCallback/static/simpleCallback ] ||
  bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)" --only simpleCallback,jacobiCudaGraphs,simpleStreams >"$OUT/corpus-build.log" 2>&1
echo "corpus build $((SECONDS - s)) s" >>"$log"
cupti_inc=$(dirname "$(find /usr/local/cuda/ -name cupti.h | head -1)")
cupti_lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so' | head -1)")
gcc -O2 -shared -fPIC -I"$cupti_inc" -I/usr/local/cuda/include bench/overhead/probe_inject.c -L"$cupti_lib" -lcupti \
  -Wl,-rpath,"$cupti_lib" -o "$OUT/probe.so" 2>>"$log" || echo "probe build failed" >>"$log"
inject=$PWD/$B/tools/inject/libovl_inject.so
ms() { local a b; a=$(date +%s%N); "$@" >/dev/null 2>&1; b=$(date +%s%N); echo $(((b - a) / 1000000)); }
med() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
measure() {  # LABEL CMD...
  local label=$1; shift; local t=()
  for _ in $(seq "$reps"); do t+=("$(ms "$@")"); done
  echo "$app $label $(med "${t[@]}") [${t[*]}]" >>"$log"
}
td=$(mktemp -d)
for spec in "simpleCallback/static/simpleCallback" "jacobiCudaGraphs/static/jacobiCudaGraphs -gpumethod=1" \
            "simpleStreams/static/simpleStreams"; do
  set -- $spec; exe=build/corpus-bin/$1; shift; app=$(basename "$exe")$*
  "$exe" "$@" >/dev/null 2>&1  # warm
  measure plain "$exe" "$@"
  for m in 0 1 2 3 5; do measure "probe$m" env CUDA_INJECTION64_PATH="$OUT/probe.so" PROBE_MODE=$m "$exe" "$@"; done
  measure inject env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" "$exe" "$@"
  measure inject-nocallers env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" OVERLAP_TRACE_CALLERS=0 "$exe" "$@"
  measure audit $B/tools/overlap/overlap audit --json -o "$td/a.json" --raw "$td/r.jsonl" -- "$exe" "$@"
  echo "elapsed $((SECONDS - s)) s" >>"$log"
done
if command -v perf >/dev/null; then
  perf record -g -o "$td/p.data" env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" \
    build/corpus-bin/simpleCallback/static/simpleCallback >/dev/null 2>&1
  perf report -i "$td/p.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -60 >"$OUT/perf.txt"
else echo "no perf" >>"$log"; fi
cat "$log"
