// The automatic layout's rules after a first run (pipeline_adapt.cpp), with
// no GPU: which options adapt, how busy times name the bound, and the
// layout each bound takes — whole chunks that add up to the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::host_path;
using overlap::cuda::layout_adaptation;
using overlap::cuda::pipeline_options;
using overlap::cuda::run_bound;
using overlap::cuda::detail::adapted_options;
using overlap::cuda::detail::adapts_layout;
using overlap::cuda::detail::bound_of;
using overlap::cuda::detail::erased_run;
using overlap::cuda::detail::make_plan;
using overlap::cuda::detail::plan;

constexpr std::size_t MiB = std::size_t{1} << 20;

// make_plan of `elements` floats each way (the pointers are never dereferenced).
plan plan_of(std::size_t elements, const pipeline_options& options) {
  static std::byte anchor[1];
  return make_plan(erased_run{anchor, elements, sizeof(float), anchor, elements, sizeof(float)}, options);
}

TEST(PipelineAdapt, TheDefaultAdaptsAndEveryGivenLayoutChoiceKeepsItsLayout) {
  const std::size_t elements = 64 * MiB / sizeof(float);
  const pipeline_options defaults;
  EXPECT_EQ(defaults.adapt, layout_adaptation::from_first_run);
  EXPECT_TRUE(adapts_layout(defaults, plan_of(elements, defaults), host_path::pinned));
  // Staged or registered data, or too few chunks to change: no.
  EXPECT_FALSE(adapts_layout(defaults, plan_of(elements, defaults), host_path::staged));
  EXPECT_FALSE(adapts_layout(defaults, plan_of(elements, defaults), host_path::registered));
  EXPECT_FALSE(adapts_layout(defaults, plan_of(1000, defaults), host_path::pinned));  // one chunk

  std::vector<pipeline_options> given(8);
  given[0].adapt = layout_adaptation::off;
  given[1].chunk_bytes = 4 * MiB;
  given[2].chunk_schedule = {32 * MiB, 32 * MiB};
  given[3].streams = 5U;
  given[4].ring_depth = 6U;
  given[5].device_budget_bytes = 256 * MiB;
  given[6].chunking = overlap::cuda::automatic_chunking::planned;
  given[6].model = overlap::DeviceModel::preset("h100");
  given[7].assignment = overlap::cuda::stream_assignment::round_robin;
  for (std::size_t i = 0; i < given.size(); ++i)
    EXPECT_FALSE(adapts_layout(given[i], plan_of(elements, given[i]), host_path::pinned)) << "case " << i;
}

TEST(PipelineAdapt, TheStageAgainstTheBusierCopyDirectionNamesTheBound) {
  EXPECT_EQ(bound_of(0.2, 5.0, 4.9), run_bound::copies);
  EXPECT_EQ(bound_of(2.49, 4.0, 5.0), run_bound::copies);   // under half the busier direction
  EXPECT_EQ(bound_of(2.5, 4.0, 5.0), run_bound::balanced);  // half of it
  EXPECT_EQ(bound_of(5.0, 5.0, 1.0), run_bound::balanced);  // as long as it
  EXPECT_EQ(bound_of(5.01, 5.0, 1.0), run_bound::stage);
  EXPECT_EQ(bound_of(6.2, 0.3, 0.3), run_bound::stage);
  EXPECT_EQ(bound_of(1.0, 0.0, 0.0), run_bound::stage);  // no copies timed at all
  EXPECT_EQ(overlap::cuda::to_string(run_bound::copies), "copies");
  EXPECT_EQ(overlap::cuda::to_string(run_bound::balanced), "balanced");
  EXPECT_EQ(overlap::cuda::to_string(run_bound::stage), "stage");
}

