// app_managed_memory -> nothing (a clean app: the audit's `link` is what it checks)
//
// Managed memory moved in stream order, and a kernel reading pinned host
// memory in place. The data (16 MiB of floats and 4321 more, written by the
// host first, so its pages live on the host) is split over two non-blocking
// streams; each stream prefetches its half to the GPU, scales it in place
// into a managed output and prefetches the output back to the host (the
// output attached first, globally, in the first stream's order: on this
// device that changes nothing but is an op). A third kernel on the first stream then
// reads a pinned host buffer directly (zero-copy) and writes a device
// buffer, copied back to check it.
//
// --on-demand: no prefetches: the kernels fault the pages in and the host's
// check faults the outputs back, as code that never prefetches does.
#include "app_support.hpp"

namespace {

constexpr std::size_t elements = 16 * app::MiB / sizeof(float) + 4321;
constexpr std::size_t mapped_elements = app::MiB + 777;

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_managed_memory");
  const bool on_demand = args.flag("--on-demand");
  args.finish();

  int device = 0;
  CHECK(cudaGetDevice(&device));
  int concurrent = 0;
  CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
  if (concurrent == 0) args.fail("needs a device with concurrent managed access (prefetching)");

  float* x = nullptr;
  float* y = nullptr;
  CHECK(cudaMallocManaged(reinterpret_cast<void**>(&x), elements * sizeof(float)));
  CHECK(cudaMallocManaged(reinterpret_cast<void**>(&y), elements * sizeof(float)));
  app::fill_random(x, elements, 23);
  for (std::size_t i = 0; i < elements; ++i) y[i] = -1.0F;  // the output's pages start on the host too
  float* h_mapped = app::alloc_pinned<float>(mapped_elements);
  float* d_out = app::alloc_device<float>(mapped_elements);
  float* h_out = app::alloc_pinned<float>(mapped_elements);
  app::fill_random(h_mapped, mapped_elements, 29);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);

  const app::Timer timer;
  const std::vector<app::Chunk> halves = {{0, elements / 2}, {elements / 2, elements - elements / 2}};
  cudaMemLocation gpu{};
  gpu.type = cudaMemLocationTypeDevice;
  gpu.id = device;
  cudaMemLocation host{};
  host.type = cudaMemLocationTypeHost;
  CHECK(cudaStreamAttachMemAsync(streams[0], y, 0, cudaMemAttachGlobal));
  CHECK(cudaStreamSynchronize(streams[0]));
  for (std::size_t s = 0; s < streams.size(); ++s) {
    const app::Chunk& c = halves[s];
    const std::size_t bytes = c.count * sizeof(float);
    if (!on_demand) {
      CHECK(cudaMemPrefetchAsync(x + c.offset, bytes, gpu, 0, streams[s]));
      CHECK(cudaMemPrefetchAsync(y + c.offset, bytes, gpu, 0, streams[s]));
    }
    app::launch_scale(x + c.offset, y + c.offset, c.count, streams[s]);
    if (!on_demand) CHECK(cudaMemPrefetchAsync(y + c.offset, bytes, host, 0, streams[s]));
  }
  // Zero-copy: the kernel reads host memory over the link.
  app::launch_scale(h_mapped, d_out, mapped_elements, streams[0]);
  CHECK(cudaMemcpyAsync(h_out, d_out, mapped_elements * sizeof(float), cudaMemcpyDeviceToHost, streams[0]));
  app::synchronize_streams(streams);
  const double elapsed = timer.ms();

  app::verify_scaled(x, y, elements);
  app::verify_scaled(h_mapped, h_out, mapped_elements, "zero-copy output");
  app::destroy_streams(streams);
  app::free_pinned(h_out);
  app::free_device(d_out);
  app::free_pinned(h_mapped);
  CHECK(cudaFree(y));
  CHECK(cudaFree(x));
  args.print_ok(elapsed);
  return 0;
}
