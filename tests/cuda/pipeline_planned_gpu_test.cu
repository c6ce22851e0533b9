// Planned automatic chunking on a GPU: the chunking comes from the
// planner on the device's built-in model (or a given one), and every output
// element is still right, over sizes with remainders.
#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::automatic_chunking;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::axpb_reference;
using overlap_test::launch_axpb;

void run_planned(std::size_t n, const pipeline_options& options) {
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x51a7U + n);
  overlap_test::poison(output.span(), 0xA5);
  const std::vector<float> expected = axpb_reference(input.span());
  Pipeline<float, float> pipeline(options);
  const auto report = pipeline.run(input.span(), output.span(),
                                   [](std::span<const float> in, std::span<float> out, stream_view s,
                                      std::size_t) { launch_axpb(in, out, s); });
  // The run used what make_plan decides on the same model.
  const auto* model =
      options.model ? &*options.model : &overlap::cuda::detail::builtin_model_of_current_device();
  overlap::cuda::detail::erased_run erased{input.data(), n, sizeof(float), output.data(), n, sizeof(float)};
  const auto plan = overlap::cuda::detail::make_plan(erased, options, model);
  EXPECT_EQ(report.chunks, plan.chunks) << n;
  EXPECT_EQ(report.streams, plan.streams) << n;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(output[i], expected[i]) << "element " << i << " of " << n;
  }
}

TEST(PipelinePlanned, BuiltInModelChunksAndEveryElementIsRight) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pipeline_options options;
  options.chunking = automatic_chunking::planned;
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000003}, (std::size_t{64} << 20) / 4 + 7}) {
    run_planned(n, options);
  }
}

TEST(PipelinePlanned, AGivenModelAndABudgetAreHonoured) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pipeline_options options;
  options.chunking = automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("hyperq");
  options.device_budget_bytes = std::size_t{8} << 20;
  const std::size_t n = (std::size_t{48} << 20) / 4 + 3;
  run_planned(n, options);
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 7);
  const auto report =
      Pipeline<float, float>(options).run(input.span(), output.span(),
                                          [](std::span<const float> in, std::span<float> out, stream_view s,
                                             std::size_t) { launch_axpb(in, out, s); });
  EXPECT_LE(report.device_bytes, *options.device_budget_bytes);
}

}  // namespace