TEST(PipelineAdapt, CopyBoundRunsKeepTheirChunkOnOneKernelStream) {
  const std::size_t elements = 256 * MiB / sizeof(float);
  const pipeline_options defaults;
  const plan first = plan_of(elements, defaults);
  ASSERT_EQ(first.chunk_input_elements * sizeof(float), 8 * MiB);
  const pipeline_options next = adapted_options(defaults, run_bound::copies, first, elements, sizeof(float));
  EXPECT_EQ(next.adapt, layout_adaptation::off);
  const plan second = plan_of(elements, next);
  EXPECT_EQ(second.order, overlap::issue_order::stage_streams);
  EXPECT_EQ(second.streams, 3U);  // an upload, one kernel and a download stream
  EXPECT_EQ(second.ring_depth, 3U);
  EXPECT_EQ(second.chunk_input_elements, first.chunk_input_elements);
  EXPECT_EQ(second.chunks, first.chunks);
}

TEST(PipelineAdapt, BalancedRunsKeepTheirLayout) {
  const std::size_t elements = 256 * MiB / sizeof(float);
  const pipeline_options defaults;
  const plan first = plan_of(elements, defaults);
  const plan second = plan_of(elements, adapted_options(defaults, run_bound::balanced, first, elements, 4));
  EXPECT_EQ(second.order, first.order);
  EXPECT_EQ(second.streams, first.streams);
  EXPECT_EQ(second.chunk_input_elements, first.chunk_input_elements);
}

TEST(PipelineAdapt, StageBoundRunsRampFromAQuarterToTwiceTheChunkOverFiveKernelStreams) {
  const std::size_t elements = 16 * MiB / sizeof(float);
  const pipeline_options defaults;
  const plan first = plan_of(elements, defaults);
  ASSERT_EQ(first.chunk_input_elements * sizeof(float), 1 * MiB);
  const pipeline_options next = adapted_options(defaults, run_bound::stage, first, elements, sizeof(float));
  // Up by doubling, six at twice the chunk, the 512 KiB left over slotted
  // into the way down.
  const std::vector<std::size_t> ramp = {MiB / 4, MiB / 2, MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB,
                                         2 * MiB, 2 * MiB, MiB, MiB / 2, MiB / 2, MiB / 4};
  EXPECT_EQ(next.chunk_schedule, ramp);
  const plan second = plan_of(elements, next);
  EXPECT_EQ(second.order, overlap::issue_order::stage_streams);
  EXPECT_EQ(second.streams, 7U);
  EXPECT_EQ(second.chunks, ramp.size());
  EXPECT_EQ(second.chunk_input_elements * sizeof(float), 2 * MiB);
}

TEST(PipelineAdapt, StageBoundRampsOfOddSizesAndRatiosAreWholeAndAddUp) {
  // Odd element counts, and 256 inputs per output with 3 more units than a
  // power of two: every chunk but the last a whole number of units, all of
  // them adding up to the input.
  struct odd_case {
    std::size_t elements;
    std::size_t in_per_out;
  };
  for (const odd_case c :
       {odd_case{10'000'019, 1}, odd_case{std::size_t{4096 + 3} * 256, 256}, odd_case{4 * 1024 + 1, 1}}) {
    pipeline_options options;
    options.ratio = {1, c.in_per_out};
    static std::byte anchor[1];
    const erased_run run{anchor, c.elements, sizeof(float), anchor, c.elements / c.in_per_out, sizeof(float)};
    const plan first = make_plan(run, options);
    const pipeline_options next =
        adapted_options(options, run_bound::stage, first, c.elements, sizeof(float));
    ASSERT_FALSE(next.chunk_schedule.empty()) << c.elements;
    EXPECT_EQ(std::accumulate(next.chunk_schedule.begin(), next.chunk_schedule.end(), std::size_t{0}),
              c.elements * sizeof(float))
        << c.elements;
    for (std::size_t k = 0; k + 1 < next.chunk_schedule.size(); ++k)
      EXPECT_EQ(next.chunk_schedule[k] % (c.in_per_out * sizeof(float)), 0U) << c.elements << " chunk " << k;
    const plan second = make_plan(run, next);  // make_plan accepts it: no throw
    EXPECT_EQ(second.chunks, next.chunk_schedule.size());
    EXPECT_LE(*std::max_element(next.chunk_schedule.begin(), next.chunk_schedule.end()),
              2 * first.chunk_input_elements * sizeof(float) + c.in_per_out * sizeof(float));
  }
}

}  // namespace
