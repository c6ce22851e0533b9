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
[ ${#missing[@]} -eq 0 ] && exit 0

echo "overlap: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "overlap: run as root or install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
