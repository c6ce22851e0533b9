// Chunk schedules and stage calibration on a GPU: chunks of varying size
// (given, or a ramp the planner chose) move every element right, through a
// run and through a captured graph; a calibrated run times its stage, fits a
// curve that grows with the chunk, and plans on it.
#include <gtest/gtest.h>

#include <cstddef>
#include <numeric>
#include <span>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::axpb_reference;
using overlap_test::launch_axpb;

constexpr std::size_t MiB = std::size_t{1} << 20;

struct chunk_seen {
  std::size_t chunk;
  std::size_t in;
  std::size_t out;
};

// Runs y = 2x + 1 over n random floats with `options`; checks every element
// and returns the chunk sizes the stage saw, in issue order.
std::vector<chunk_seen> run_checked(std::size_t n, const pipeline_options& options,
                                    overlap::cuda::run_report* report_out = nullptr) {
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x5c4edU + n);
  overlap_test::poison(output.span(), 0xA5);
  const std::vector<float> expected = axpb_reference(input.span());
  std::vector<chunk_seen> seen;
  Pipeline<float, float> pipeline(options);
  const auto report =
      pipeline.run(input.span(), output.span(),
                   [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t k) {
                     seen.push_back({k, in.size(), out.size()});
                     launch_axpb(in, out, s);
                   });
  for (std::size_t i = 0; i < n; ++i) {
    if (output[i] != expected[i]) {
      ADD_FAILURE() << "element " << i << " of " << n << ": " << output[i] << " != " << expected[i];
      break;
    }
  }
  if (report_out != nullptr) *report_out = report;
  return seen;
}

TEST(PipelineScheduleGpu, AGivenScheduleMovesEveryElement) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  // Odd sizes: small, growing, large, shrinking, and an odd last chunk.
  const std::vector<std::size_t> elements = {1, 3000, 65536, 1000003, 262147, 4093, 7};
  pipeline_options options;
  for (const std::size_t e : elements) options.chunk_schedule.push_back(e * sizeof(float));
  options.streams = 3U;
  const std::size_t n = std::accumulate(elements.begin(), elements.end(), std::size_t{0});
  overlap::cuda::run_report report;
  const auto seen = run_checked(n, options, &report);
  ASSERT_EQ(seen.size(), elements.size());
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].chunk, k);
    EXPECT_EQ(seen[k].in, elements[k]) << k;
    EXPECT_EQ(seen[k].out, elements[k]) << k;
  }
  EXPECT_EQ(report.chunk_schedule, options.chunk_schedule);
  EXPECT_EQ(report.chunk_bytes, 1000003 * sizeof(float));
  // Three slots, each sized for the largest chunk in and out.
  EXPECT_GE(report.device_bytes, std::size_t{3} * 2 * 1000003 * sizeof(float));
}

TEST(PipelineScheduleGpu, AScheduleIsCapturedAndReplayed) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const std::vector<std::size_t> elements = {1000, 50000, 200001, 50000, 999};
  const std::size_t n = std::accumulate(elements.begin(), elements.end(), std::size_t{0});
  pipeline_options options;
  for (const std::size_t e : elements) options.chunk_schedule.push_back(e * sizeof(float));
  options.streams = 2U;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0xcafeU);
  overlap_test::poison(output.span(), 0x5A);
  Pipeline<float, float> pipeline(options);
  auto graph = pipeline.capture(input.span(), output.span(),
                                [](std::span<const float> in, std::span<float> out, stream_view s,
                                   std::size_t) { launch_axpb(in, out, s); });
  EXPECT_EQ(graph.captured().chunk_schedule, options.chunk_schedule);
  for (int round = 0; round < 2; ++round) {
    overlap_test::fill_random(input.span(), 0xbeefU + round);  // refilled in place, as replays require
    const std::vector<float> expected = axpb_reference(input.span());
    (void)graph.replay();
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(output[i], expected[i]) << "round " << round << ", element " << i;
    }
  }
}

