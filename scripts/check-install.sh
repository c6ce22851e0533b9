#!/usr/bin/env bash
# Checks overlap as a library other projects build on (docs/install.md):
#  1. `cmake --install` of BUILD (default build/default) into a temporary
#     prefix; examples/consumer configured with find_package(overlap),
#     linking overlap::overlap, built and run on seed 004 (total 4 units);
#  2. the same consumer linking overlap::core/sim/io only, with no CUDA
#     anywhere: nvcc off PATH, no CUDA compiler, CUDAToolkit not findable;
#  3. find_package(overlap 99.0) fails with a version message; with CUDA
#     built, COMPONENTS cuda is found; against NOCUDA_BUILD (a build made
#     with OVERLAP_CUDA=OFF, e.g. build/asan), COMPONENTS cuda fails clearly;
#  4. pkg-config: the consumer compiled by g++ with `pkg-config overlap`;
#  5. the consumer with overlap as add_subdirectory (CUDA off), overlap's
#     tests not built.
#   scripts/check-install.sh [BUILD] [NOCUDA_BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${1:-build/default}
nocuda_build=${2:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/overlap-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
jobs=$(nproc)
step() { echo "--- check-install: $*"; }
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }
expect_total() {  # expect_total BINARY: seed 004's total is 4 units
  local got
  got=$("$1" "$src/examples/seed004.yaml")
  echo "$got"
  [ "$got" = "seed004-2-stream-pipeline: total 4 units" ] || fail "$1 printed '$got', expected seed 004's total of 4 units"
}

step "install $build into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
[ -f "$work/prefix/lib/cmake/overlap/overlapConfig.cmake" ] || [ -n "$(find "$work/prefix" -name overlapConfig.cmake)" ] ||
  fail "no overlapConfig.cmake installed"
"$work/prefix/bin/overlap" --version

step "find_package(overlap), overlap::overlap"
cmake -S examples/consumer -B "$work/all" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/all.log" ||
  { cat "$work/all.log"; fail "configuring the consumer"; }
cmake --build "$work/all" -j "$jobs" >>"$work/all.log" || { cat "$work/all.log"; fail "building the consumer"; }
expect_total "$work/all/consumer"

step "find_package(overlap), overlap::core/sim/io, no CUDA compiler or toolkit in sight"
# PATH without any folder that holds an nvcc; cmake is called by its full path.
no_cuda_path=$(tr ':' '\n' <<<"$PATH" | while read -r dir; do [ -x "$dir/nvcc" ] || echo "$dir"; done | paste -sd: -)
cmake_bin=$(command -v cmake)
(
  unset CUDACXX CUDA_PATH CUDAToolkit_ROOT
  PATH=$no_cuda_path
  ! command -v nvcc >/dev/null || fail "nvcc is still on PATH"
  "$cmake_bin" -S examples/consumer -B "$work/cpu" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
    -UCMAKE_CUDA_COMPILER -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
    "-DOVERLAP_CONSUMER_TARGETS=overlap::core;overlap::sim;overlap::io" >"$work/cpu.log" ||
    { cat "$work/cpu.log"; fail "configuring the CPU-only consumer"; }
  grep -q "CUDA layer loaded: FALSE" "$work/cpu.log" || { cat "$work/cpu.log"; fail "the CUDA targets were loaded"; }
  "$cmake_bin" --build "$work/cpu" -j "$jobs" >>"$work/cpu.log" || { cat "$work/cpu.log"; fail "building the CPU-only consumer"; }
)
expect_total "$work/cpu/consumer"

# find_package(overlap VERSION COMPONENTS...) in a throwaway project; prints its output.
probe_package() {  # probe_package PREFIX DIR ARGS...
  local prefix=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  printf 'cmake_minimum_required(VERSION 3.25)\nproject(probe LANGUAGES CXX)\nfind_package(overlap %s REQUIRED)\n' "$*" \
    >"$dir/CMakeLists.txt"
  cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" 2>&1
}
step "find_package(overlap 99.0) fails on the version"
if out=$(probe_package "$work/prefix" "$work/v99" 99.0); then fail "find_package(overlap 99.0) succeeded"; fi
grep -q 'compatible with requested version "99.0"' <<<"$out" || { echo "$out"; fail "no version message"; }
grep -m1 'compatible with requested version' <<<"$out"

if grep -q "overlapCudaTargets" <(find "$work/prefix" -name '*.cmake'); then
  step "find_package(overlap COMPONENTS cuda) on a CUDA build"
  probe_package "$work/prefix" "$work/cuda" COMPONENTS cuda >"$work/cuda.log" ||
    { cat "$work/cuda.log"; fail "COMPONENTS cuda on a CUDA build"; }
fi
if [ -n "$nocuda_build" ]; then
  step "find_package(overlap COMPONENTS cuda) on a build without CUDA ($nocuda_build)"
  cmake --install "$nocuda_build" --prefix "$work/nocuda" >/dev/null
  if out=$(probe_package "$work/nocuda" "$work/nocuda-probe" COMPONENTS cuda); then
    fail "COMPONENTS cuda succeeded on a build without CUDA"
  fi
  # CMake wraps the message over lines: one line of it, to search.
  message=$(tr -s ' \n' ' ' <<<"$out")
  grep -q "was built without its CUDA layer" <<<"$message" || { echo "$out"; fail "no clear message for COMPONENTS cuda"; }
  grep -o "component 'cuda' was requested.*when it was configured\." <<<"$message"
fi

step "pkg-config overlap"
pc_dir=$(dirname "$(find "$work/prefix" -name overlap.pc | head -1)")
# shellcheck disable=SC2046
g++ -o "$work/pc-consumer" examples/consumer/main.cpp $(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs overlap) ||
  fail "compiling the consumer with pkg-config's flags"
expect_total "$work/pc-consumer"

step "add_subdirectory(overlap), CUDA off"
cmake -S examples/consumer -B "$work/sub" -G Ninja -DOVERLAP_CONSUMER_FROM_SOURCE=ON -DOVERLAP_CUDA=OFF \
  >"$work/sub.log" || { cat "$work/sub.log"; fail "configuring the subdirectory consumer"; }
cmake --build "$work/sub" -j "$jobs" >>"$work/sub.log" || { cat "$work/sub.log"; fail "building the subdirectory consumer"; }
expect_total "$work/sub/consumer"
if [ -e "$work/sub/overlap/tests" ] || grep -q overlap_tests "$work/sub/build.ninja"; then
  fail "overlap's tests were configured in the subdirectory build"
fi
[ ! -e "$work/sub/overlap/tools/overlap/overlap" ] || fail "overlap's CLI was built in the subdirectory build"
echo "check-install: all passed"
