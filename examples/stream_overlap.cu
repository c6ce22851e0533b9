// Seed 001, "sequential vs overlapped", written with overlap.
//
// The seed copies 4 Mi floats to the GPU, runs a sin/cos kernel over them
// and copies the result back, first all in one stream, then split into two
// chunks on two streams so one chunk's copies overlap the other's kernel.
// Here the host memory is a pinned_buffer, the sequential run uses a stream
// and timing events, and the overlapped runs are Pipelines: the seed's shape
// (2 chunks, 2 streams) and overlap's automatic chunking. The overlapped
// outputs must equal the sequential one bit for bit, and a sample is checked
// against a host computation. Exits 1 on a wrong output or a CUDA error.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "example_main.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"

namespace {

using overlap::cuda::check;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;

constexpr std::size_t elements = std::size_t{1} << 22;  // ~4M, as in the seed
constexpr int repetitions = 9;  // report the median and the spread: timings vary run to run

// The seed's work per element: enough arithmetic that compute and copies are comparable.
__host__ __device__ float process(float value) {
  for (int i = 0; i < 100; ++i) value = sinf(value) * cosf(value) + value;
  return value;
}

__global__ void process_kernel(const float* input, float* output, std::size_t n) {
  const std::size_t index = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (index < n) output[index] = process(input[index]);
}

/// The median and range of a set of timings.
struct spread {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};

spread spread_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return {samples[samples.size() / 2], samples.front(), samples.back()};
}

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>((n + 255) / 256);
}

void launch_process(std::span<const float> input, std::span<float> output, stream_view stream) {
  process_kernel<<<blocks_for(input.size()), 256, 0, stream.get()>>>(input.data(), output.data(),
                                                                     input.size());
  check(cudaGetLastError(), "process_kernel launch");
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The seed's sequential version: copy in, compute, copy out, one stream,
// with an event between stages so each stage's time is known.
struct sequential_run {
  overlap::cuda::stream stream_one;
  overlap::cuda::device_buffer<float> device_input{elements, stream_one};
  overlap::cuda::device_buffer<float> device_output{elements, stream_one};
  overlap::cuda::event start{overlap::cuda::event_timing::enabled};
  overlap::cuda::event copied_in{overlap::cuda::event_timing::enabled};
  overlap::cuda::event computed{overlap::cuda::event_timing::enabled};
  overlap::cuda::event stop{overlap::cuda::event_timing::enabled};

  struct stage_times {
    float h2d_ms = 0.0F;
    float kernel_ms = 0.0F;
    float d2h_ms = 0.0F;
    [[nodiscard]] float total_ms() const { return h2d_ms + kernel_ms + d2h_ms; }
  };

  stage_times run(const pinned_buffer<float>& input, pinned_buffer<float>& output) {
    const std::size_t bytes = elements * sizeof(float);
    start.record(stream_one);
    check(cudaMemcpyAsync(device_input.data(), input.data(), bytes, cudaMemcpyHostToDevice, stream_one.get()),
          "cudaMemcpyAsync", "sequential H2D");
    copied_in.record(stream_one);
    launch_process(std::span<const float>(device_input.data(), elements), device_output.span(), stream_one);
    computed.record(stream_one);
    check(
        cudaMemcpyAsync(output.data(), device_output.data(), bytes, cudaMemcpyDeviceToHost, stream_one.get()),
        "cudaMemcpyAsync", "sequential D2H");
    stop.record(stream_one);
    stop.synchronize();
    return {copied_in.elapsed_since(start), computed.elapsed_since(copied_in), stop.elapsed_since(computed)};
  }
};

// Host wall-clock time of a complete Pipeline run (it returns when all is done).
double time_pipeline(Pipeline<float>& pipeline, const pinned_buffer<float>& input,
                     pinned_buffer<float>& output) {
  const auto started = std::chrono::steady_clock::now();
  (void)pipeline.run(input.span(), output.span(),
                     [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                       launch_process(in, out, s);
                     });
  return milliseconds_since(started);
}

// Bit-for-bit: the same kernel on the same inputs, only chunked differently.
bool same_bits(const pinned_buffer<float>& expected, const pinned_buffer<float>& actual, const char* name) {
  if (std::memcmp(expected.data(), actual.data(), elements * sizeof(float)) == 0) return true;
  for (std::size_t i = 0; i < elements; ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0) {
      std::printf("WRONG: %s output differs from the sequential one at index %zu (%.9g vs %.9g)\n", name, i,
                  static_cast<double>(actual[i]), static_cast<double>(expected[i]));
      break;
    }
  }
  return false;
}

// Device and host sinf/cosf differ in the last bits, so the host check is
// loose; it catches garbage (zeros, wrong elements), and the bit-for-bit
// comparison above catches everything subtler in the overlapped runs.
bool close_to_host(const pinned_buffer<float>& output) {
  std::size_t checked = 0;
  for (std::size_t i = 0; i < elements; i += (i < 4096 ? 1 : 4099)) {
    const float expected = process(static_cast<float>(i));
    const double tolerance = 1e-3 + 1e-4 * std::fabs(static_cast<double>(expected));
    if (!(std::fabs(static_cast<double>(output[i]) - static_cast<double>(expected)) <= tolerance)) {
      std::printf("WRONG: element %zu is %.9g, the host computes %.9g\n", i, static_cast<double>(output[i]),
                  static_cast<double>(expected));
      return false;
    }
    ++checked;
  }
  std::printf("host check: %zu sampled elements agree with the host computation\n", checked);
  return true;
}

