// Pageable host data staged through pinned slots (pageable_memory::stage
// and automatic) on a GPU: every output element against the host's
// reference on random data, odd sizes, one pageable side or both, chunk
// schedules, ratios; a failing chunk; a capture refused.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::host_path;
using overlap::cuda::pageable_memory;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_error;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::axpb_reference;
using overlap_test::launch_axpb;
using overlap_test::MiB;

#define SKIP_WITHOUT_GPU() \
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device"

void axpb_stage(std::span<const float> in, std::span<float> out, stream_view s, std::size_t /*unused*/) {
  launch_axpb(in, out, s);
}

pipeline_options staged(std::size_t chunk_bytes, unsigned streams) {
  pipeline_options o;
  o.pageable = pageable_memory::stage;
  o.chunk_bytes = chunk_bytes;
  o.streams = streams;
  return o;
}

struct staged_case {
  std::size_t elements;
  std::size_t chunk_bytes;
  unsigned streams;
};

class PipelineStaged : public ::testing::TestWithParam<staged_case> {};

TEST_P(PipelineStaged, PageableInputAndOutputMatchTheReference) {
  SKIP_WITHOUT_GPU();
  const staged_case c = GetParam();
  std::vector<float> input(c.elements);
  std::vector<float> output(c.elements);
  overlap_test::fill_random(std::span<float>(input), c.elements);
  overlap_test::poison(std::span<float>(output), 0xA5);
  Pipeline<float> pipeline(staged(c.chunk_bytes, c.streams));
  for (int run = 0; run < 2; ++run) {
    const auto report = pipeline.run(input, output, axpb_stage);
    EXPECT_EQ(report.host, host_path::staged);
    EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), output)) << "run " << run;
    const std::size_t chunk = c.chunk_bytes / sizeof(float);
    EXPECT_EQ(report.chunks, (c.elements + chunk - 1) / chunk);
    EXPECT_FALSE(report.program.ops().empty());
    overlap_test::poison(std::span<float>(output), 0x5A);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PipelineStaged,
                         ::testing::Values(staged_case{1'000'003, 1 * MiB, 4}, staged_case{7, 4096, 2},
                                           staged_case{std::size_t{3} * 262'144 + 5, std::size_t{256} * 1024,
                                                       1},
                                           staged_case{10'000'019, 4 * MiB, 3}),
                         [](const ::testing::TestParamInfo<staged_case>& param_info) {
                           return std::to_string(param_info.param.elements) + "_elements_" +
                                  std::to_string(param_info.param.chunk_bytes) + "_bytes_x" +
                                  std::to_string(param_info.param.streams);
                         });

// No chunking options: a thirtysecond of the input, at least 1 MiB and at
// most 8 MiB (pipeline_options::chunking), and every element right.
TEST(PipelineStagedDefaults, ChunksAreAThirtySecondOfTheInputWithinOneToEightMiB) {
  SKIP_WITHOUT_GPU();
  struct sized {
    std::size_t elements;
    std::size_t chunk_bytes;
  };
  for (const sized c : {sized{16 * MiB + 3, 2 * MiB}, sized{262'144 + 7, 1 * MiB}}) {
    SCOPED_TRACE(std::to_string(c.elements) + " floats");
    std::vector<float> input(c.elements);
    std::vector<float> output(c.elements);
    overlap_test::fill_random(std::span<float>(input), c.elements);
    overlap_test::poison(std::span<float>(output), 0xA5);
    pipeline_options o;
    o.pageable = pageable_memory::stage;
    Pipeline<float> pipeline(o);
    const auto report = pipeline.run(input, output, axpb_stage);
    EXPECT_EQ(report.host, host_path::staged);
    EXPECT_EQ(report.chunk_bytes, c.chunk_bytes);
    const std::size_t chunk = c.chunk_bytes / sizeof(float);
    EXPECT_EQ(report.chunks, (c.elements + chunk - 1) / chunk);
    EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), output));
  }
}

TEST(PipelineStagedSides, OnePageableSideIsEnoughToStage) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t n = 3'000'017;
  std::vector<float> pageable_in(n);
  overlap_test::fill_random(std::span<float>(pageable_in), 11);
  pinned_buffer<float> pinned_out(n);
  overlap_test::poison(pinned_out.span(), 0xA5);
  Pipeline<float> pipeline(staged(std::size_t{512} * 1024, 3));
  auto report = pipeline.run(pageable_in, pinned_out.span(), axpb_stage);
  EXPECT_EQ(report.host, host_path::staged);
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(pageable_in), pinned_out.span()));

  pinned_buffer<float> pinned_in(n);
  overlap_test::fill_random(pinned_in.span(), 12);
  std::vector<float> pageable_out(n);
  report = pipeline.run(pinned_in.span(), pageable_out, axpb_stage);
  EXPECT_EQ(report.host, host_path::staged);
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(pinned_in.span()), pageable_out));

  // Pinned on both sides: nothing to stage.
  report = pipeline.run(pinned_in.span(), pinned_out.span(), axpb_stage);
  EXPECT_EQ(report.host, host_path::pinned);
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(pinned_in.span()), pinned_out.span()));
}

