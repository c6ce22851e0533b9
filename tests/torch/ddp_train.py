"""A small DistributedDataParallel training loop, one process per GPU (run
with torchrun), each rank profiled with torch.profiler: its gradient
all-reduces (NCCL kernels on their own stream) overlap the backward pass's
computation. Writes OUT_DIR/rank{RANK}.json.

    torchrun --nproc-per-node 2 ddp_train.py OUT_DIR [STEPS]
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, record_function

out_dir = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
torch.manual_seed(rank)
layers = [torch.nn.Linear(4096, 4096) for _ in range(8)]
model = DistributedDataParallel(torch.nn.Sequential(*layers).cuda(), bucket_cap_mb=16)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
batches = [torch.randn(2048, 4096).pin_memory() for _ in range(2)]
config = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
for step in range(3):  # warm-up, not profiled
    loss = model(batches[step % 2].cuda(non_blocking=True)).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], experimental_config=config) as prof:
    for step in range(steps):
        with record_function("train_step"):
            loss = model(batches[step % 2].cuda(non_blocking=True)).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    torch.cuda.synchronize()
os.makedirs(out_dir, exist_ok=True)
prof.export_chrome_trace(os.path.join(out_dir, f"rank{rank}.json"))
dist.destroy_process_group()
print(f"rank {rank}: {steps} steps, loss {loss.item():.5f}")
