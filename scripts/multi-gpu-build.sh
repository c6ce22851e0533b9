# Sourced by the multi-GPU device scripts (scripts/multi-gpu-device-run.sh,
# scripts/ddp-device-run.sh) on a lent machine of several GPUs: NVLink
# multicast off (KINDS.md), .devdeps/ on the library path, step() for the
# log, and build_h100 TARGET... building them for sm_90 into build/h100
# against .devdeps (as scripts/device-build.sh does). Sets B and deps.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
deps=$PWD/.devdeps/usr
[ -d "$deps" ] || { echo "$(basename "$0"): no .devdeps/ (run scripts/stage-device-deps.sh first)" >&2; exit 2; }
export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B=build/h100
step() { echo "=== $(date -u +%H:%M:%S) $*"; }

# Builds the targets named, printing the build's tail and exiting on failure.
build_h100() {
  step build
  local started=$SECONDS log=/tmp/$(basename "$0" .sh)-build.log
  {
    cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DOVERLAP_WERROR=OFF \
      -DOVERLAP_PYTHON=OFF -DCMAKE_PREFIX_PATH="$deps" &&
      cmake --build $B -j "$(nproc)" --target "$@"
  } >"$log" 2>&1 || { tail -40 "$log"; exit 1; }
  echo "built in $((SECONDS - started)) s"
}
