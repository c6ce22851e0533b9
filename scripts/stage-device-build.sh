#!/usr/bin/env bash
# Copies what the GPU machine runs from build/h100 into .devbuild/h100 (the
# executables and shared libraries, not the object files), so the carried
# working tree stays under the device tool's 64 MiB. Debian libraries the
# binaries need go to .devlibs/. Both folders are in .git/info/exclude.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .devbuild && mkdir -p .devbuild/h100 .devlibs
(cd build/h100 && find . -type f \( -perm -u+x -o -name '*.so' \) ! -path '*/CMakeFiles/*' -print0 |
  while IFS= read -r -d '' f; do
    mkdir -p "../../.devbuild/h100/$(dirname "$f")"
    # Large binaries lose their debug info; small ones (the test apps) keep
    # their symbols, which the audit names callers by.
    if [ "$(stat -c %s "$f")" -gt 2000000 ]; then strip --strip-debug -o "../../.devbuild/h100/$f" "$f"
    else cp "$f" "../../.devbuild/h100/$f"; fi
  done)
for lib in libfmt.so.9 libyaml-cpp.so.0.7 libbenchmark.so.1debian; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" .devlibs/
done
du -sh .devbuild .devlibs
