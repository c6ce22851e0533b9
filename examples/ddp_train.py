#!/usr/bin/env python3
"""A small DistributedDataParallel training job: one process per GPU, NCCL.

Run it the way a training job runs, under torchrun, and audit it:

    overlap audit -- torchrun --standalone --nproc-per-node 2 examples/ddp_train.py

Each rank trains a stack of linear layers on random batches. DDP all-reduces
gradients in buckets while backward still computes the earlier layers, on
NCCL's own stream: that is the communication/compute overlap the audit
measures per rank. The steps run between cudaProfilerStart and
cudaProfilerStop (torch.cuda.profiler), so the audit's steady state is the
training loop, not NCCL's and PyTorch's startup; each step is also an NVTX
range named "step" for Nsight Systems.

    --profile DIR   also record the steps with torch.profiler and write each
                    rank's Chrome trace to DIR/rank<N>.json (what Holistic
                    Trace Analysis reads; bench/hta_compare.py compares)
    --serialize     put the all-reduces on the compute stream (DDP hook that
                    waits for backward): what the audit flags as
                    communication serialized behind compute
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="training steps recorded (default 20)")
    parser.add_argument("--warmup", type=int, default=5, help="steps before them (default 5)")
    parser.add_argument("--width", type=int, default=4096, help="features per layer (default 4096)")
    parser.add_argument("--layers", type=int, default=8, help="linear layers (default 8)")
    parser.add_argument("--batch", type=int, default=2048, help="rows per batch (default 2048)")
    parser.add_argument("--profile", metavar="DIR", help="write each rank's torch.profiler trace to DIR")
    parser.add_argument("--serialize", action="store_true", help="all-reduce on the compute stream")
    return parser.parse_args()


def serialized_allreduce(state, bucket):
    """All-reduces a gradient bucket on the current (compute) stream."""
    del state
    tensor = bucket.buffer()
    dist.all_reduce(tensor, async_op=False)
    tensor.div_(dist.get_world_size())
    future = torch.futures.Future()
    future.set_result(tensor)
    return future


def main():
    args = parse_args()
    # NVLink multicast stays off wherever this runs on a shared host.
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        os.environ.setdefault(name, "0" if name == "NCCL_NVLS_ENABLE" else "1")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank = dist.get_rank()
    torch.manual_seed(1234 + rank)

    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers).cuda(), device_ids=[local_rank], bucket_cap_mb=25)
    if args.serialize:
        model.register_comm_hook(None, serialized_allreduce)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(args.batch, args.width, device="cuda")
    targets = torch.randn(args.batch, args.width, device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()

    profiler = None
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        path = os.path.join(args.profile, f"rank{rank}.json")
        # A schedule marks each step (ProfilerStep#N), which HTA uses to keep
        # the kernels launched inside the steps, as the audit keeps the NVTX
        # range "step"; the trace is written when the last step ends.
        profiler = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=0, warmup=0, active=args.steps, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(path),
        )
        profiler.start()
    torch.cuda.profiler.start()
    for _ in range(args.steps):
        torch.cuda.nvtx.range_push("step")
        loss = step()
        torch.cuda.nvtx.range_pop()
        if profiler is not None:
            profiler.step()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    if profiler is not None:
        profiler.stop()
    print(f"rank {rank}: {args.steps} steps, loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
