// The default Pipeline's layout after its first run, on a GPU: a copy-bound
// run learns "copies" and moves to one kernel stream, a stage-bound one
// learns "stage" and ramps over five kernel streams, each size learns on its
// own, and every element of every run is right (random data, odd sizes).
#include <gtest/gtest.h>

#include <cstddef>
#include <numeric>
#include <optional>
#include <span>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "test_kernels.hpp"

namespace {

using overlap::cuda::layout_adaptation;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::run_bound;
using overlap::cuda::run_report;
using overlap::cuda::stream_view;

constexpr std::size_t MiB = std::size_t{1} << 20;

// Random input, a poisoned output, and y = 2x + 1 expected of each element.
struct checked_data {
  explicit checked_data(std::size_t n, unsigned seed) : input(n), output(n) {
    overlap_test::fill_random(input.span(), seed);
    expected = overlap_test::axpb_reference(input.span());
  }
  // Runs `pipeline` over the data with `stage` and checks every element.
  template <typename Stage>
  run_report run_checked(Pipeline<float, float>& pipeline, Stage&& stage) {
    overlap_test::poison(output.span(), 0xA5);
    run_report report = pipeline.run(input.span(), output.span(), stage);
    for (std::size_t i = 0; i < input.size(); ++i) {
      if (output[i] != expected[i]) {
        ADD_FAILURE() << "element " << i << " of " << input.size() << ": " << output[i]
                      << " != " << expected[i];
        break;
      }
    }
    return report;
  }
  pinned_buffer<float> input;
  pinned_buffer<float> output;
  std::vector<float> expected;
};

const auto axpb = [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
  overlap_test::launch_axpb(in, out, s);
};

// 300 us a chunk on 8 blocks: a 1 MiB chunk's copies take ~20 us.
const auto slow_axpb = [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
  overlap_test::launch_slow_axpb(in.data(), out.data(), in.size(), 300, 8, 256, s);
  overlap::cuda::check(cudaGetLastError(), "launch_slow_axpb");
};

TEST(PipelineAdaptGpu, ACopyBoundRunLearnsCopiesAndMovesToOneKernelStream) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  checked_data data(64 * MiB / sizeof(float) + 7, 0xada9U);  // 32 chunks of 2 MiB and 7 floats
  Pipeline<float, float> pipeline;
  const run_report first = data.run_checked(pipeline, axpb);
  ASSERT_TRUE(first.bound.has_value());
  EXPECT_EQ(*first.bound, run_bound::copies);
  EXPECT_EQ(first.streams, 5U);
  EXPECT_EQ(first.chunks, 33U);
  EXPECT_FALSE(first.timeline.has_value());  // timed to learn, not recorded
  for (int again = 0; again < 2; ++again) {
    const run_report next = data.run_checked(pipeline, axpb);
    ASSERT_TRUE(next.bound.has_value());
    EXPECT_EQ(*next.bound, run_bound::copies);
    EXPECT_EQ(next.assignment, overlap::cuda::stream_assignment::per_stage);
    EXPECT_EQ(next.streams, 3U);
    EXPECT_EQ(next.chunk_bytes, first.chunk_bytes);
    EXPECT_EQ(next.chunks, first.chunks);
  }
}

TEST(PipelineAdaptGpu, AStageBoundRunLearnsStageAndRampsOverFiveKernelStreams) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const std::size_t n = 8 * MiB / sizeof(float) + 3;  // 9 chunks of 1 MiB, the last 3 floats
  checked_data data(n, 0x57a9eU);
  Pipeline<float, float> pipeline;
  const run_report first = data.run_checked(pipeline, slow_axpb);
  ASSERT_TRUE(first.bound.has_value());
  EXPECT_EQ(*first.bound, run_bound::stage);
  EXPECT_EQ(first.streams, 5U);
  EXPECT_EQ(first.chunks, 9U);
  const run_report next = data.run_checked(pipeline, slow_axpb);
  EXPECT_EQ(next.bound, first.bound);
  EXPECT_EQ(next.streams, 7U);
  ASSERT_FALSE(next.chunk_schedule.empty());
  EXPECT_EQ(next.chunk_schedule.front(), MiB / 4);  // a quarter of the first chunk
  EXPECT_EQ(next.chunk_bytes, 2 * MiB);             // twice it in the middle
  EXPECT_EQ(std::accumulate(next.chunk_schedule.begin(), next.chunk_schedule.end(), std::size_t{0}),
            n * sizeof(float));
}

TEST(PipelineAdaptGpu, EachInputSizeLearnsOnItsOwnAndAdaptOffKeepsTheLayout) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  checked_data big(32 * MiB / sizeof(float) + 1, 0xb16U);
  checked_data odd(12 * MiB / sizeof(float) + 5, 0x0ddU);
  Pipeline<float, float> pipeline;
  EXPECT_EQ(big.run_checked(pipeline, axpb).streams, 5U);
  EXPECT_EQ(big.run_checked(pipeline, axpb).streams, 3U);
  // A new size settles again: its first run takes the first layout.
  const run_report odd_first = odd.run_checked(pipeline, slow_axpb);
  EXPECT_EQ(odd_first.streams, 5U);
  EXPECT_EQ(odd_first.bound, std::optional<run_bound>(run_bound::stage));
  EXPECT_EQ(odd.run_checked(pipeline, slow_axpb).streams, 7U);

  pipeline_options off;
  off.adapt = layout_adaptation::off;
  Pipeline<float, float> fixed(off);
  for (int run = 0; run < 2; ++run) {
    const run_report r = big.run_checked(fixed, axpb);
    EXPECT_FALSE(r.bound.has_value());
    EXPECT_EQ(r.streams, 5U);
  }
}

TEST(PipelineAdaptGpu, ARecordedRunKeepsItsTimelineWhileItLearns) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  checked_data data(16 * MiB / sizeof(float) + 11, 0x7eccU);
  pipeline_options options;
  options.record = overlap::cuda::recording::on;
  Pipeline<float, float> pipeline(options);
  const run_report first = data.run_checked(pipeline, axpb);
  ASSERT_TRUE(first.timeline.has_value());
  EXPECT_EQ(first.bound, std::optional<run_bound>(run_bound::copies));
  const run_report next = data.run_checked(pipeline, axpb);
  ASSERT_TRUE(next.timeline.has_value());
  EXPECT_EQ(next.streams, 3U);
  EXPECT_EQ(next.timeline->streams.size(), next.program.streams().size());
}

}  // namespace
