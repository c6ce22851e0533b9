"""A small MLP step captured once in a CUDA graph (torch.cuda.graph) and
replayed for each batch, its input copied into the graph's static buffer
first, the way CUDA-graph training and inference loops run.
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.manual_seed(2)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
static_in = torch.randn(512, 1024, device="cuda")
warm = torch.cuda.Stream()
warm.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(warm), torch.no_grad():
    for _ in range(3):
        model(static_in)
torch.cuda.current_stream().wait_stream(warm)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph), torch.no_grad():
    static_out = model(static_in)
batches = [torch.randn(512, 1024).pin_memory() for _ in range(4)]
checksum = 0.0
for step in range(STEPS):
    with torch.profiler.record_function("replay_step"):
        static_in.copy_(batches[step % 4], non_blocking=True)
        graph.replay()
        checksum += float(static_out[0, 0])
print(f"graph replay: {STEPS} steps, checksum {checksum:.4f}")
