#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: Clang, ASan + UBSan) and
# runs each for SECONDS (default 60) on a fresh copy of its seed corpus, in
# build/fuzz/work. Fails on any crash, leak, sanitizer report, input taking
# over 2 s, or more than 2 GiB of memory, and then says where the input that
# did it is, to be moved into fuzz/regressions/<target>/ (fuzz/README.md).
#   scripts/fuzz.sh [SECONDS] [TARGET...]      targets: all six by default
#   FUZZ_JOBS=N                                 targets run at once (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift $(($# > 0 ? 1 : 0))
all_targets=(spec_parser device_model spec_pipeline timeline_json trace_reader pytorch_trace)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
jobs=${FUZZ_JOBS:-$(nproc)}
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }

scripts/install-deps.sh fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

bin=build/fuzz/fuzz
work=build/fuzz/work
rm -rf "$work"
mkdir -p "$work"

# Made seeds: the device presets as JSON and the examples' timelines.
"$bin/make_fuzz_seeds" "$work/made" examples/*.yaml examples/check/*.yaml

# What each target starts from, besides the checked-in regressions (both
# spec targets take each other's).
seeds() {
  case "$1" in
    spec_parser | spec_pipeline) echo examples/*.yaml examples/*.json examples/check/*.yaml ;;
    device_model) echo "$work"/made/device_model/*.json bench/results/*-model.json ;;
    timeline_json) echo "$work"/made/timeline_json/*.json ;;
    trace_reader) find tests/fixtures/traces -maxdepth 1 -name '*.jsonl' -size -16k ;;
    pytorch_trace) echo fuzz/regressions/pytorch_trace/seed-*.json ;;
  esac
}
regressions() {
  case "$1" in
    spec_parser | spec_pipeline) echo fuzz/regressions/spec_parser fuzz/regressions/spec_pipeline ;;
    *) echo "fuzz/regressions/$1" ;;
  esac
}
dictionary() {
  case "$1" in
    spec_parser | spec_pipeline) echo fuzz/spec.dict ;;
    *) echo "fuzz/$1.dict" ;;
  esac
}

run_target() {
  local target=$1 dir=$work/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  # shellcheck disable=SC2046  # seeds are globs without spaces
  cp $(seeds "$target") "$dir/corpus/"
  # shellcheck disable=SC2046
  find $(regressions "$target") -type f ! -name '.*' -exec cp {} "$dir/corpus/" \;
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:symbolize=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin/${target}_fuzz" -max_total_time="$seconds" -timeout=2 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -print_final_stats=1 -dict="$(dictionary "$target")" -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

echo "=== fuzzing ${targets[*]} for ${seconds} s each, ${jobs} at a time (logs: $work/<target>/log) ==="
start=$SECONDS
for target in "${targets[@]}"; do
  [ -x "$bin/${target}_fuzz" ] || { echo "fuzz.sh: no fuzz target '$target' (have: ${all_targets[*]})" >&2; exit 2; }
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$target" &
done
wait

failed=0
for target in "${targets[@]}"; do
  dir=$work/$target
  rc=$(cat "$dir/rc")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1)
  if [ "$rc" = 0 ]; then
    echo "$target: ok (${runs:-?} inputs, ${cov:-cov: ?}, corpus $(find "$dir/corpus" -type f | wc -l) files)"
    continue
  fi
  failed=1
  echo "$target: FAILED (exit $rc)"
  echo "--- the end of $dir/log:"
  tail -n 60 "$dir/log"
  echo "--- the input(s) that did it:"
  for artifact in "$dir"/artifacts/*; do
    [ -e "$artifact" ] || { echo "(none written: see the log)"; continue; }
    echo "  $artifact"
  done
  echo "Reproduce:  $bin/${target}_fuzz INPUT"
  echo "Minimize:   $bin/${target}_fuzz -minimize_crash=1 -runs=10000 INPUT"
  echo "Keep it:    cp INPUT fuzz/regressions/$target/<what-it-does>   (ctest -L fuzz replays it)"
done
echo "=== fuzzing took $((SECONDS - start)) s ==="
exit "$failed"
