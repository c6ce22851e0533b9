#!/usr/bin/env bash
# Installs the Debian packages overlap builds with, when any is missing.
# Nothing else is fetched: CUDA, if present, is used from /usr/local/cuda.
#   scripts/install-deps.sh        what `make test` needs
#   scripts/install-deps.sh fuzz   that and Clang's libFuzzer (scripts/fuzz.sh)
set -euo pipefail

# python3, chromium and fonts-dejavu-core: the browser test of the HTML
# reports (tests/browser) and scripts/screenshot-report.sh. pkgconf: the
# pkg-config check of scripts/check-install.sh. doxygen: the API reference
# and its zero-warning test. file and dpkg-dev: CPack's Debian package
# (dpkg-shlibdeps), checked by scripts/check-package.sh.
packages=(cmake ninja-build g++ make libfmt-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
          libgtest-dev libbenchmark-dev python3 chromium fonts-dejavu-core pkgconf
          doxygen file dpkg-dev)
# The fuzz targets: Clang with its sanitizer and libFuzzer runtimes, and
# llvm-symbolizer (from llvm) so sanitizer reports name files and lines.
if [ "${1:-}" = fuzz ]; then
  packages+=(clang libclang-rt-dev llvm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
install_python_packages() {
  # The Python package (python/, pyproject.toml) builds with nanobind and
  # scikit-build-core and is tested with pytest and NumPy, for the python3
  # on PATH, from PyPI (Debian 12 packages neither nanobind nor
  # scikit-build-core).
  local wanted=("nanobind>=2.2" "scikit-build-core>=0.10" "pytest>=7" "numpy>=1.22")
  python3 - "${wanted[@]}" <<'PY' && return 0
import sys
from importlib.metadata import version, PackageNotFoundError
import re
for requirement in sys.argv[1:]:
    name, minimum = re.split(r">=", requirement)
    try:
        have = tuple(int(p) for p in re.findall(r"\d+", version(name))[:2])
    except PackageNotFoundError:
        sys.exit(1)
    if have < tuple(int(p) for p in minimum.split(".")[:2]):
        sys.exit(1)
PY
  echo "overlap: installing ${wanted[*]} for $(command -v python3)" >&2
  python3 -m pip install --quiet --disable-pip-version-check "${wanted[@]}"
}

# The Compute Sanitizer API (headers and libsanitizer-public.so), which
# `--accesses measured` is built with (tools/measure): from the CUDA toolkit
# where it has compute-sanitizer/, else NVIDIA's wheel of the toolkit's
# version. Without it everything else builds; measured accesses are off.
install_sanitizer_api() {
  [ -x /usr/local/cuda/bin/nvcc ] || return 0
  [ -f /usr/local/cuda/compute-sanitizer/include/sanitizer.h ] && return 0
  local release
  release=$(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
  [ -n "$release" ] || return 0
  python3 -c "import importlib.metadata as m; m.version('nvidia-cuda-sanitizer-api')" 2>/dev/null && return 0
  echo "overlap: installing nvidia-cuda-sanitizer-api==$release.* (the Compute Sanitizer API)" >&2
  python3 -m pip install --quiet --disable-pip-version-check "nvidia-cuda-sanitizer-api==$release.*" ||
    echo "overlap: the Compute Sanitizer API could not be installed: measured accesses will be off" >&2
}

if [ ${#missing[@]} -eq 0 ]; then
  install_python_packages
  install_sanitizer_api
  exit 0
fi

echo "overlap: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "overlap: run as root or install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_python_packages
install_sanitizer_api