TEST(PipelineStagedSchedule, AChunkScheduleAndANewSizeBetweenRuns) {
  SKIP_WITHOUT_GPU();
  std::vector<float> input(5'000'000);
  overlap_test::fill_random(std::span<float>(input), 21);
  std::vector<float> output(input.size());
  pipeline_options o;
  o.pageable = pageable_memory::stage;
  // 256 KiB, 1, 4, 8, 4 MiB, then the rest of the 20,000,000 bytes: growing, then shrinking.
  o.chunk_schedule = {262'144, 1'048'576, 4'194'304, 8'388'608, 4'194'304, 1'912'064};
  std::size_t total = 0;
  for (std::size_t b : o.chunk_schedule) total += b;
  ASSERT_EQ(total, input.size() * sizeof(float));
  Pipeline<float> pipeline(o);
  const auto report = pipeline.run(input, output, axpb_stage);
  EXPECT_EQ(report.host, host_path::staged);
  EXPECT_EQ(report.chunks, o.chunk_schedule.size());
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), output));
}

TEST(PipelineStagedRatio, AFourToOneReduction) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t n_out = 1'000'003;
  std::vector<std::uint32_t> input(4 * n_out);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<std::uint32_t>(i * 2654435761U);
  std::vector<std::uint32_t> output(n_out, 0xFFFFFFFFU);
  pipeline_options o = staged(1 * MiB, 4);
  o.ratio = {1, 4};
  Pipeline<std::uint32_t> pipeline(o);
  (void)pipeline.run(input, output,
                     [](std::span<const std::uint32_t> in, std::span<std::uint32_t> out, stream_view s,
                        std::size_t) { overlap_test::launch_sum_of_four(in, out, s); });
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n_out; ++i) {
    if (output[i] != input[4 * i] + input[4 * i + 1] + input[4 * i + 2] + input[4 * i + 3]) ++bad;
  }
  EXPECT_EQ(bad, 0U);
}

TEST(PipelineStagedAutomatic, FollowsTheModel) {
  SKIP_WITHOUT_GPU();
  std::vector<float> input(2'000'003);
  overlap_test::fill_random(std::span<float>(input), 31);
  std::vector<float> output(input.size());
  pipeline_options o;
  o.pageable = pageable_memory::automatic;
  o.chunk_bytes = 1 * MiB;
  overlap::DeviceModel m = overlap::DeviceModel::preset("h100");
  m.host_staging = {{8, 25.0}};
  m.host_register_ms_per_gib = 60.0;
  m.host_unregister_ms_per_gib = 26.0;
  o.model = m;
  auto report = Pipeline<float>(o).run(input, output, axpb_stage);
  EXPECT_EQ(report.host, host_path::staged);
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), output));

  m.host_register_ms_per_gib = 1.0;
  m.host_unregister_ms_per_gib = 1.0;
  o.model = m;
  overlap_test::poison(std::span<float>(output), 0xA5);
  report = Pipeline<float>(o).run(input, output, axpb_stage);
  EXPECT_EQ(report.host, host_path::registered);
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), output));
  EXPECT_FALSE(overlap::cuda::is_pinned(input.data())) << "registered for the run only";
}

TEST(PipelineStagedFailure, AFailingChunkIsNamedAndEarlierOutputsAreComplete) {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t chunk = (1 * MiB) / sizeof(float);
  std::vector<float> input(10 * chunk + 17);
  overlap_test::fill_random(std::span<float>(input), 41);
  std::vector<float> output(input.size());
  overlap_test::poison(std::span<float>(output), 0xA5);
  Pipeline<float> pipeline(staged(1 * MiB, 3));
  try {
    (void)pipeline.run(input, output,
                       [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t k) {
                         if (k == 4) throw std::runtime_error("planted failure");
                         launch_axpb(in, out, s);
                       });
    ADD_FAILURE() << "no pipeline_error";
  } catch (const pipeline_error& e) {
    EXPECT_EQ(e.chunk(), 4U);
    EXPECT_TRUE(e.earlier_chunks_complete());
    EXPECT_NE(std::string(e.what()).find("staging pageable memory"), std::string::npos) << e.what();
  }
  const std::vector<float> expected = axpb_reference(input);
  EXPECT_TRUE(overlap_test::same_bytes<float>(std::span<const float>(expected.data(), 4 * chunk),
                                              std::span<const float>(output.data(), 4 * chunk)));
  // The Pipeline runs again.
  const auto report = pipeline.run(input, output, axpb_stage);
  EXPECT_EQ(report.host, host_path::staged);
  EXPECT_TRUE(overlap_test::same_bytes<float>(expected, output));
}

TEST(PipelineStagedRecording, IsRefusedNamingRecordBeforeAnyChunk) {
  SKIP_WITHOUT_GPU();
  std::vector<float> input(1 << 20, 1.0F);
  std::vector<float> output(input.size());
  pipeline_options o = staged(1 * MiB, 2);
  o.record = overlap::cuda::recording::on;
  Pipeline<float> pipeline(o);
  bool stage_called = false;
  try {
    (void)pipeline.run(
        input, output,
        [&](std::span<const float>, std::span<float>, stream_view, std::size_t) { stage_called = true; });
    ADD_FAILURE() << "recorded a staged run";
  } catch (const overlap::invalid_input& e) {
    EXPECT_EQ(std::string(e.what()).rfind("record:", 0), 0U) << e.what();
  }
  EXPECT_FALSE(stage_called);
}

TEST(PipelineStagedCapture, IsRefusedNamingPageable) {
  SKIP_WITHOUT_GPU();
  std::vector<float> input(1 << 20, 1.0F);
  std::vector<float> output(input.size());
  const Pipeline<float> pipeline(staged(1 * MiB, 2));
  try {
    (void)pipeline.capture(input, output, axpb_stage);
    ADD_FAILURE() << "captured a staged run";
  } catch (const overlap::invalid_input& e) {
    EXPECT_EQ(std::string(e.what()).rfind("pageable:", 0), 0U) << e.what();
  }
}

}  // namespace