int run_example() {
  cudaDeviceProp properties{};
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  std::printf("device: %s, %d copy engines\n", properties.name, properties.asyncEngineCount);
  std::printf("data: %zu floats (%zu MiB each way)\n\n", elements, elements * sizeof(float) >> 20);

  pinned_buffer<float> input(elements);
  pinned_buffer<float> sequential_output(elements);
  pinned_buffer<float> seed_shape_output(elements);
  pinned_buffer<float> automatic_output(elements);
  for (std::size_t i = 0; i < elements; ++i) input[i] = static_cast<float>(i);

  // Sequential, timed with events (device time per stage) and the host clock.
  sequential_run sequential;
  (void)sequential.run(input, sequential_output);  // warm-up: module load, first-touch costs
  std::vector<std::pair<double, sequential_run::stage_times>> sequential_runs;
  for (int r = 0; r < repetitions; ++r) {
    const auto started = std::chrono::steady_clock::now();
    const sequential_run::stage_times these = sequential.run(input, sequential_output);
    sequential_runs.emplace_back(milliseconds_since(started), these);
  }
  std::sort(sequential_runs.begin(), sequential_runs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const spread sequential_ms{sequential_runs[repetitions / 2].first, sequential_runs.front().first,
                             sequential_runs.back().first};
  const sequential_run::stage_times stages = sequential_runs[repetitions / 2].second;  // of the median run

  // Overlapped, the seed's way: 2 chunks on 2 streams.
  pipeline_options seed_options;
  seed_options.chunk_bytes = elements / 2 * sizeof(float);
  seed_options.streams = 2U;
  Pipeline<float> seed_shape(seed_options);
  // Overlapped, overlap's way: automatic chunk size and streams.
  Pipeline<float> automatic;
  std::vector<double> seed_shape_runs;
  std::vector<double> automatic_runs;
  (void)time_pipeline(seed_shape, input, seed_shape_output);  // warm-up: ring allocation
  (void)time_pipeline(automatic, input, automatic_output);
  for (int r = 0; r < repetitions; ++r) {  // alternating, so drift on a shared machine hits both alike
    seed_shape_runs.push_back(time_pipeline(seed_shape, input, seed_shape_output));
    automatic_runs.push_back(time_pipeline(automatic, input, automatic_output));
  }
  const spread seed_shape_ms = spread_of(seed_shape_runs);
  const spread automatic_ms = spread_of(automatic_runs);

  // One more recorded run of the automatic Pipeline, to show what overlapped.
  pipeline_options recorded_options;
  recorded_options.record = overlap::cuda::recording::on;
  Pipeline<float> recorded(recorded_options);
  const auto report = recorded.run(input.span(), automatic_output.span(),
                                   [](std::span<const float> in, std::span<float> out, stream_view s,
                                      std::size_t) { launch_process(in, out, s); });

  // Overlap can hide all but the longest stage: that stage bounds the speedup.
  const float longest = std::max({stages.h2d_ms, stages.kernel_ms, stages.d2h_ms});
  std::printf(
      "sequential stages (events): H2D %.3f ms, kernel %.3f ms, D2H %.3f ms; overlap can at best reach "
      "%.2fx\n\n",
      static_cast<double>(stages.h2d_ms), static_cast<double>(stages.kernel_ms),
      static_cast<double>(stages.d2h_ms), static_cast<double>(stages.total_ms() / longest));
  std::printf("Sequential (1 stream):                          %8.3f ms (%.3f..%.3f)\n", sequential_ms.median,
              sequential_ms.min, sequential_ms.max);
  std::printf("Overlapped (seed: 2 chunks, 2 streams):         %8.3f ms (%.3f..%.3f)  speedup %.2fx\n",
              seed_shape_ms.median, seed_shape_ms.min, seed_shape_ms.max,
              sequential_ms.median / seed_shape_ms.median);
  std::printf("Overlapped (automatic: %zu chunks, %u streams):  %8.3f ms (%.3f..%.3f)  speedup %.2fx\n",
              report.chunks, report.streams, automatic_ms.median, automatic_ms.min, automatic_ms.max,
              sequential_ms.median / automatic_ms.median);
  std::printf("(median (min..max) of %d runs each, host wall clock from issue to completion)\n\n",
              repetitions);

  // What the recorded run's timeline says about where time went.
  if (report.timeline) {
    const overlap::Metrics metrics = overlap::compute_metrics(*report.timeline);
    std::printf("measured timeline of the automatic run: %.3f ms on the device\n", metrics.total);
    for (const overlap::EngineUsage& usage : metrics.engines) {
      const std::string name(overlap::to_string(usage.unit));
      std::printf("  %-9s busy %7.3f ms (%5.1f%%)\n", name.c_str(), usage.busy, 100.0 * usage.busy_fraction);
    }
    std::printf("  two or more engines busy %.1f%% of the run\n\n",
                100.0 * metrics.multi_engine_busy_fraction);
  }

  bool correct = close_to_host(sequential_output);
  correct = same_bits(sequential_output, seed_shape_output, "seed-shaped Pipeline") && correct;
  correct = same_bits(sequential_output, automatic_output, "automatic Pipeline") && correct;
  std::printf("%s\n", correct ? "outputs verified: the overlapped runs match the sequential one bit for bit"
                              : "FAILED: wrong output");
  return correct ? 0 : 1;
}

}  // namespace

int main() {
  return example::main_on_gpu(run_example);
}
