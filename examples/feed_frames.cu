// A camera-like feed: frames produced on the host, run through a kernel on
// the GPU and consumed on the host, with a Feed keeping the producer, the
// copies, the kernel and the consumer busy at once.
//
// The "camera" renders each 4 MiB frame into the Feed's pinned slot; the
// kernel computes y = 2x + 1; the consumer checks every pixel of every
// frame against the host's y = 2x + 1 of what was rendered. The example
// prints throughput and latency, what bounds them, and the timeline of the
// first frames as the simulator redraws the run (its measured producer and
// consumer times, the kernel timed with events) on the GPU's built-in model.
// Exits 1 on a wrong pixel or a CUDA error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <optional>
#include <span>

#include "example_main.hpp"
#include "overlap/core/feed_shape.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/feed.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using overlap::cuda::check;
using overlap::cuda::stream_view;

constexpr std::size_t frame_elements = std::size_t{1} << 20;  // 4 MiB of float pixels
constexpr std::size_t frames = 100;
constexpr std::size_t drawn_frames = 4;

__global__ void axpb_kernel(const float* input, float* output, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    output[i] = input[i] * 2.0F + 1.0F;  // x * 2 is exact: the host checks bit for bit
}

void launch_axpb(std::span<const float> input, std::span<float> output, stream_view stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((input.size() + 255) / 256, 65535));
  axpb_kernel<<<blocks, 256, 0, stream.get()>>>(input.data(), output.data(), input.size());
  check(cudaGetLastError(), "axpb_kernel launch");
}

// Pixel i of frame k: a moving gradient, exact in float.
float pixel(std::size_t frame, std::size_t i) {
  return static_cast<float>((i + frame * 977) % 4096) * 0.25F - 512.0F;
}

// Milliseconds of one kernel launch over a frame, timed with events.
double kernel_ms() {
  const overlap::cuda::stream s;
  overlap::cuda::device_buffer<float> in(frame_elements, s);
  overlap::cuda::device_buffer<float> out(frame_elements, s);
  overlap::cuda::event start(overlap::cuda::event_timing::enabled);
  overlap::cuda::event end(overlap::cuda::event_timing::enabled);
  launch_axpb({in.data(), frame_elements}, {out.data(), frame_elements}, s);  // warm-up
  start.record(s);
  launch_axpb({in.data(), frame_elements}, {out.data(), frame_elements}, s);
  end.record(s);
  end.synchronize();
  return end.elapsed_since(start);
}

int run_example() {
  overlap::cuda::feed_options options;
  options.slot_elements = frame_elements;
  overlap::cuda::Feed<float> feed(options);
  std::size_t wrong_pixels = 0;
  const auto report = feed.run(
      [](std::span<float> slot, std::size_t k) -> std::optional<std::size_t> {
        if (k == frames) return std::nullopt;  // the camera stops
        for (std::size_t i = 0; i < frame_elements; ++i) slot[i] = pixel(k, i);
        return frame_elements;
      },
      [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
        launch_axpb(in, out, s);
      },
      [&](std::span<const float> result, std::size_t k) {
        for (std::size_t i = 0; i < result.size(); ++i) {
          if (result[i] != pixel(k, i) * 2.0F + 1.0F) ++wrong_pixels;
        }
      });

  const double frame_mib = static_cast<double>(frame_elements * sizeof(float)) / (1 << 20);
  std::printf("frames:      %zu of %.0f MiB through %u slots\n", report.items, frame_mib, report.slots);
  std::printf("throughput:  %.0f frames/s, %.2f GB/s in + out\n", report.items_per_second,
              report.gigabytes_per_second);
  std::printf(
      "latency:     median %.3f ms, p95 %.3f ms, max %.3f ms (frame rendered -> result on the host)\n",
      report.latency.median_ms, report.latency.p95_ms, report.latency.max_ms);
  const double kernel = kernel_ms();
  std::printf("per frame:   camera %.3f ms, consumer %.3f ms, kernel %.3f ms, host issue %.3f ms\n",
              report.producer_ms, report.consumer_ms, kernel,
              report.host_issue_ms / static_cast<double>(std::max<std::size_t>(report.items, 1)));
  const double slowest_host = std::max(report.producer_ms, report.consumer_ms);
  if (slowest_host > 0.0) {
    std::printf("bound:       the %s at %.0f frames/s; the feed ran at %.0f%% of it\n",
                report.producer_ms >= report.consumer_ms ? "camera" : "consumer", 1e3 / slowest_host,
                100.0 * report.items_per_second * slowest_host / 1e3);
  }

  overlap::FeedShape drawn = report.shape;
  drawn.items.resize(std::min(drawn.items.size(), drawn_frames));
  drawn.kernel_time = kernel;
  const overlap::Timeline t = overlap::sim::simulate(overlap::make_feed_program(drawn),
                                                     overlap::cuda::builtin_model_of_current_device());
  std::printf("\nthe first %zu frames, as the simulator redraws them:\n%s\n", drawn.items.size(),
              overlap::io::to_ascii(t).c_str());

  if (wrong_pixels > 0) {
    std::printf("FAILED: %zu wrong pixels\n", wrong_pixels);
    return 1;
  }
  std::printf("verified: every pixel of %zu frames is exact\n", report.items);
  return 0;
}

}  // namespace

int main() {
  return example::main_on_gpu(run_example);
}
