"""A training-style loop that copies the next batch on a side stream while the
main stream computes on the current one, as data loaders do, but forgets
`wait_stream`: the main stream's GEMM reads a batch whose copy may still be
running. A real race (issue 36). With the arguments `STEPS fixed` the loop waits and
records the stream as it should: the repaired program.
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
fixed = len(sys.argv) > 2 and sys.argv[2] == "fixed"

torch.manual_seed(0)
batch, features = 4096, 2048
host = [torch.randn(batch, features).pin_memory() for _ in range(2)]
weight = torch.randn(features, features, device="cuda")
side = torch.cuda.Stream()
main = torch.cuda.current_stream()
current = host[0].to("cuda", non_blocking=True)
total = torch.zeros((), device="cuda")
for step in range(STEPS):
    with torch.profiler.record_function("train_step"):
        with torch.cuda.stream(side):
            upcoming = host[(step + 1) % 2].to("cuda", non_blocking=True)
        out = torch.relu(current @ weight)
        total += out.mean()
        if fixed:
            main.wait_stream(side)
            upcoming.record_stream(main)
        current = upcoming
torch.cuda.synchronize()
print(f"{'fixed' if fixed else 'racy'} loop: {STEPS} steps, checksum {total.item():.4f}")
