#!/usr/bin/env bash
# The Python package on the lent GPU machine (Python 3.12 with NumPy,
# PyTorch, CuPy, nanobind, scikit-build-core and pytest, but no network and
# none of overlap's Debian build dependencies, which travel in .devdeps/):
#   here:    scripts/stage-device-deps.sh      (fmt, yaml-cpp, CLI11, nlohmann-json)
#   device:  scripts/device-python.sh [STEP...] (results under $OUT; carry .devdeps)
#   steps:   install test bench   (default: all)
# `install` is `pip install .` without build isolation (nothing to fetch),
# into a target folder, for sm_90; libfmt and libyaml-cpp load from
# .devdeps through LD_LIBRARY_PATH. `test` runs the whole pytest suite, GPU
# tests included; `bench` runs `python -m overlap.bench`.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
deps=$PWD/.devdeps/usr
[ -d "$deps" ] || { echo "device-python: no .devdeps/ (run scripts/stage-device-deps.sh first)" >&2; exit 2; }
site=/tmp/overlap-site
export PYTHONPATH=$site LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
status=0
for s in ${*:-install test bench}; do
  started=$SECONDS
  case $s in
    install)
      python3 -m pip install --no-build-isolation --no-deps --no-index --target "$site" --upgrade . \
        -Cbuild-dir=build/python-device -Ccmake.define.CMAKE_PREFIX_PATH="$deps" \
        -Ccmake.define.CMAKE_CUDA_ARCHITECTURES=90 >"$OUT/python-install.log" 2>&1
      rc=$?
      tail -3 "$OUT/python-install.log" ;;
    test)
      python3 -m pytest -q -rs -p no:cacheprovider python/tests 2>&1 | tee "$OUT/python-tests.txt"
      rc=${PIPESTATUS[0]} ;;
    bench)
      python3 -m overlap.bench --json "$OUT/python-bench.json" 2>"$OUT/python-bench.stderr" | tee "$OUT/python-bench.txt"
      rc=${PIPESTATUS[0]} ;;
    *) echo "device-python: unknown step '$s'" >&2; rc=2 ;;
  esac
  echo "=== python $s: exit $rc ($((SECONDS - started)) s)"
  [ "$rc" -eq 0 ] || status=1
done
exit $status
