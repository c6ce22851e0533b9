// app_pageable_copy -> `pageable-async-copy`
//
// The clean pipeline (64 MiB, 16 chunks and a remainder, depth-first on 4
// non-blocking streams, 4 passes), but its host buffers are std::vectors:
// pageable memory. cudaMemcpyAsync from or to pageable memory stages through
// a driver buffer and returns only when the copy is done, at about a quarter
// of the pinned bandwidth: nothing overlaps, and the run is several times
// slower on an H100.
//
// --repaired: pinned host buffers (cudaMallocHost).
#include "app_support.hpp"

namespace {

constexpr std::size_t passes = 4;

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_pageable_copy");
  const bool repaired = args.repaired();

  const std::size_t n = app::default_elements;
  const std::vector<app::Chunk> plan = app::split(n, 16);
  std::vector<float> pageable_in;
  std::vector<float> pageable_out;
  float* h_in = nullptr;
  float* h_out = nullptr;
  if (repaired) {
    h_in = app::alloc_pinned<float>(n);
    h_out = app::alloc_pinned<float>(n);
  } else {
    // The trap: ordinary host memory handed to cudaMemcpyAsync.
    pageable_in.resize(n);
    pageable_out.resize(n);
    h_in = pageable_in.data();
    h_out = pageable_out.data();
  }
  float* d_in = app::alloc_device<float>(n);
  float* d_out = app::alloc_device<float>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(4, cudaStreamNonBlocking);
  app::fill_random(h_in, n, 5);

  const app::Timer timer;
  for (std::size_t pass = 0; pass < passes; ++pass)
    app::issue_pipeline(h_in, d_in, d_out, h_out, plan, streams);
  app::synchronize_streams(streams);
  const double elapsed = timer.ms();

  app::verify_scaled(h_in, h_out, n);
  app::destroy_streams(streams);
  app::free_device(d_out);
  app::free_device(d_in);
  if (repaired) {
    app::free_pinned(h_out);
    app::free_pinned(h_in);
  }
  args.print_ok(elapsed);
  return 0;
}
