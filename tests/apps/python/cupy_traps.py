#!/usr/bin/env python3
"""CuPy written the way its users write it, with two traps for `overlap audit`.

A background stream runs a long chain of matrix products (its result is
read at the end), while the main loop streams batches of random data through
y = 2x + 1 on its own non-blocking stream and checks each result:

  (a) `pageable-async-copy`: each batch is uploaded straight from a NumPy
      array with `d_x.set(batch, stream=s)`: NumPy memory is pageable, so the
      copy is staged by the driver and the host waits for it. (`cp.asarray`
      would not show this: CuPy stages it through its pinned-memory pool.)
  (b) `device-synchronize`: the loop waits for each batch with
      `cupy.cuda.Device().synchronize()`, which also waits for the
      background stream's matrix products, although only stream s's work
      is needed.

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
MATRIX = 4096  # background: MATRIX x MATRIX float32 products
PRODUCTS = 40  # about 100 ms of products on an H100
CHECKED_ROWS = 8


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
    a_host = rng.standard_normal((MATRIX, MATRIX), dtype=np.float32)
    b_host = rng.standard_normal((MATRIX, MATRIX), dtype=np.float32)

    s = cp.cuda.Stream(non_blocking=True)
    background = cp.cuda.Stream(non_blocking=True)
    d_x = cp.empty(BATCH_ELEMENTS, dtype=cp.float32)
    out = cupyx.empty_pinned(BATCH_ELEMENTS, dtype=np.float32)  # results come back to pinned memory
    staging = cupyx.empty_pinned(BATCH_ELEMENTS, dtype=np.float32) if args.repaired else None

    with background:  # independent work, read only at the end
        a = cp.asarray(a_host)
        b = cp.asarray(b_host)
        c = cp.empty((MATRIX, MATRIX), dtype=cp.float32)
        cp.matmul(a, b, out=c)  # warm-up: cuBLAS is set up before the timed part
    with s:
        (2 * d_x + 1).get(stream=s, out=out, blocking=False)  # warm-up: the kernels are compiled now
    background.synchronize()
    s.synchronize()

    start = time.perf_counter()
    with background:
        for _ in range(PRODUCTS):
            cp.matmul(a, b, out=c)

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

    rows = cupyx.empty_pinned((CHECKED_ROWS, MATRIX), dtype=np.float32)
    c[:CHECKED_ROWS].get(stream=background, out=rows, blocking=False)
    background.synchronize()
    elapsed_ms = (time.perf_counter() - start) * 1000.0

    reference = a_host[:CHECKED_ROWS].astype(np.float64) @ b_host.astype(np.float64)
    if not np.allclose(rows, reference, rtol=1e-2, atol=0.5):  # loose enough for TF32, were it on
        worst = float(np.max(np.abs(rows - reference)))
        print(f"{name}: background product wrong (largest difference {worst})", file=sys.stderr)
        return 1
    print(f"{name}: ok {elapsed_ms:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
