// One recorded Pipeline run of the transfer-bound workload (y = 2x + 1),
// written as the Pipeline's own measured Timeline (CUDA events). Run under
// `overlap trace`, it gives the same run measured twice, by events and by
// CUPTI: bench/trace_fidelity.py compares their metrics.
//
//   recorded_pipeline [--mib 256] [--timeline recorded.json]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <string_view>

#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/io/exporters.hpp"
#include "workloads/kernels.hpp"

namespace {

int run(std::size_t mib, const std::string& timeline_path) {
  const std::size_t n = mib * (std::size_t{1} << 20) / sizeof(float) + 123;  // a remainder chunk too
  overlap::cuda::pinned_buffer<float> input(n);
  overlap::cuda::pinned_buffer<float> output(n);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> values(-1000.0F, 1000.0F);
  for (float& x : input.span()) x = values(random);

  overlap::cuda::pipeline_options options;
  options.record = overlap::cuda::recording::on;
  overlap::cuda::Pipeline<float> pipeline(options);
  const auto report = pipeline.run(
      input.span(), output.span(),
      [](std::span<const float> in, std::span<float> out, overlap::cuda::stream_view s, std::size_t) {
        overlap::bench::launch_affine(in.data(), out.data(), in.size(), s.get());
      });
  for (std::size_t i = 0; i < n; ++i) {
    if (output.span()[i] != overlap::bench::affine_reference(input.span()[i])) {
      std::fprintf(stderr, "wrong output at %zu\n", i);
      return 1;
    }
  }
  if (!report.timeline) {
    std::fprintf(stderr, "no recorded timeline\n");
    return 1;
  }
  if (!timeline_path.empty()) {
    std::ofstream(timeline_path) << overlap::io::to_json(*report.timeline);
  }
  std::printf("recorded_pipeline: %zu chunks on %u streams, outputs verified\n", report.chunks,
              report.streams);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 256;
  std::string timeline;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--mib") mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--timeline") timeline = argv[i + 1];
  }
  if (overlap::cuda::device_count() == 0) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  try {
    return run(mib, timeline);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
