#!/usr/bin/env bash
# `pip install .` as a Python user runs it, on a fresh clone: a new virtual
# environment, pip's build isolation (scikit-build-core and nanobind come
# from PyPI), the C++ dependencies from Debian (scripts/install-deps.sh).
# Then the package's CPU tests against the installed copy (not the build
# tree), from outside the checkout so nothing shadows the install; the GPU
# tests report as skipped without a device.
#   scripts/check-python-package.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=${1:-$(mktemp -d)}
mkdir -p "$work"
trap 'rm -rf "$work/venv" "$work/build"' EXIT
python3 -m venv "$work/venv"
py=$work/venv/bin/python
"$py" -m pip install --quiet --disable-pip-version-check --upgrade pip
# One CUDA architecture: a fat binary of the reference kernel adds minutes and tests nothing more here.
started=$SECONDS
"$py" -m pip install --quiet --disable-pip-version-check "$repo[test]" \
  -Cbuild-dir="$work/build" -Ccmake.define.CMAKE_CUDA_ARCHITECTURES=75-real
echo "pip install .: $((SECONDS - started)) s"
cd "$work"
REPO=$repo "$py" - <<'PY'
import os, overlap
print("installed:", os.path.dirname(overlap.__file__), overlap.__version__)
assert "site-packages" in overlap.__file__, overlap.__file__
t = overlap.simulate(os.path.join(os.environ["REPO"], "examples", "seed004.yaml"))
print("seed004 on unit:", t.total)
assert abs(t.total - 4.0) < 1e-9
PY
REPO=$repo "$py" -m pytest -q -rs -p no:cacheprovider "$repo/python/tests"
