// app_sleeper: starts CUDA work (an upload and a busy kernel of about 100 ms
// on an H100, not waited for), sleeps, and is ended by SIGTERM while the
// kernel still runs. By default it raises SIGTERM itself after --sleep-ms
// (default 20); with --wait it waits for someone else to send it (and exits
// 1 after 60 s without one). `overlap trace` must not hang and must exit with
// 143 (128 + SIGTERM); the tracer flushes its records on SIGTERM, so the
// trace ends with a footer whose reason is the signal.
//
//   app_sleeper [--sleep-ms MS] [--wait]
#include <chrono>
#include <csignal>
#include <thread>

#include "app_support.hpp"

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_sleeper");
  const std::size_t sleep_ms = args.value("--sleep-ms", 20);
  const bool wait = args.flag("--wait");
  args.finish();

  constexpr unsigned blocks = 4;
  constexpr std::size_t n = std::size_t{blocks} * app::threads_per_block;
  std::uint32_t* h_in = app::alloc_pinned<std::uint32_t>(n);
  std::uint32_t* d_in = app::alloc_device<std::uint32_t>(n);
  std::uint32_t* d_out = app::alloc_device<std::uint32_t>(n);
  cudaStream_t stream = app::create_streams(1, cudaStreamNonBlocking).front();
  app::fill_random(h_in, n, 15);
  CHECK(cudaMemcpyAsync(d_in, h_in, n * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream));
  app::launch_busy(d_in, d_out, n, 40'000'000, blocks, stream);

  if (wait) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    std::fprintf(stderr, "app_sleeper: no SIGTERM came within 60 s\n");
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  std::fflush(stdout);
  std::raise(SIGTERM);
  return 0;  // not reached: SIGTERM's default action ends the process
}
