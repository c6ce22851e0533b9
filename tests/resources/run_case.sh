#!/usr/bin/env bash
# One hostile input to the CLI under the hardening limits: at most 2 s of CPU
# time and 1 GiB of address space on one core. It must either be refused
# (exit 2 and exactly one line on stderr that says why) or succeed (exit 0).
#
#   run_case.sh OVERLAP CASE WORKDIR
set -uo pipefail
overlap=$1 case=$2 work=$3
mkdir -p "$work"
cpu_seconds=2
memory_bytes=$((1 << 30))

limited() {  # runs the CLI under the limits; stdout and stderr to files
  prlimit --cpu=$cpu_seconds --as=$memory_bytes -- timeout 30 "$overlap" "$@" >"$work/$case.out" 2>"$work/$case.err"
}

expect_refusal() {  # exit 2, one line on stderr containing $1
  local rc=$1 needle=$2
  local lines
  lines=$(wc -l <"$work/$case.err")
  if [[ $rc -ne 2 ]]; then echo "FAIL $case: exit $rc (expected 2)"; head -c 600 "$work/$case.err"; exit 1; fi
  if [[ $lines -ne 1 ]]; then echo "FAIL $case: $lines lines on stderr (expected 1)"; head -c 600 "$work/$case.err"; exit 1; fi
  if ! grep -qF -- "$needle" "$work/$case.err"; then
    echo "FAIL $case: stderr lacks '$needle'"; cat "$work/$case.err"; exit 1
  fi
  echo "ok $case: $(cat "$work/$case.err")"
}

expect_success() {  # exit 0 and stdout containing $1
  local rc=$1 needle=$2
  if [[ $rc -ne 0 ]]; then echo "FAIL $case: exit $rc (expected 0; 137 or 152: a limit killed it)"; head -c 600 "$work/$case.err"; exit 1; fi
  if ! grep -qF -- "$needle" "$work/$case.out"; then
    echo "FAIL $case: stdout lacks '$needle'"; head -c 600 "$work/$case.out"; exit 1
  fi
  echo "ok $case"
}

pipeline_spec() {  # chunks streams -> a spec file
  local file="$work/$case.yaml"
  printf 'name: %s\ndevice: unit\npipeline:\n  chunks: %s\n  streams: %s\n  stage_time: {h2d: 1, kernel: 1, d2h: 1}\n' \
    "$case" "$1" "$2" >"$file"
  echo "$file"
}

case $case in
  chunks-1e8)
    limited simulate --h2d 1 --kernel 1 --d2h 1 --chunks 100000000 --streams 4
    expect_refusal $? "over the limit of 2000000 ops" ;;
  streams-1e5)
    limited simulate --h2d 1 --kernel 1 --d2h 1 --chunks 4 --streams 100000
    expect_success $? "Total time" ;;
  streams-1e6)
    limited simulate --h2d 1 --kernel 1 --d2h 1 --chunks 4 --streams 1000000
    expect_success $? "Total time" ;;
  check-streams-1e6)
    limited check "$(pipeline_spec 4 1000000)"
    rc=$?
    [[ $rc -eq 1 ]] && rc=0  # findings are a result, not a failure
    expect_success $rc "" ;;
  check-streams-1e5-busy)
    limited check "$(pipeline_spec 100000 100000)"
    rc=$?
    if [[ $rc -eq 2 ]]; then expect_refusal $rc "limit"; else [[ $rc -eq 1 ]] && rc=0; expect_success $rc ""; fi ;;
  check-urandom)
    limited check /dev/urandom
    expect_refusal $? "larger than the 8 MiB a spec file may be" ;;
  check-endless-pipe)
    yes 'name: endless' | limited check /dev/stdin
    expect_refusal "${PIPESTATUS[1]}" "larger than the 8 MiB a spec file may be" ;;
  times-1e308)
    limited simulate --h2d 1e308 --kernel 1e308 --d2h 1e308
    expect_refusal $? "expected milliseconds from 0 to 1e12" ;;
  times-1e308-spec)
    printf 'name: huge\ndevice: unit\npipeline:\n  chunks: 3\n  total_time: {h2d: 1e308, kernel: 1e308, d2h: 1e308}\n' >"$work/$case.yaml"
    limited simulate "$work/$case.yaml"
    expect_refusal $? "expected a number from 0 to 1e12" ;;
  times-at-limit)
    limited simulate --h2d 1e12 --kernel 1e12 --d2h 1e12 --chunks 1000 --streams 3
    rc=$?
    if grep -qE '[0-9]{21}|inf|nan' "$work/$case.out"; then echo "FAIL $case: unreadable number"; cat "$work/$case.out"; exit 1; fi
    expect_success $rc "Total time" ;;
  control-bytes)
    printf 'name: x\nops:\n  - {op: kernel, "bad\\x01\\nfield": 1}\n' >"$work/$case.yaml"
    limited check "$work/$case.yaml"
    expect_refusal $? "unknown field 'bad\\x01\\nfield'" ;;
  unknown-command-help)
    limited frobnicate --help
    expect_refusal $? "unknown command 'frobnicate'" ;;
  trace-endless-line)
    limited audit --from /dev/zero
    expect_refusal $? "a record longer than" ;;
  deep-nesting)
    python3 -c "print('[' * 100000 + ']' * 100000)" >"$work/$case.yaml"
    limited check "$work/$case.yaml"
    expect_refusal $? "nested too deep" ;;
  *) echo "unknown case $case"; exit 1 ;;
esac
