// One recorded Pipeline run of the transfer-bound workload (y = 2x + 1),
// written as the Pipeline's own measured Timeline (CUDA events). Run under
// `overlap trace`, it gives the same run measured twice, by events and by
// CUPTI: bench/trace_fidelity.py compares their metrics.
//
//   recorded_pipeline [--mib 256] [--chunk-mib M] [--kernel affine|sincos]
//                     [--timeline recorded.json]
//
// --chunk-mib 0 (the default) lets the Pipeline choose; --kernel sincos runs
// the compute-bound kernel instead of y = 2x + 1.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <string_view>

#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/io/exporters.hpp"

namespace {

struct settings {
  std::size_t mib = 256;
  std::size_t chunk_mib = 0;  // 0: the Pipeline's own choice
  bool sincos = false;
  std::string timeline;
};

// The sin/cos iteration on the device and the host round differently by a few ulp.
bool matches(float got, float expected, bool sincos) {
  if (!sincos) return got == expected;
  return std::fabs(got - expected) <= 1e-3F * std::fmax(1.0F, std::fabs(expected));
}

int run(const settings& how) {
  const std::size_t mib = how.mib;
  const std::size_t n = mib * (std::size_t{1} << 20) / sizeof(float) + 123;  // a remainder chunk too
  overlap::cuda::pinned_buffer<float> input(n);
  overlap::cuda::pinned_buffer<float> output(n);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> values(-1000.0F, 1000.0F);
  for (float& x : input.span()) x = values(random);

  overlap::cuda::pipeline_options options;
  options.record = overlap::cuda::recording::on;
  if (how.chunk_mib > 0) options.chunk_bytes = how.chunk_mib << 20;
  overlap::cuda::Pipeline<float> pipeline(options);
  const auto report = pipeline.run(
      input.span(), output.span(),
      [&](std::span<const float> in, std::span<float> out, overlap::cuda::stream_view s, std::size_t) {
        if (how.sincos) {
          overlap::bench::launch_sincos(in.data(), out.data(), in.size(), s.get());
        } else {
          overlap::bench::launch_affine(in.data(), out.data(), in.size(), s.get());
        }
      });
  for (std::size_t i = 0; i < n; ++i) {
    const float x = input.span()[i];
    const float expected =
        how.sincos ? overlap::bench::sincos_reference(x) : overlap::bench::affine_reference(x);
    if (!matches(output.span()[i], expected, how.sincos)) {
      std::fprintf(stderr, "wrong output at %zu\n", i);
      return 1;
    }
  }
  if (!report.timeline) {
    std::fprintf(stderr, "no recorded timeline\n");
    return 1;
  }
  if (!how.timeline.empty()) std::ofstream(how.timeline) << overlap::io::to_json(*report.timeline);
  std::printf("recorded_pipeline: %zu chunks on %u streams, outputs verified\n", report.chunks,
              report.streams);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  settings how;
  if (argc % 2 == 0) {
    std::fprintf(stderr, "error: '%s' needs a value\n", argv[argc - 1]);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--mib") {
      how.mib = std::strtoull(value, nullptr, 10);
    } else if (flag == "--chunk-mib") {
      how.chunk_mib = std::strtoull(value, nullptr, 10);
    } else if (flag == "--kernel") {
      how.sincos = std::string_view(value) == "sincos";
      if (!how.sincos && std::string_view(value) != "affine") {
        std::fprintf(stderr, "error: --kernel: expected affine or sincos, got '%s'\n", value);
        return 2;
      }
    } else if (flag == "--timeline") {
      how.timeline = value;
    } else {
      std::fprintf(stderr, "error: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (how.mib == 0) {
    std::fprintf(stderr, "error: --mib must be at least 1\n");
    return 2;
  }
  if (overlap::cuda::device_count() == 0) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  try {
    return run(how);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
