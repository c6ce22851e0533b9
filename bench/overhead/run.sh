#!/usr/bin/env bash
# Tracer overhead, split into its parts (run on the GPU machine; carry .devdeps, corpus-src).
#   [PROBES="s sr ..."] [ROWS="inject audit ..."] bench/overhead/run.sh [REPS] [APP...]  -> $OUT/overhead.txt
# APP is a corpus id, ID:EXE where the binary is named otherwise, then its arguments.
# Each rep runs every configuration once, in turn, so drift hits them alike;
# the log has the median wall ms of each with its runs, and the probe's
# set-up and flush times (probe_inject.c says what each PROBE letter does).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}; mkdir -p "$OUT"; reps=${1:-5}; shift || true
apps=("$@")
[ ${#apps[@]} -gt 0 ] || apps=("simpleCallback" "jacobiCudaGraphs" "jacobiCudaGraphs -gpumethod=1" "simpleStreams")
deps=$PWD/.devdeps/usr
export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
log=$OUT/overhead.txt
B=${OVERLAP_BUILD:-build/h100}
s=$SECONDS
built=$(scripts/device-build-audit-tools.sh "$B" "$OUT/build.log") || exit 1
echo "build $built s" >>"$log"
names=$(for a in "${apps[@]}"; do set -- $a; echo -n "${1%%:*},"; done)
bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)" --only "${names%,}" >"$OUT/corpus-build.log" 2>&1
echo "corpus build $((SECONDS - s)) s" >>"$log"
cupti_inc=$(dirname "$(find /usr/local/cuda/ -name cupti.h | head -1)")
cupti_lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so' | head -1)")
gcc -O2 -shared -fPIC -I"$cupti_inc" -I/usr/local/cuda/include bench/overhead/probe_inject.c -L"$cupti_lib" -lcupti \
  -Wl,-rpath,"$cupti_lib" -o "$OUT/probe.so" 2>>"$log" || echo "probe build failed" >>"$log"
inject=$PWD/$B/tools/inject/libovl_inject.so
overlap=$PWD/$B/tools/overlap/overlap
ms() { local a b; a=$(date +%s%N); "$@" >/dev/null 2>&1; b=$(date +%s%N); echo $(((b - a) / 1000000)); }
td=$(mktemp -d)
probes=(${PROBES-"" s sr srd srD a srda})
rows=(${ROWS-inject inject-nomig inject-nvtx inject-nocallers audit audit-nomig audit-from timings})
for spec in "${apps[@]}"; do
  # ID or ID:EXE (the corpus id and, where they differ, its binary's name)
  set -- $spec; name=${1%%:*}; exe_name=${1#*:}; shift; exe=build/corpus-bin/$name/static/$exe_name; app=$name$*
  [ -x "$exe" ] || { echo "$app: not built" >>"$log"; continue; }
  "$exe" "$@" >/dev/null 2>&1  # warm
  "$overlap" audit --json -o "$td/a.json" --raw "$td/raw.jsonl" -- "$exe" "$@" >/dev/null 2>&1
  declare -A t=()
  for _ in $(seq "$reps"); do
    t[plain]+="$(ms "$exe" "$@") "
    for p in "${probes[@]}"; do
      t[probe-${p:-none}]+="$(ms env CUDA_INJECTION64_PATH="$OUT/probe.so" PROBE="$p" PROBE_LOG="$OUT/probe-$name.log" "$exe" "$@") "
    done
    for r in "${rows[@]}"; do
      case $r in
        inject) t[$r]+="$(ms env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" "$exe" "$@") "
          env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" OVERLAP_TRACE_STATS=1 "$exe" "$@" 2>&1 >/dev/null |
            grep 'tracer costs' >>"$OUT/stats-$name.txt" ;;
        inject-nomig) t[$r]+="$(ms env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" OVERLAP_TRACE_MIGRATIONS=0 "$exe" "$@") " ;;
        inject-nvtx) t[$r]+="$(ms env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" NVTX_INJECTION64_PATH="$cupti_lib/libcupti.so" "$exe" "$@") " ;;
        inject-nocallers) t[$r]+="$(ms env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" OVERLAP_TRACE_CALLERS=0 "$exe" "$@") " ;;
        audit) t[$r]+="$(ms "$overlap" audit --json -o "$td/a.json" --raw "$td/r.jsonl" -- "$exe" "$@") " ;;
        audit-nomig) t[$r]+="$(ms env OVERLAP_TRACE_MIGRATIONS=0 "$overlap" audit --json -o "$td/a.json" --raw "$td/r.jsonl" -- "$exe" "$@") " ;;
        audit-from) t[$r]+="$(ms "$overlap" audit --json -o "$td/b.json" --from "$td/raw.jsonl") " ;;
        timings)
          "$overlap" audit --timings --json -o "$td/c.json" -- "$exe" "$@" 2>&1 >/dev/null | grep timings >>"$OUT/timings-$name.txt"
          "$overlap" audit --timings --json -o "$td/c.json" --from "$td/raw.jsonl" 2>&1 >/dev/null | grep timings >>"$OUT/timings-$name.txt" ;;
      esac
    done
  done
  plain_med=$(printf '%s\n' ${t[plain]} | sort -n | sed -n "$(( (reps + 1) / 2 ))p")
  for k in plain "${probes[@]/#/probe-}" probe-none "${rows[@]}"; do
    [ "$k" = "probe-" ] && continue
    [ -n "${t[$k]:-}" ] || continue
    med=$(printf '%s\n' ${t[$k]} | sort -n | sed -n "$(( (reps + 1) / 2 ))p")
    printf '%-28s %-18s %6d ms %5.3fx  [%s]\n' "$app" "$k" "$med" "$(awk -v a="$med" -v b="$plain_med" 'BEGIN{print a/b}')" "${t[$k]% }" >>"$log"
  done
  echo "trace bytes $(stat -c %s "$td/raw.jsonl")  elapsed $((SECONDS - s)) s" >>"$log"
  unset t
done
for f in "$OUT"/probe-*.log; do
  echo "== $f" >>"$log"
  sort "$f" | awk '{k=$1; n[k]++; su[k]+=$3; fl[k]+=$5} END {for (k in n) printf "%-6s setup %.0f us  flush %.0f us  (mean of %d)\n", k, su[k]/n[k], fl[k]/n[k], n[k]}' >>"$log"
done
if command -v perf >/dev/null; then
  perf record -g -o "$td/p.data" env CUDA_INJECTION64_PATH="$inject" OVERLAP_TRACE_DIR="$td" \
    build/corpus-bin/jacobiCudaGraphs/static/jacobiCudaGraphs -gpumethod=1 >/dev/null 2>&1
  perf report -i "$td/p.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -80 >"$OUT/perf.txt"
else echo "no perf" >>"$log"; fi
cat "$log"
