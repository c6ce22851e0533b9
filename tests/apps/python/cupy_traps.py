#!/usr/bin/env python3
"""CuPy written the way its users write it, with two traps for `overlap audit`.

A background stream runs one long kernel on one multiprocessor (a
RawKernel that spins for a given number of clock cycles: independent work
that leaves the rest of the GPU free), while the main loop streams batches of random data through
y = 2x + 1 on its own non-blocking stream and checks each result:

  (a) `pageable-async-copy`: each batch is uploaded straight from a NumPy
      array with `d_x.set(batch, stream=s)`: NumPy memory is pageable, so the
      copy is staged by the driver and the host waits for it. (`cp.asarray`
      would not show this: CuPy stages it through its pinned-memory pool.)
  (b) `device-synchronize`: the loop waits for each batch with
      `cupy.cuda.Device().synchronize()`, which also waits for the
      background stream's long kernel, although only stream s's work is
      needed.

--repaired: each batch goes through a pinned staging buffer
(`cupyx.empty_pinned`), and the loop waits with `s.synchronize()`.

Prints one line, `cupy_traps[ repaired]: ok <ms> ms`, and exits 0; exits 1
when a result is wrong. Needs no network.
"""

import argparse
import sys
import time

import cupy as cp
import cupyx
import numpy as np

BATCHES = 16
DISTINCT_BATCHES = 4  # the loop cycles through these
BATCH_ELEMENTS = (4 << 20) + 4321  # about 16 MiB of float32
SPIN_CYCLES = 150_000_000  # background: about 75 ms at the H100's ~2 GHz
SPIN_SOURCE = r'''
extern "C" __global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
'''


def random_batch(rng, n):
    """Random float32 of magnitude 0.5 to 1000, either sign: never zero."""
    magnitude = rng.uniform(0.5, 1000.0, n).astype(np.float32)
    return np.where(rng.random(n) < 0.5, -magnitude, magnitude).astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repaired", action="store_true", help="run without the two traps")
    args = parser.parse_args()
    name = "cupy_traps" + (" repaired" if args.repaired else "")

    rng = np.random.default_rng(1234)
    batches = [random_batch(rng, BATCH_ELEMENTS) for _ in range(DISTINCT_BATCHES)]
    expected = [2 * b + 1 for b in batches]  # float32: 2x is exact, + 1 rounds once, as on the GPU

    s = cp.cuda.Stream(non_blocking=True)
    background = cp.cuda.Stream(non_blocking=True)
    d_x = cp.empty(BATCH_ELEMENTS, dtype=cp.float32)
    out = cupyx.empty_pinned(BATCH_ELEMENTS, dtype=np.float32)  # results come back to pinned memory
    staging = cupyx.empty_pinned(BATCH_ELEMENTS, dtype=np.float32) if args.repaired else None

    spin = cp.RawKernel(SPIN_SOURCE, "spin")
    with background:  # independent work
        spin((1,), (1,), (np.int64(1000),))  # warm-up: compiled and loaded before the timed part
    with s:
        (2 * d_x + 1).get(stream=s, out=out, blocking=False)  # warm-up: the kernels are compiled now
    background.synchronize()
    s.synchronize()

    start = time.perf_counter()
    with background:
        spin((1,), (1,), (np.int64(SPIN_CYCLES),))
    for i in range(BATCHES):
        batch = batches[i % DISTINCT_BATCHES]
        if args.repaired:
            staging[...] = batch
            d_x.set(staging, stream=s)
        else:
            d_x.set(batch, stream=s)  # trap (a): a pageable upload
        with s:
            y = 2 * d_x + 1
            y.get(stream=s, out=out, blocking=False)
        if args.repaired:
            s.synchronize()
        else:
            cp.cuda.Device().synchronize()  # trap (b): waits for the background stream too
        if not np.array_equal(out, expected[i % DISTINCT_BATCHES]):
            bad = int(np.count_nonzero(out != expected[i % DISTINCT_BATCHES]))
            print(f"{name}: batch {i}: {bad} of {BATCH_ELEMENTS} elements wrong", file=sys.stderr)
            return 1

    background.synchronize()
    elapsed_ms = (time.perf_counter() - start) * 1000.0

    print(f"{name}: ok {elapsed_ms:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
