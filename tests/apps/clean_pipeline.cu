// app_clean_pipeline: a correct overlapped pipeline, the reference the trap
// apps depart from. 64 MiB (and a few floats more) of pinned input, y = 2x + 1,
// pinned output; 16 chunks plus a short remainder chunk issued depth-first
// (each chunk's upload, kernel and download in turn) on 4 non-blocking
// streams, chunk k on stream k % 4; one cudaDeviceSynchronize at the end,
// after which the host reads every chunk. Uploads overlap kernels and
// downloads.
//
// Expected from `overlap audit`: no finding.
//
//   app_clean_pipeline [--bytes N] [--chunks C] [--streams S]
#include "app_support.hpp"

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_clean_pipeline");
  const std::size_t n = args.value("--bytes", app::default_elements * sizeof(float)) / sizeof(float);
  const std::size_t chunks = args.value("--chunks", 16);
  const std::size_t stream_count = args.value("--streams", 4);
  args.finish();
  if (n == 0) args.fail("--bytes must be at least 4");
  if (stream_count > 32) args.fail("--streams must be at most 32");

  float* h_in = app::alloc_pinned<float>(n);
  float* h_out = app::alloc_pinned<float>(n);
  float* d_in = app::alloc_device<float>(n);
  float* d_out = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(stream_count, cudaStreamNonBlocking);
  app::fill_random(h_in, n, 1);
  const std::vector<app::Chunk> plan = app::split(n, chunks);

  const app::Timer timer;
  app::issue_pipeline(h_in, d_in, d_out, h_out, plan, streams);
  CHECK(cudaDeviceSynchronize());
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
