// app_idle_gap -> `idle-gap`
//
// A loop of 8 iterations, each the clean pipeline (64 MiB, 16 chunks and a
// remainder, depth-first on 4 non-blocking streams) waited for with
// cudaStreamSynchronize on every stream. Then, with nothing in flight, the
// iteration allocates a 64 MiB pinned staging buffer it never needs and
// frees it again:
//
//     cudaMallocHost(&staging, 64 MiB); cudaFreeHost(staging);
//
// Pinning and unpinning 64 MiB takes milliseconds, and the GPU sits idle
// all that time waiting for the next iteration's work (most of the run on
// an H100).
//
// --repaired: the staging buffer allocated once before the loop and freed
// after it.
#include "app_support.hpp"

namespace {

constexpr std::size_t iterations = 8;
constexpr std::size_t staging_bytes = 64 * app::MiB;

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_idle_gap");
  const bool repaired = args.repaired();

  const std::size_t n = app::default_elements;
  const std::vector<app::Chunk> plan = app::split(n, 16);
  float* h_in = app::alloc_pinned<float>(n);
  float* h_out = app::alloc_pinned<float>(n);
  float* d_in = app::alloc_device<float>(n);
  float* d_out = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(4, cudaStreamNonBlocking);
  void* staging = nullptr;
  if (repaired) CHECK(cudaMallocHost(&staging, staging_bytes));
  app::fill_random(h_in, n, 11);

  const app::Timer timer;
  for (std::size_t it = 0; it < iterations; ++it) {
    app::issue_pipeline(h_in, d_in, d_out, h_out, plan, streams);
    app::synchronize_streams(streams);
    if (!repaired) {
      // The trap: the GPU has nothing to do while the host is in these calls.
      CHECK(cudaMallocHost(&staging, staging_bytes));
      CHECK(cudaFreeHost(staging));
    }
  }
  const double elapsed = timer.ms();

  app::verify_scaled(h_in, h_out, n);
  if (repaired) CHECK(cudaFreeHost(staging));
  app::destroy_streams(streams);
  app::free_device(d_out);
  app::free_device(d_in);
  app::free_pinned(h_out);
  app::free_pinned(h_in);
  args.print_ok(elapsed);
  return 0;
}
