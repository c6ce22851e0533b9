// app_alloc_in_loop -> `implicit-synchronization`
//
// A pipeline on 4 non-blocking streams (64 MiB, 16 chunks and a remainder,
// depth-first, 12 passes) that allocates each chunk's device output as a
// scratch buffer inside the loop:
//
//     upload chunk; cudaMalloc(&scratch); kernel -> scratch; download scratch; cudaFree(scratch);
//
// cudaFree (and, by the CUDA documentation, cudaMalloc) synchronizes the
// whole device: each free waits until every chunk in flight is done, so the
// chunks run one after another instead of overlapping (about 2x slower on an
// H100).
//
// --repaired: one scratch buffer per stream, allocated once before the loop
// and freed after it (each stream reuses its own in stream order).
#include "app_support.hpp"

namespace {

constexpr std::size_t passes = 12;

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_alloc_in_loop");
  const bool repaired = args.repaired();

  const std::size_t n = app::default_elements;
  const std::vector<app::Chunk> plan = app::split(n, 16);
  float* h_in = app::alloc_pinned<float>(n);
  float* h_out = app::alloc_pinned<float>(n);
  float* d_in = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(4, cudaStreamNonBlocking);
  std::vector<float*> scratch_of_stream;
  if (repaired) {
    for (std::size_t s = 0; s < streams.size(); ++s)
      scratch_of_stream.push_back(app::alloc_device<float>(plan[0].count));
  }
  app::fill_random(h_in, n, 6);

  const app::Timer timer;
  for (std::size_t pass = 0; pass < passes; ++pass) {
    for (std::size_t k = 0; k < plan.size(); ++k) {
      const app::Chunk& c = plan[k];
      cudaStream_t stream = streams[k % streams.size()];
      CHECK(cudaMemcpyAsync(d_in + c.offset, h_in + c.offset, c.bytes(), cudaMemcpyHostToDevice, stream));
      float* scratch = nullptr;
      if (repaired) {
        scratch = scratch_of_stream[k % streams.size()];
      } else {
        // The trap: allocation and free inside the loop, with chunks in flight.
        CHECK(cudaMalloc(&scratch, c.bytes()));
      }
      app::launch_scale(d_in + c.offset, scratch, c.count, stream);
      CHECK(cudaMemcpyAsync(h_out + c.offset, scratch, c.bytes(), cudaMemcpyDeviceToHost, stream));
      if (!repaired) CHECK(cudaFree(scratch));
    }
  }
  app::synchronize_streams(streams);
  const double elapsed = timer.ms();

  app::verify_scaled(h_in, h_out, n);
  for (float* scratch : scratch_of_stream) app::free_device(scratch);
  app::destroy_streams(streams);
  app::free_device(d_in);
  app::free_pinned(h_out);
  app::free_pinned(h_in);
  args.print_ok(elapsed);
  return 0;
}
