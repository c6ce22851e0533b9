// app_race_kernels -> `race` (seed: the Numba article's two-stream example)
//
// kernel1 on stream1 writes y = 2x + 1; kernel2 on stream2 reads y and writes
// z = y / 2. Nothing orders kernel2 after kernel1: they are on different
// streams and no event joins them, so kernel2 may read y before (or while)
// kernel1 writes it. The audit must name both kernels. z is not checked in
// this variant: its value depends on timing.
//
// --repaired (fixed): cudaEventRecord(done, stream1) after kernel1 and
// cudaStreamWaitEvent(stream2, done) before kernel2; z is checked.
#include "app_support.hpp"

/// y = 2x + 1.
__global__ void kernel1(const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = app::scale_reference(x[i]);
}

/// z = y / 2 (exact).
__global__ void kernel2(const float* y, float* z, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    z[i] = 0.5F * y[i];
}

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_race_kernels");
  const bool repaired = args.repaired();

  const std::size_t n = 4 * app::MiB / sizeof(float) + 4321;
  float* h_x = app::alloc_pinned<float>(n);
  float* h_z = app::alloc_pinned<float>(n);
  float* d_x = app::alloc_device<float>(n);
  float* d_y = app::alloc_device<float>(n);
  float* d_z = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  cudaStream_t stream1 = streams[0];
  cudaStream_t stream2 = streams[1];
  cudaEvent_t done = nullptr;
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  app::fill_random(h_x, n, 12);

  const app::Timer timer;
  CHECK(cudaMemcpyAsync(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice, stream1));
  kernel1<<<app::blocks_for(n), app::threads_per_block, 0, stream1>>>(d_x, d_y, n);
  CHECK(cudaGetLastError());
  if (repaired) {
    CHECK(cudaEventRecord(done, stream1));
    CHECK(cudaStreamWaitEvent(stream2, done, 0));
  }
  // The race (without --repaired): nothing orders this after kernel1.
  kernel2<<<app::blocks_for(n), app::threads_per_block, 0, stream2>>>(d_y, d_z, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(h_z, d_z, n * sizeof(float), cudaMemcpyDeviceToHost, stream2));
  app::synchronize_streams(streams);
  const double elapsed = timer.ms();

  if (repaired) app::verify("z", h_z, n, [&](std::size_t i) { return 0.5F * app::scale_reference(h_x[i]); });
  CHECK(cudaEventDestroy(done));
  app::destroy_streams(streams);
  for (float* d : {d_z, d_y, d_x}) app::free_device(d);
  app::free_pinned(h_z);
  app::free_pinned(h_x);
  args.print_ok(elapsed);
  return 0;
}
