// app_graph_race -> `race` inside CUDA graphs (kernels: possible, a warning)
//
// Two graphs of the same work, launched 4 times each on one stream: `fill`
// writes y = 2x + 1 on a branch, `halve` writes z = y / 2 on the main line,
// after `seed` (which copies x in). The first graph is captured from two
// streams (the branch forks off after `seed` through an event and joins
// back only at the end, as capture requires); the second is built by hand
// with cudaGraphAddKernelNode and edges seed -> fill, seed -> halve. In
// neither does any edge order `halve` after `fill`: the graph may run halve
// while fill writes y, or before. The audit must name both kernels, in
// both graphs, from the nodes' parameters and the graphs' edges.
//
// --repaired: the main line waits for the branch before `halve` (captured),
// and the hand-built graph has the edge fill -> halve; z is checked.
#include "app_support.hpp"

/// x_device = x (a copy by a kernel, so the graph has three kernels).
__global__ void seed(const float* x, float* x_device, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    x_device[i] = x[i];
}

/// y = 2x + 1.
__global__ void fill(const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = app::scale_reference(x[i]);
}

/// z = y / 2 (exact).
__global__ void halve(const float* y, float* z, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    z[i] = 0.5F * y[i];
}

namespace {

struct Buffers {
  float* x = nullptr;  // the input, on the device
  float* x_device = nullptr;
  float* y = nullptr;
  float* z = nullptr;
  std::size_t n = 0;
};

cudaGraph_t capture(const Buffers& b, cudaStream_t main_line, cudaStream_t branch, bool repaired) {
  cudaEvent_t forked = nullptr;
  cudaEvent_t filled = nullptr;
  CHECK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(main_line, cudaStreamCaptureModeThreadLocal));
  seed<<<app::blocks_for(b.n), app::threads_per_block, 0, main_line>>>(b.x, b.x_device, b.n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(forked, main_line));
  CHECK(cudaStreamWaitEvent(branch, forked));
  fill<<<app::blocks_for(b.n), app::threads_per_block, 0, branch>>>(b.x_device, b.y, b.n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(filled, branch));
  if (repaired) CHECK(cudaStreamWaitEvent(main_line, filled));
  // The race (without --repaired): nothing orders this after fill.
  halve<<<app::blocks_for(b.n), app::threads_per_block, 0, main_line>>>(b.y, b.z, b.n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamWaitEvent(main_line, filled));  // the join capture requires
  CHECK(cudaStreamEndCapture(main_line, &graph));
  CHECK(cudaEventDestroy(filled));
  CHECK(cudaEventDestroy(forked));
  return graph;
}

cudaGraphNode_t add_kernel(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& after, void* function,
                           const float* in, float* out, std::size_t* n) {
  void* args[] = {&in, &out, n};
  cudaKernelNodeParams params{};
  params.func = function;
  params.gridDim = dim3(app::blocks_for(*n));
  params.blockDim = dim3(app::threads_per_block);
  params.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CHECK(cudaGraphAddKernelNode(&node, graph, after.data(), after.size(), &params));
  return node;
}

cudaGraph_t build_by_hand(Buffers& b, bool repaired) {
  cudaGraph_t graph = nullptr;
  CHECK(cudaGraphCreate(&graph, 0));
  const cudaGraphNode_t seeded = add_kernel(graph, {}, reinterpret_cast<void*>(&seed), b.x, b.x_device, &b.n);
  const cudaGraphNode_t filled =
      add_kernel(graph, {seeded}, reinterpret_cast<void*>(&fill), b.x_device, b.y, &b.n);
  std::vector<cudaGraphNode_t> before_halve{seeded};
  if (repaired) before_halve.push_back(filled);
  (void)add_kernel(graph, before_halve, reinterpret_cast<void*>(&halve), b.y, b.z, &b.n);
  return graph;
}

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_graph_race");
  const bool repaired = args.repaired();
  constexpr int launches = 4;

  Buffers b;
  b.n = 4 * app::MiB / sizeof(float) + 4321;
  float* h_x = app::alloc_pinned<float>(b.n);
  float* h_z = app::alloc_pinned<float>(b.n);
  b.x = app::alloc_device<float>(b.n);
  b.x_device = app::alloc_device<float>(b.n);
  b.y = app::alloc_device<float>(b.n);
  b.z = app::alloc_device<float>(b.n);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  app::fill_random(h_x, b.n, 29);
  CHECK(cudaMemcpyAsync(b.x, h_x, b.n * sizeof(float), cudaMemcpyHostToDevice, streams[0]));

  cudaGraph_t graphs[2] = {capture(b, streams[0], streams[1], repaired), build_by_hand(b, repaired)};
  const app::Timer timer;
  for (cudaGraph_t graph : graphs) {
    cudaGraphExec_t exec = nullptr;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < launches; ++i) CHECK(cudaGraphLaunch(exec, streams[0]));
    CHECK(cudaMemcpyAsync(h_z, b.z, b.n * sizeof(float), cudaMemcpyDeviceToHost, streams[0]));
    CHECK(cudaStreamSynchronize(streams[0]));
    if (repaired)
      app::verify("z", h_z, b.n, [&](std::size_t i) { return 0.5F * app::scale_reference(h_x[i]); });
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  const double elapsed = timer.ms();

  app::destroy_streams(streams);
  for (float* d : {b.z, b.y, b.x_device, b.x}) app::free_device(d);
  app::free_pinned(h_z);
  app::free_pinned(h_x);
  args.print_ok(elapsed);
  return 0;
}
