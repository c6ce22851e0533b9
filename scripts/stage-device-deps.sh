#!/usr/bin/env bash
# Copies the Debian packages overlap builds against (headers, CMake files,
# libraries) into .devdeps/usr, for scripts/device-package.sh and
# scripts/device-build.sh on the lent GPU machine, which has none of them and no network. .devdeps/ is in
# .git/info/exclude; carry it to the device with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .devdeps
# GoogleTest and Google Benchmark too: scripts/device-build.sh builds the
# tests and the benchmark programs there.
for package in libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev nlohmann-json3-dev \
               libgtest-dev libbenchmark-dev libbenchmark1debian; do
  dpkg -L "$package" | while read -r path; do
    { [ -f "$path" ] || [ -L "$path" ]; } || continue
    case "$path" in /usr/share/doc/* | /usr/share/lintian/*) continue ;; esac
    mkdir -p ".devdeps$(dirname "$path")"
    cp -a "$path" ".devdeps$path"
  done
done
du -sh .devdeps
