// app_graph_memory_race -> `race` with a graph's memory free node (possible: a warning)
//
// A graph built by hand, launched 4 times on one stream: an allocation node
// gives it a scratch buffer, `fill` writes y = 2x + 1 into the scratch, and
// `keep` copies the scratch out to z on a branch; a free node returns the
// scratch. The free node waits for `fill` only: nothing orders it after
// `keep`, so the graph may free the scratch while `keep` still reads it.
// The audit must name `keep` and the free node, from the nodes' parameters
// and the graph's edges (the memory nodes have no device record).
//
// --repaired: the free node also waits for `keep`; z is checked.
#include "app_support.hpp"

/// y = 2x + 1.
__global__ void fill(const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = app::scale_reference(x[i]);
}

/// z = y.
__global__ void keep(const float* y, float* z, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    z[i] = y[i];
}

namespace {

constexpr std::size_t elements = 4 * app::MiB + 333;
constexpr int launches = 4;

cudaGraphNode_t add_kernel(cudaGraph_t graph, const cudaGraphNode_t* after, std::size_t count, void* kernel,
                           void** args) {
  cudaKernelNodeParams p{};
  p.func = kernel;
  p.gridDim = dim3(app::blocks_for(elements));
  p.blockDim = dim3(app::threads_per_block);
  p.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CHECK(cudaGraphAddKernelNode(&node, graph, after, count, &p));
  return node;
}

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_graph_memory_race");
  const bool repaired = args.repaired();

  float* h_x = app::alloc_pinned<float>(elements);
  float* h_z = app::alloc_pinned<float>(elements);
  float* x = app::alloc_device<float>(elements);
  float* z = app::alloc_device<float>(elements);
  app::fill_random(h_x, elements, 31);
  const std::vector<cudaStream_t> streams = app::create_streams(1, cudaStreamNonBlocking);
  CHECK(cudaMemcpyAsync(x, h_x, elements * sizeof(float), cudaMemcpyHostToDevice, streams[0]));
  int device = 0;
  CHECK(cudaGetDevice(&device));

  cudaGraph_t graph = nullptr;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = device;
  alloc.bytesize = elements * sizeof(float);
  cudaGraphNode_t allocated = nullptr;
  CHECK(cudaGraphAddMemAllocNode(&allocated, graph, nullptr, 0, &alloc));
  auto* scratch = static_cast<float*>(alloc.dptr);
  std::size_t n = elements;
  void* fill_args[] = {&x, &scratch, &n};
  void* keep_args[] = {&scratch, &z, &n};
  const cudaGraphNode_t filled = add_kernel(graph, &allocated, 1, reinterpret_cast<void*>(fill), fill_args);
  const cudaGraphNode_t kept = add_kernel(graph, &filled, 1, reinterpret_cast<void*>(keep), keep_args);
  // The trap (unrepaired): the free waits for fill, not for keep.
  const cudaGraphNode_t before_free[] = {filled, kept};
  cudaGraphNode_t freed = nullptr;
  CHECK(cudaGraphAddMemFreeNode(&freed, graph, before_free, repaired ? 2 : 1, scratch));
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  const app::Timer timer;
  for (int i = 0; i < launches; ++i) CHECK(cudaGraphLaunch(exec, streams[0]));
  CHECK(cudaMemcpyAsync(h_z, z, elements * sizeof(float), cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaStreamSynchronize(streams[0]));
  const double elapsed = timer.ms();

  // What keep copied is right only where the scratch was not freed first: checked when repaired.
  if (repaired) app::verify_scaled(h_x, h_z, elements, "z");
  app::destroy_streams(streams);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  app::free_device(z);
  app::free_device(x);
  app::free_pinned(h_z);
  app::free_pinned(h_x);
  args.print_ok(elapsed);
  return 0;
}