TEST(PipelineScheduleGpu, APlannedRampMovesEveryElement) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  // A compute-heavy stage on the h100 model: the planner's choice for it is a ramp.
  pipeline_options options;
  options.chunking = overlap::cuda::automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("h100");
  options.stage_cost = overlap::KernelCost{0.0675, 0.428, 0};
  const std::size_t n = 64 * MiB / sizeof(float) + 5;
  overlap::cuda::run_report report;
  const auto seen = run_checked(n, options, &report);
  ASSERT_FALSE(report.chunk_schedule.empty()) << "the planner chose uniform chunks of " << report.chunk_bytes;
  ASSERT_EQ(seen.size(), report.chunk_schedule.size());
  std::size_t total = 0;
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].in * sizeof(float), report.chunk_schedule[k]) << k;
    total += seen[k].in;
  }
  EXPECT_EQ(total, n);
  // A ramp: its first chunk is smaller than its largest.
  EXPECT_LT(report.chunk_schedule.front(), report.chunk_bytes);
}

TEST(PipelineScheduleGpu, CalibrationFitsACurveThatGrowsWithTheChunkAndPlansOnIt) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pipeline_options options;
  options.calibrate = overlap::cuda::stage_calibration::on;
  const std::size_t n = 48 * MiB / sizeof(float) + 3;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x7157U);
  const std::vector<float> expected = axpb_reference(input.span());
  Pipeline<float, float> pipeline(options);
  std::size_t calls = 0;
  const auto stage = [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
    ++calls;
    launch_axpb(in, out, s);
  };
  for (int round = 0; round < 2; ++round) {
    overlap_test::poison(output.span(), 0xA5);
    calls = 0;
    const auto report = pipeline.run(input.span(), output.span(), stage);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(output[i], expected[i]) << "round " << round << ", " << i;
    ASSERT_TRUE(report.stage_cost.has_value());
    const overlap::KernelCost& cost = report.stage_cost->cost;
    EXPECT_GE(cost.fixed_ms, 0.0);
    EXPECT_GT(cost.ms_per_mib, 0.0);
    // y = 2x + 1 streams 8 bytes per input float: on any GPU of the last
    // decade well under 0.1 ms per MiB, and launches well under 1 ms.
    EXPECT_LT(cost.ms_per_mib, 0.1);
    EXPECT_LT(cost.fixed_ms, 1.0);
    EXPECT_LT(report.stage_cost->relative_rms, 0.5);
    // Calibration ran once: the second run calls the stage once per chunk.
    if (round == 0) {
      EXPECT_GT(calls, report.chunks);
    } else {
      EXPECT_EQ(calls, report.chunks);
    }
    // The chunking is the planner's on the device's model with the fitted curve.
    pipeline_options planned = options;
    planned.stage_cost = cost;
    const overlap::cuda::detail::erased_run erased{input.data(),  n, sizeof(float),
                                                   output.data(), n, sizeof(float)};
    const auto plan =
        overlap::cuda::detail::make_plan(erased, planned, &overlap::cuda::builtin_model_of_current_device());
    EXPECT_EQ(report.chunks, plan.chunks);
    EXPECT_EQ(report.streams, plan.streams);
  }
}

TEST(PipelineScheduleGpu, AStageThatFailsWhileCalibratingIsReportedAndNothingLeaks) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pipeline_options options;
  options.calibrate = overlap::cuda::stage_calibration::on;
  const std::size_t n = 8 * MiB / sizeof(float);
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 3);
  Pipeline<float, float> pipeline(options);
  int calls = 0;
  try {
    (void)pipeline.run(input.span(), output.span(),
                       [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                         if (++calls == 3) throw std::runtime_error("stage refused");
                         launch_axpb(in, out, s);
                       });
    FAIL() << "the stage's failure was not reported";
  } catch (const overlap::cuda::pipeline_error& e) {
    EXPECT_NE(std::string(e.what()).find("calibrating the stage"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stage refused"), std::string::npos) << e.what();
  }
  // The device is still usable, and the same Pipeline runs a good stage after.
  const std::vector<float> expected = axpb_reference(input.span());
  (void)pipeline.run(input.span(), output.span(),
                     [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                       launch_axpb(in, out, s);
                     });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(output[i], expected[i]) << i;
}

}  // namespace
