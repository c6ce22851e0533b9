#!/usr/bin/env bash
# Records PyTorch profiler (Kineto) traces of PyTorch programs on the GPU
# machine, and our own tracer's raw trace and audit of the same programs, for
# the Kineto reader's tests (tests/fixtures/kineto) and its comparison with
# our tracer. Carry .devdeps and corpus-src.
#   bench/kineto/record.sh  -> $OUT/kineto/NAME.json, $OUT/ours/NAME.{jsonl,audit.json}, $OUT/record.log
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}; mkdir -p "$OUT/kineto" "$OUT/ours"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
deps=$PWD/.devdeps/usr
export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
log=$OUT/record.log
B=${OVERLAP_BUILD:-build/h100}
s=$SECONDS
built=$(scripts/device-build-audit-tools.sh "$B" "$OUT/build.log") || exit 1
echo "build $built s" >>"$log"
overlap=$PWD/$B/tools/overlap/overlap
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())' >>"$log" 2>&1
src=corpus-src
aiperf=$src/cfregly+ai-performance-engineering/code
programs=(
  "side_stream_race|tests/torch/side_stream_race.py 12"
  "side_stream_fixed|tests/torch/side_stream_race.py 12 fixed"
  "pageable_sync|tests/torch/pageable_sync.py 10"
  "overlap_pytorch|$aiperf/ch6_kernel_perf/python_overlap/overlap_pytorch.py"
  "concurrent_streams|$aiperf/ch7_kernel_scheduling/concurrent_streams/concurrent_streams.py"
  "graph_replay|tests/torch/graph_replay.py 20"
  "dcgan|$src/pytorch+examples/dcgan/main.py --dataset fake --dry-run --accel --outf /tmp/dcgan"
)
mkdir -p /tmp/dcgan
for entry in "${programs[@]}"; do
  name=${entry%%|*}; args=(${entry#*|})
  t=$SECONDS
  python3 bench/kineto/torch_profile.py "$OUT/kineto/$name.json" -- "${args[@]}" >"$OUT/kineto/$name.log" 2>&1
  echo "$name: kineto exit $? in $((SECONDS - t)) s, $(stat -c %s "$OUT/kineto/$name.json" 2>/dev/null) bytes" >>"$log"
  t=$SECONDS
  "$overlap" audit --json -o "$OUT/ours/$name.audit.json" --raw "$OUT/ours/$name.jsonl" -- python3 "${args[@]}" \
    >"$OUT/ours/$name.log" 2>&1
  echo "$name: audit exit $? in $((SECONDS - t)) s" >>"$log"
done
echo "total $((SECONDS - s)) s" >>"$log"
cat "$log"
# One file back: the device tool returns a few files a call.
tar -C "$OUT" -czf "$OUT/recorded.tar.gz" kineto ours && rm -rf "$OUT/kineto" "$OUT/ours"
