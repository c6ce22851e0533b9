#!/usr/bin/env python3
"""PyTorch written the way its users write it, with two traps for `overlap audit`.

A background stream runs one long kernel on one multiprocessor
(`torch.cuda._sleep`, a spin of a given number of clock cycles: independent
work that leaves the rest of the GPU free), while the main loop streams batches of random data through
y = 2x + 1 on a side stream and checks each result:

  (a) `pageable-async-copy`: each batch goes to the GPU with
      `torch.from_numpy(batch).to("cuda", non_blocking=True)` inside
      `with torch.cuda.stream(s):`. The NumPy memory is pageable, so
      non_blocking does not help: the copy is staged by the driver and the
      host waits for it.
  (b) `device-synchronize`: the loop waits for each batch with
      `torch.cuda.synchronize()`, which also waits for the background
      stream's long kernel, although only stream s's work is needed.

--repaired: each batch goes through a pinned staging tensor
(`torch.empty(..., pin_memory=True)`), and the loop waits with
`s.synchronize()`.

Prints one line, `torch_traps[ repaired]: ok <ms> ms`, and exits 0; exits 1
when a result is wrong. Needs no network.
"""

import argparse
import sys
import time

import numpy as np
import torch

BATCHES = 16
DISTINCT_BATCHES = 4  # the loop cycles through these
BATCH_ELEMENTS = (4 << 20) + 4321  # about 16 MiB of float32
SPIN_CYCLES = 150_000_000  # background: about 75 ms at the H100's ~2 GHz


def random_batch(rng, n):
    """Random float32 of magnitude 0.5 to 1000, either sign: never zero."""
    magnitude = rng.uniform(0.5, 1000.0, n).astype(np.float32)
    return np.where(rng.random(n) < 0.5, -magnitude, magnitude).astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repaired", action="store_true", help="run without the two traps")
    args = parser.parse_args()
    name = "torch_traps" + (" repaired" if args.repaired else "")

    rng = np.random.default_rng(1234)
    batches = [random_batch(rng, BATCH_ELEMENTS) for _ in range(DISTINCT_BATCHES)]
    expected = [2 * b + 1 for b in batches]  # float32: 2x is exact, + 1 rounds once, as on the GPU

    s = torch.cuda.Stream()
    background = torch.cuda.Stream()
    out = torch.empty(BATCH_ELEMENTS, dtype=torch.float32, pin_memory=True)  # results come back to pinned memory
    staging = torch.empty(BATCH_ELEMENTS, dtype=torch.float32, pin_memory=True) if args.repaired else None

    with torch.cuda.stream(background):  # independent work
        torch.cuda._sleep(1000)  # warm-up: its kernel is loaded before the timed part
    with torch.cuda.stream(s):
        warm = torch.empty(BATCH_ELEMENTS, dtype=torch.float32, device="cuda")
        out.copy_(2 * warm + 1, non_blocking=True)  # warm-up of the loop's kernels
    background.synchronize()
    s.synchronize()

    start = time.perf_counter()
    with torch.cuda.stream(background):
        torch.cuda._sleep(SPIN_CYCLES)

    for i in range(BATCHES):
        batch = batches[i % DISTINCT_BATCHES]
        with torch.cuda.stream(s):
            if args.repaired:
                staging.copy_(torch.from_numpy(batch))
                x = staging.to("cuda", non_blocking=True)
            else:
                x = torch.from_numpy(batch).to("cuda", non_blocking=True)  # trap (a): a pageable upload
            y = 2 * x + 1
            out.copy_(y, non_blocking=True)
        if args.repaired:
            s.synchronize()
        else:
            torch.cuda.synchronize()  # trap (b): waits for the background stream too
        result = out.numpy()
        if not np.array_equal(result, expected[i % DISTINCT_BATCHES]):
            bad = int(np.count_nonzero(result != expected[i % DISTINCT_BATCHES]))
            print(f"{name}: batch {i}: {bad} of {BATCH_ELEMENTS} elements wrong", file=sys.stderr)
            return 1

    background.synchronize()
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    print(f"{name}: ok {elapsed_ms:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
