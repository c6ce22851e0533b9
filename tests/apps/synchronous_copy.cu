// app_synchronous_copy -> `synchronous-copy`
//
// A pipeline on 4 non-blocking streams (64 MiB in 64 chunks of 1 MiB and a
// remainder; 16 passes, each waited for before the next) whose uploads are
// plain
//
//     cudaMemcpy(d_in + offset, h_in + offset, bytes, cudaMemcpyHostToDevice);
//
// from pinned memory. The non-blocking streams do not wait for it, but the
// host does: it cannot issue the chunk's kernel and download, nor the next
// upload, until the copy is done, so the copy engine idles for the round
// trip (copy done -> host returns -> next calls -> next copy starts) after
// every chunk, about a third of the run with 1 MiB chunks on an H100.
//
// --repaired: cudaMemcpyAsync on the chunk's stream.
#include "app_support.hpp"

namespace {

constexpr std::size_t passes = 16;

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_synchronous_copy");
  const bool repaired = args.repaired();

  const std::size_t n = app::default_elements;
  const std::vector<app::Chunk> plan = app::split(n, 64);
  float* h_in = app::alloc_pinned<float>(n);
  float* h_out = app::alloc_pinned<float>(n);
  float* d_in = app::alloc_device<float>(n);
  float* d_out = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(4, cudaStreamNonBlocking);
  app::fill_random(h_in, n, 4);

  const app::Timer timer;
  for (std::size_t pass = 0; pass < passes; ++pass) {
    for (std::size_t k = 0; k < plan.size(); ++k) {
      const app::Chunk& c = plan[k];
      cudaStream_t stream = streams[k % streams.size()];
      if (repaired) {
        CHECK(cudaMemcpyAsync(d_in + c.offset, h_in + c.offset, c.bytes(), cudaMemcpyHostToDevice, stream));
      } else {
        // The trap: the host waits here until the copy is done.
        CHECK(cudaMemcpy(d_in + c.offset, h_in + c.offset, c.bytes(), cudaMemcpyHostToDevice));
      }
      app::launch_scale(d_in + c.offset, d_out + c.offset, c.count, stream);
      CHECK(cudaMemcpyAsync(h_out + c.offset, d_out + c.offset, c.bytes(), cudaMemcpyDeviceToHost, stream));
    }
    // The next pass's uploads overwrite d_in, which this pass's kernels read:
    // copies on the default stream are not ordered after them, so wait.
    app::synchronize_streams(streams);
  }
  const double elapsed = timer.ms();

  app::verify_scaled(h_in, h_out, n);
  app::destroy_streams(streams);
  app::free_device(d_out);
  app::free_device(d_in);
  app::free_pinned(h_out);
  app::free_pinned(h_in);
  args.print_ok(elapsed);
  return 0;
}
