#!/usr/bin/env bash
# Unpacks Open MPI's Debian packages and the libraries they need beyond a
# base system into .devmpi/ (ignored by git), for scripts/mpi-device-run.sh
# on the lent GPU machines, which have no MPI and no network. About 21 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download openmpi-bin openmpi-common libopenmpi3 libevent-core-2.1-7 \
  libevent-pthreads-2.1-7 libfabric1 libhwloc15 libhwloc-plugins libpmix2 libucx0 libibverbs1 ibverbs-providers \
  libnl-3-200 libnl-route-3-200 libpsm2-2 libpsm-infinipath1 librdmacm1 libmunge2 libnuma1 libxnvctrl0 \
  libpciaccess0)
rm -rf .devmpi
mkdir -p .devmpi
for deb in "$work"/*.deb; do dpkg -x "$deb" .devmpi; done
rm -rf .devmpi/usr/share/doc .devmpi/usr/share/man
grep -qx '.devmpi/' "$(git rev-parse --git-dir)/info/exclude" 2>/dev/null ||
  echo '.devmpi/' >>"$(git rev-parse --git-dir)/info/exclude"
du -sh .devmpi
