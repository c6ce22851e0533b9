// app_device_sync -> `device-synchronize`
//
// Stream A runs one long, independent busy kernel on 8 SMs (about 25 ms on an
// H100); its result is read only at the very end. Meanwhile stream B streams
// 64 MiB through y = 2x + 1 in 16 chunks and a remainder, its kernels sized
// to the SMs A leaves free, and after each chunk the host waits with
//
//     cudaDeviceSynchronize();
//
// and then reads that chunk's result (sums it). cudaDeviceSynchronize waits
// for stream A too: the first one holds the host until the busy kernel is
// done, so B's chunks run after A instead of beside it (about 2x slower).
//
// --repaired: cudaStreamSynchronize(B), which waits only for the chunk.
#include "app_support.hpp"

namespace {

constexpr unsigned busy_blocks = 8;  // 8 of the H100's 132 SMs
constexpr std::size_t busy_elements = std::size_t{busy_blocks} * app::threads_per_block;
constexpr std::uint32_t busy_iterations = 12'000'000;  // about 25 ms

double sum(const float* data, std::size_t n) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) total += data[i];
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  app::Args args(argc, argv, "app_device_sync");
  const bool repaired = args.repaired();

  const std::size_t n = app::default_elements;
  const std::vector<app::Chunk> plan = app::split(n, 16);
  float* h_in = app::alloc_pinned<float>(n);
  float* h_out = app::alloc_pinned<float>(n);
  float* d_in = app::alloc_device<float>(n);
  float* d_out = app::alloc_device<float>(n);
  std::uint32_t* h_busy_in = app::alloc_pinned<std::uint32_t>(busy_elements);
  std::uint32_t* h_busy_out = app::alloc_pinned<std::uint32_t>(busy_elements);
  std::uint32_t* d_busy_in = app::alloc_device<std::uint32_t>(busy_elements);
  std::uint32_t* d_busy_out = app::alloc_device<std::uint32_t>(busy_elements);
  const std::vector<cudaStream_t> streams = app::create_streams(2, cudaStreamNonBlocking);
  cudaStream_t a = streams[0];
  cudaStream_t b = streams[1];
  app::fill_random(h_in, n, 7);
  app::fill_random(h_busy_in, busy_elements, 8);
  std::vector<double> chunk_sums(plan.size());
  // B's kernels take the SMs A's kernel leaves, less a few. (A grid asking
  // for every SM would still run beside A on the GPU, on the SMs A leaves,
  // but the audit's device model would queue it behind A.)
  int sm_count = 0;
  CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
  const unsigned b_blocks =
      sm_count > static_cast<int>(busy_blocks) + 8 ? static_cast<unsigned>(sm_count) - busy_blocks - 4 : 1U;

  // Load scale_kernel before the busy kernel starts: with CUDA's lazy module
  // loading, a kernel's first launch waits for kernels already running, and
  // both variants would then wait for stream A on their first chunk.
  app::launch_scale(d_in, d_out, 1, b, 1);
  CHECK(cudaStreamSynchronize(b));

  const app::Timer timer;
  CHECK(cudaMemcpyAsync(d_busy_in, h_busy_in, busy_elements * sizeof(std::uint32_t), cudaMemcpyHostToDevice,
                        a));
  app::launch_busy(d_busy_in, d_busy_out, busy_elements, busy_iterations, busy_blocks, a);
  for (std::size_t k = 0; k < plan.size(); ++k) {
    app::issue_chunk(h_in, d_in, d_out, h_out, plan[k], b, b_blocks);
    if (repaired) {
      CHECK(cudaStreamSynchronize(b));
    } else {
      // The trap: waits for stream A's busy kernel too.
      CHECK(cudaDeviceSynchronize());
    }
    chunk_sums[k] = sum(h_out + plan[k].offset, plan[k].count);
  }
  CHECK(cudaMemcpyAsync(h_busy_out, d_busy_out, busy_elements * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                        a));
  CHECK(cudaStreamSynchronize(a));
  const double elapsed = timer.ms();

  app::verify_scaled(h_in, h_out, n);
  app::verify("chunk sums", chunk_sums.data(), plan.size(),
              [&](std::size_t k) { return sum(h_out + plan[k].offset, plan[k].count); });
  app::verify("busy kernel output", h_busy_out, busy_elements,
              [&](std::size_t i) { return app::busy_reference(h_busy_in[i], busy_iterations); });
  app::destroy_streams(streams);
  app::free_device(d_busy_out);
  app::free_device(d_busy_in);
  app::free_pinned(h_busy_out);
  app::free_pinned(h_busy_in);
  app::free_device(d_out);
  app::free_device(d_in);
  app::free_pinned(h_out);
  app::free_pinned(h_in);
  args.print_ok(elapsed);
  return 0;
}
