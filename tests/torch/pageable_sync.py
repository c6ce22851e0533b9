"""A loop with the two habits that stall PyTorch pipelines: batches copied
from pageable (not pinned) host tensors with non_blocking=True, which the host
waits for anyway, and a `.item()` each step, which waits for the GPU.
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.manual_seed(1)
batches = [torch.randn(2048, 4096) for _ in range(STEPS)]
weight = torch.randn(4096, 1024, device="cuda")
losses = []
for step, batch in enumerate(batches):
    with torch.profiler.record_function("train_step"):
        x = batch.to("cuda", non_blocking=True)
        loss = torch.tanh(x @ weight).square().mean()
        losses.append(loss.item())
print(f"pageable loop: {STEPS} steps, last loss {losses[-1]:.5f}")
