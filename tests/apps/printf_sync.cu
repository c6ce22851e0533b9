// app_printf_sync -> nothing: a cudaDeviceSynchronize that shows the GPU's
// printf output serves the program
//
// Eight rounds on one stream: a kernel runs the busy generator over its
// slice of the data (about 2 ms on 4 blocks) and then prints the slice's
// first result with printf; the host waits with
//
//     cudaDeviceSynchronize();
//
// which writes that line out (device printf's buffer is flushed at
// synchronization), prints its own line after it and spends about 1 ms
// filling its next input. The host reads no data until the end: what the
// sync serves is the order of the output. The audit must not call it
// useless (the tracer names the kernels that call printf from their
// module's call graph).
//
// --quiet: the same rounds with busy_kernel, which prints nothing: the
// syncs then serve nothing the host reads, and `device-synchronize` is
// reported (dropping them lets the host's work run beside the kernels).
#include <cstdio>

#include "app_support.hpp"

namespace {

constexpr unsigned blocks = 4;
constexpr std::size_t slice = std::size_t{blocks} * app::threads_per_block;
constexpr int rounds = 8;
constexpr std::uint32_t iterations = 1'000'000;  // about 2 ms

}  // namespace

/// busy_kernel's work on one slice, then the slice's first result printed.
__global__ void busy_then_print(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                                std::uint32_t iterations, std::uint32_t multiplier, std::uint32_t increment,
                                int round) {
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  std::uint32_t v = in[i];
  for (std::uint32_t k = 0; k < iterations; ++k) v = v * multiplier + increment;
  out[i] = v;
  if (i == 0) printf("gpu: round %d: first result %u\n", round, v);
}

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_printf_sync");
  const bool quiet = args.flag("--quiet");
  args.finish();

  const std::size_t n = slice * rounds;
  std::uint32_t* h_in = app::alloc_pinned<std::uint32_t>(n);
  std::uint32_t* h_out = app::alloc_pinned<std::uint32_t>(n);
  std::uint32_t* d_in = app::alloc_device<std::uint32_t>(n);
  std::uint32_t* d_out = app::alloc_device<std::uint32_t>(n);
  const std::vector<cudaStream_t> streams = app::create_streams(1, cudaStreamNonBlocking);
  cudaStream_t s = streams[0];
  app::fill_random(h_in, n, 11);
  CHECK(cudaMemcpyAsync(d_in, h_in, n * sizeof(std::uint32_t), cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  std::vector<float> scratch(4 * app::MiB / sizeof(float));

  const app::Timer timer;
  for (int r = 0; r < rounds; ++r) {
    const std::size_t offset = static_cast<std::size_t>(r) * slice;
    if (quiet) {
      app::launch_busy(d_in + offset, d_out + offset, slice, iterations, blocks, s);
    } else {
      busy_then_print<<<blocks, app::threads_per_block, 0, s>>>(
          d_in + offset, d_out + offset, slice, iterations, app::busy_multiplier, app::busy_increment, r);
      CHECK(cudaGetLastError());
    }
    CHECK(cudaDeviceSynchronize());  // writes the kernel's line out
    std::printf("host: round %d done\n", r);
    app::fill_random(scratch.data(), scratch.size(), static_cast<std::uint64_t>(r) + 100);  // about 1 ms
  }
  CHECK(cudaMemcpyAsync(h_out, d_out, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  const double elapsed = timer.ms();

  app::verify("busy results", h_out, n,
              [&](std::size_t i) { return app::busy_reference(h_in[i], iterations); });
  app::destroy_streams(streams);
  app::free_device(d_out);
  app::free_device(d_in);
  app::free_pinned(h_out);
  app::free_pinned(h_in);
  args.print_ok(elapsed);
  return 0;
}
