#!/usr/bin/env bash
# Runs on the lent GPU machine: audits the programs that launch CUDA graphs
# (the planted app_graph_race, both ways, and the corpus's graph and
# stream-ordered programs) and returns their raw traces and audit JSON as
# $OUT/graph-traces.tar.gz, the test data of tests/fixtures/traces/graphs.
#   device:  scripts/graph-traces-device.sh   (carry .devdeps and corpus-src; builds what is missing)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=build/h100
O=$B/tools/overlap/overlap
log="$OUT/graph-traces.log"
traces=$(mktemp -d)
status=0
# shellcheck source=scripts/device-steps.sh
source scripts/device-steps.sh
[ -x "$O" ] || step build scripts/device-build.sh
audit() {  # audit NAME COMMAND...
  local name=$1; shift
  step "audit $name" "$O" audit --json -o "$traces/$name.json" --raw "$traces/$name.jsonl" -- "$@"
}
audit app_graph_race "$B/tests/apps/app_graph_race"
audit app_graph_race_repaired "$B/tests/apps/app_graph_race" --repaired
ids=simpleCudaGraphs,graphMemoryNodes,jacobiCudaGraphs,cudaGraphsPerfScaling,streamOrderedAllocation
[ -d build/corpus-bin/simpleCudaGraphs ] || step corpus-build bench/corpus/build.sh corpus-src build/corpus-bin -j "$(nproc)" --only "$ids"
bin=build/corpus-bin
audit simpleCudaGraphs "$bin/simpleCudaGraphs/static/simpleCudaGraphs"
audit graphMemoryNodes "$bin/graphMemoryNodes/static/graphMemoryNodes"
audit jacobiCudaGraphs "$bin/jacobiCudaGraphs/static/jacobiCudaGraphs"
audit jacobiCudaGraphs-update "$bin/jacobiCudaGraphs/static/jacobiCudaGraphs" -gpumethod=1
audit cudaGraphsPerfScaling "$bin/cudaGraphsPerfScaling/static/cudaGraphsPerfScaling" 3 5 20 4
audit streamOrderedAllocation "$bin/streamOrderedAllocation/static/streamOrderedAllocation"
tar -czf "$OUT/graph-traces.tar.gz" -C "$traces" .
exit $status
