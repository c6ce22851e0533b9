// Out of core: 8x more data than the device budget streams through a Pipeline.
//
// 256 MiB of floats go through y = 2x + 1 under a 32 MiB device budget. The
// Pipeline sizes its chunks so its ring of device slots fits the budget and
// reuses the slots chunk after chunk, so the device never holds more than
// the ring however large the data. cudaMemGetInfo is read before the run,
// from inside the stage while chunks are in flight, and after, to show the
// footprint the device actually saw. Exits 1 on a wrong output, a ring over
// the budget, or a CUDA error.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <random>
#include <span>
#include <utility>

#include "example_main.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::check;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t budget_bytes = 32 * MiB;
constexpr std::size_t data_bytes = 256 * MiB;
constexpr std::size_t elements = data_bytes / sizeof(float);

__global__ void axpb_kernel(const float* input, float* output, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    output[i] = input[i] * 2.0F + 1.0F;  // x * 2 is exact, so the host can check bit for bit
}

void launch_axpb(std::span<const float> input, std::span<float> output, stream_view stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((input.size() + 255) / 256, 65535));
  axpb_kernel<<<blocks, 256, 0, stream.get()>>>(input.data(), output.data(), input.size());
  check(cudaGetLastError(), "axpb_kernel launch");
}

std::size_t free_device_bytes() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return free_bytes;
}

// After a device-wide synchronize the stream-ordered allocator has handed
// freed memory back, so readings taken this way compare like with like.
std::size_t settled_free_device_bytes() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return free_device_bytes();
}

double mib(long long bytes) {
  return static_cast<double>(bytes) / static_cast<double>(MiB);
}

int run_example() {
  pinned_buffer<float> input(elements);
  pinned_buffer<float> output(elements);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> value(-1000.0F, 1000.0F);
  for (std::size_t i = 0; i < elements; ++i) input[i] = value(rng);
  std::fill(output.data(), output.data() + elements, -0.0F);

  // Warm up the context and the kernel so the reading below is the baseline.
  {
    pinned_buffer<float> small_in(256);
    pinned_buffer<float> small_out(256);
    (void)Pipeline<float>().run(small_in.span(), small_out.span(),
                                [](std::span<const float> in, std::span<float> out, stream_view s,
                                   std::size_t) { launch_axpb(in, out, s); });
  }
  const std::size_t free_before = settled_free_device_bytes();

  pipeline_options options;
  options.device_budget_bytes = budget_bytes;
  Pipeline<float> pipeline(options);
  std::size_t lowest_free = free_before;
  const auto started = std::chrono::steady_clock::now();
  const auto report =
      pipeline.run(input.span(), output.span(),
                   [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                     // Runs on the host while earlier chunks are in flight.
                     lowest_free = std::min(lowest_free, free_device_bytes());
                     launch_axpb(in, out, s);
                   });
  const double run_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const long long peak_growth = static_cast<long long>(free_before) - static_cast<long long>(lowest_free);
  const std::size_t free_after_run = settled_free_device_bytes();

  std::printf("data:            %zu floats, %.0f MiB in and %.0f MiB out\n", elements, mib(data_bytes),
              mib(data_bytes));
  std::printf("device budget:   %.0f MiB (the data is %zux the budget)\n", mib(budget_bytes),
              data_bytes / budget_bytes);
  std::printf("plan:            %zu chunks of %.2f MiB, %u streams, %u ring slots\n", report.chunks,
              mib(static_cast<long long>(report.chunk_bytes)), report.streams, report.ring_depth);
  std::printf("device ring:     %.2f MiB (%.1f%% of the %.0f MiB moved through it)\n",
              mib(static_cast<long long>(report.device_bytes)),
              100.0 * static_cast<double>(report.device_bytes) / static_cast<double>(2 * data_bytes),
              mib(2 * data_bytes));
  std::printf(
      "cudaMemGetInfo:  free %.1f MiB before, lowest %.1f MiB during the run (+%.1f MiB), %.1f MiB "
      "after\n",
      mib(static_cast<long long>(free_before)), mib(static_cast<long long>(lowest_free)), mib(peak_growth),
      mib(static_cast<long long>(free_after_run)));
  std::printf("time:            %.2f ms, %.2f GB/s each way\n", run_ms,
              static_cast<double>(data_bytes) / (run_ms * 1e6));

  bool ok = true;
  if (report.device_bytes > budget_bytes) {
    std::printf("FAILED: the ring (%zu bytes) is over the budget (%zu bytes)\n", report.device_bytes,
                budget_bytes);
    ok = false;
  }
  for (std::size_t i = 0; i < elements; ++i) {
    if (output[i] != input[i] * 2.0F + 1.0F) {
      std::printf("FAILED: wrong output at element %zu: %.9g, expected %.9g\n", i,
                  static_cast<double>(output[i]), static_cast<double>(input[i] * 2.0F + 1.0F));
      ok = false;
      break;
    }
  }
  if (ok) std::printf("verified: all %zu outputs are exact\n", elements);

  // Once the Pipeline is gone the device is back where it started.
  { Pipeline<float> released = std::move(pipeline); }
  std::printf("after release:   free %.1f MiB\n", mib(static_cast<long long>(settled_free_device_bytes())));
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  return example::main_on_gpu(run_example);
}
