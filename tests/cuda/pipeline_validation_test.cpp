// Pipeline argument validation and chunking, with no GPU: every bad argument
// must be rejected as invalid_input naming it before any CUDA call. On a
// machine without a GPU a CUDA call made too early would throw cuda_error
// instead, and on one with a GPU the pageable-memory check would answer
// first; both make these tests fail, so they pin the order down everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/sim/plan.hpp"

namespace {

using overlap::invalid_input;
using overlap::cuda::output_ratio;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap::cuda::detail::erased_run;
using overlap::cuda::detail::make_plan;

constexpr std::size_t MiB = std::size_t{1} << 20;

// Runs `call`, which must throw invalid_input; returns its message.
template <typename Call>
std::string invalid_input_message(Call&& call) {
  try {
    call();
  } catch (const invalid_input& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected invalid_input, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected invalid_input, nothing was thrown";
  return {};
}

// Asserts the rejection names `argument` first (messages read "argument: ...")
// and is not the later pageable-memory check.
void expect_names(const std::string& message, const std::string& argument) {
  EXPECT_EQ(message.rfind(argument + ":", 0), 0U) << "message: " << message;
  EXPECT_EQ(message.find("pageable"), std::string::npos) << "message: " << message;
}

/// Which Pipeline member a rejection test calls.
enum class entry { run, capture };

// Runs (or captures) a Pipeline over plain host vectors: pageable memory, so
// only validation that precedes every CUDA call can produce the expected error.
template <typename In, typename Out = In>
std::string run_rejected(const pipeline_options& options, std::size_t input_size, std::size_t output_size,
                         entry how = entry::run) {
  std::vector<In> input(input_size);
  std::vector<Out> output(output_size);
  Pipeline<In, Out> pipeline(options);
  bool stage_called = false;
  const auto stage = [&](std::span<const In>, std::span<Out>, stream_view, std::size_t) {
    stage_called = true;
  };
  std::string message = invalid_input_message([&] {
    if (how == entry::run) {
      (void)pipeline.run(std::span<const In>(input), std::span<Out>(output), stage);
    } else {
      (void)pipeline.capture(std::span<const In>(input), std::span<Out>(output), stage);
    }
  });
  EXPECT_FALSE(stage_called);
  return message;
}

// A run description for make_plan only: the pointers are never dereferenced.
erased_run fake_run(std::size_t input_elements, std::size_t input_element_bytes, std::size_t output_elements,
                    std::size_t output_element_bytes) {
  static std::byte anchor[1];
  return erased_run{anchor, input_elements,  input_element_bytes,
                    anchor, output_elements, output_element_bytes};
}

TEST(PipelineValidation, NullInputWithSizeNamesInput) {
  std::vector<float> output(16);
  // Through the engine Pipeline::run forwards to: a std::span cannot hold a
  // null pointer with a size without undefined behaviour.
  overlap::cuda::detail::pipeline_engine engine;
  const erased_run run{nullptr, 16, sizeof(float), output.data(), output.size(), sizeof(float)};
  expect_names(invalid_input_message([&] {
                 (void)engine.run(run, {},
                                  [](const void*, std::size_t, void*, std::size_t, stream_view, std::size_t) {
                                    ADD_FAILURE() << "stage called";
                                  });
               }),
               "input");
}

TEST(PipelineValidation, NullOutputWithSizeNamesOutput) {
  std::vector<float> input(16);
  overlap::cuda::detail::pipeline_engine engine;
  const erased_run run{input.data(), input.size(), sizeof(float), nullptr, 16, sizeof(float)};
  expect_names(invalid_input_message([&] {
                 (void)engine.run(run, {},
                                  [](const void*, std::size_t, void*, std::size_t, stream_view, std::size_t) {
                                    ADD_FAILURE() << "stage called";
                                  });
               }),
               "output");
}

TEST(PipelineValidation, EmptyOutputSpanForNonEmptyInputNamesOutput) {
  const std::string message = run_rejected<float>({}, 16, 0);
  expect_names(message, "output");
  EXPECT_NE(message.find("too small"), std::string::npos) << message;
}

TEST(PipelineValidation, OutputTooSmallNamesOutputAndTheSizes) {
  const std::string message = run_rejected<float>({}, 100, 99);
  expect_names(message, "output");
  EXPECT_NE(message.find("99"), std::string::npos) << message;
  EXPECT_NE(message.find("100"), std::string::npos) << message;
}

TEST(PipelineValidation, OutputTooSmallForTheRatio) {
  pipeline_options options;
  options.ratio = output_ratio{2, 1};
  expect_names(run_rejected<float>(options, 100, 199), "output");
}

TEST(PipelineValidation, ChunkBytesZero) {
  pipeline_options options;
  options.chunk_bytes = 0;
  expect_names(run_rejected<float>(options, 100, 100), "chunk_bytes");
}

TEST(PipelineValidation, StreamsZero) {
  pipeline_options options;
  options.streams = 0U;
  expect_names(run_rejected<float>(options, 100, 100), "streams");
}

TEST(PipelineValidation, RingDepthBelowStreams) {
  pipeline_options options;
  options.streams = 4U;
  options.ring_depth = 3U;
  const std::string message = run_rejected<float>(options, 100, 100);
  expect_names(message, "ring_depth");
  EXPECT_NE(message.find("streams = 4"), std::string::npos) << message;
}

TEST(PipelineValidation, RingDepthBelowAutomaticStreams) {
  pipeline_options options;
  options.ring_depth = 1U;  // the automatic stream count is 5
  expect_names(run_rejected<float>(options, 100, 100), "ring_depth");
}

TEST(PipelineValidation, ChunkBytesNotAMultipleOfTheElementSize) {
  pipeline_options options;
  options.chunk_bytes = 6;  // not a whole number of doubles
  const std::string message = run_rejected<double>(options, 100, 100);
  expect_names(message, "chunk_bytes");
  EXPECT_NE(message.find("multiple"), std::string::npos) << message;
  EXPECT_NE(message.find("8 bytes"), std::string::npos) << message;
}

TEST(PipelineValidation, RatioWithZeroOutputs) {
  pipeline_options options;
  options.ratio = output_ratio{0, 1};
  expect_names(run_rejected<float>(options, 100, 100), "ratio");
}

TEST(PipelineValidation, RatioWithZeroInputs) {
  pipeline_options options;
  options.ratio = output_ratio{1, 0};
  expect_names(run_rejected<float>(options, 100, 100), "ratio");
}

TEST(PipelineValidation, RatioNotDividingTheInput) {
  pipeline_options options;
  options.ratio = output_ratio{1, 4};
  expect_names(run_rejected<float>(options, 10, 10), "ratio");
}

TEST(PipelineValidation, ChunkNotAMultipleOfTheRatio) {
  pipeline_options options;
  options.ratio = output_ratio{1, 4};
  options.chunk_bytes = 6 * sizeof(float);  // 6 inputs do not make whole groups of 4
  const std::string message = run_rejected<float>(options, 64, 16);
  expect_names(message, "chunk_bytes");
  EXPECT_NE(message.find("multiple of 4"), std::string::npos) << message;
}

TEST(PipelineValidation, BudgetTooSmallForOneElementPerSlot) {
  pipeline_options options;
  options.device_budget_bytes = 8;  // 4 slots of one float in and out need 32
  expect_names(run_rejected<float>(options, 100, 100), "device_budget_bytes");
}

TEST(PipelineValidation, BudgetTooSmallForTheGivenChunk) {
  pipeline_options options;
  options.chunk_bytes = 1 * MiB;
  options.streams = 2U;
  options.device_budget_bytes = 4 * MiB - 1;  // 2 slots x (1 MiB in + 1 MiB out) = 4 MiB
  const std::string message = run_rejected<float>(options, 1 << 20, 1 << 20);
  expect_names(message, "device_budget_bytes");
  EXPECT_NE(message.find("4194304"), std::string::npos) << message;
}

TEST(PipelineValidation, EmptyInputIsNotAnErrorAndCallsNothing) {
  // Nothing to move: the run returns before the pinned check, with no CUDA call.
  Pipeline<float> pipeline;
  bool stage_called = false;
  const auto report =
      pipeline.run({}, {}, [&](auto, auto, stream_view, std::size_t) { stage_called = true; });
  EXPECT_FALSE(stage_called);
  EXPECT_EQ(report.chunks, 0U);
  EXPECT_EQ(report.device_bytes, 0U);
  EXPECT_FALSE(report.timeline.has_value());
}

TEST(PipelineCaptureValidation, EmptyInputCapturesNothingAndReplaysNothing) {
  const Pipeline<float> pipeline;
  bool stage_called = false;
  overlap::cuda::pipeline_graph graph =
      pipeline.capture({}, {}, [&](auto, auto, stream_view, std::size_t) { stage_called = true; });
  EXPECT_FALSE(stage_called);
  EXPECT_EQ(graph.captured().chunks, 0U);
  EXPECT_EQ(graph.captured().device_bytes, 0U);
  const overlap::cuda::replay_report replay = graph.replay();  // no CUDA call: there is no graph
  EXPECT_EQ(replay.chunks, 0U);
  EXPECT_EQ(replay.host_launch_ms, 0.0);
}

TEST(PipelineCaptureValidation, ReplayOfAMovedFromGraphIsAnErrorNotACrash) {
  const Pipeline<float> pipeline;
  overlap::cuda::pipeline_graph graph = pipeline.capture({}, {}, [](auto, auto, stream_view, std::size_t) {});
  overlap::cuda::pipeline_graph moved = std::move(graph);
  // NOLINTNEXTLINE(bugprone-use-after-move): replaying a moved-from graph is the point of the test
  EXPECT_THROW((void)graph.replay(), overlap::error);
  EXPECT_EQ(moved.replay().chunks, 0U);
}

// ---- make_plan: chunking decisions ----

// Pipeline::capture validates exactly as run() does, before any CUDA call.
template <typename In, typename Out = In>
std::string capture_rejected(const pipeline_options& options, std::size_t input_size,
                             std::size_t output_size) {
  return run_rejected<In, Out>(options, input_size, output_size, entry::capture);
}

TEST(PipelineCaptureValidation, RejectsWhatRunRejectsNamingTheArgument) {
  pipeline_options zero_chunk;
  zero_chunk.chunk_bytes = 0;
  expect_names(capture_rejected<float>(zero_chunk, 16, 16), "chunk_bytes");
  pipeline_options zero_streams;
  zero_streams.streams = 0U;
  expect_names(capture_rejected<float>(zero_streams, 16, 16), "streams");
  pipeline_options misaligned;
  misaligned.chunk_bytes = 6;
  expect_names(capture_rejected<float>(misaligned, 16, 16), "chunk_bytes");
  expect_names(capture_rejected<float>({}, 16, 15), "output");
}

TEST(PipelineCaptureValidation, RecordingCannotBeCapturedAndSaysWhatToUseInstead) {
  pipeline_options options;
  options.record = overlap::cuda::recording::on;
  const std::string message = capture_rejected<float>(options, 16, 16);
  expect_names(message, "record");
  EXPECT_NE(message.find("Pipeline::run"), std::string::npos) << message;
}

TEST(PipelinePlan, DefaultsAreFiveStreamsByStageAndOneSlotPerStream) {
  const auto plan = make_plan(fake_run(1000, sizeof(float), 1000, sizeof(float)), {});
  EXPECT_EQ(plan.order, overlap::issue_order::stage_streams);
  EXPECT_EQ(plan.streams, 5U);
  EXPECT_EQ(plan.ring_depth, 5U);
  EXPECT_EQ(plan.output_elements, 1000U);
}

// The plan of 128 MiB of floats each way.
overlap::cuda::detail::plan plan_of_128_mib(const pipeline_options& options) {
  const std::size_t elements = 128 * MiB / sizeof(float);
  return make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
}

// Which streams each way of asking gets, and the chunk rule that goes with it.
TEST(PipelinePlan, StreamsGoRoundRobinWhenGivenOrAskedForAndByStageOtherwise) {
  using overlap::issue_order;
  using overlap::cuda::stream_assignment;
  struct expectation {
    std::optional<unsigned> streams;
    stream_assignment assignment;
    issue_order order;
    unsigned planned_streams;
    std::size_t chunk_bytes;  // 1/64 of the data round-robin, 1/32 by stage
  };
  const expectation cases[] = {
      {std::nullopt, stream_assignment::automatic, issue_order::stage_streams, 5U, 4 * MiB},
      {4U, stream_assignment::automatic, issue_order::depth_first, 4U, 2 * MiB},
      {std::nullopt, stream_assignment::round_robin, issue_order::depth_first, 4U, 2 * MiB},
      {3U, stream_assignment::per_stage, issue_order::stage_streams, 3U, 4 * MiB},
  };
  for (const expectation& c : cases) {
    pipeline_options options;
    options.streams = c.streams;
    options.assignment = c.assignment;
    const auto plan = plan_of_128_mib(options);
    EXPECT_EQ(plan.order, c.order) << overlap::to_string(c.order);
    EXPECT_EQ(plan.streams, c.planned_streams) << overlap::to_string(c.order);
    EXPECT_EQ(plan.ring_depth, c.planned_streams) << overlap::to_string(c.order);
    EXPECT_EQ(plan.chunk_input_elements * sizeof(float), c.chunk_bytes) << overlap::to_string(c.order);
  }
}

TEST(PipelinePlan, PerStageNeedsThreeStreamsAndSaysWhy) {
  pipeline_options options;
  options.assignment = overlap::cuda::stream_assignment::per_stage;
  options.streams = 2U;
  const std::string message = run_rejected<float>(options, 100, 100);
  expect_names(message, "streams");
  EXPECT_NE(message.find("expected >= 3"), std::string::npos) << message;
}

TEST(PipelinePlan, PageableDataThatMayBeStagedKeepsRoundRobinStreams) {
  for (const auto policy :
       {overlap::cuda::pageable_memory::stage, overlap::cuda::pageable_memory::automatic}) {
    pipeline_options options;
    options.pageable = policy;
    const auto plan = make_plan(fake_run(1000, sizeof(float), 1000, sizeof(float)), options);
    EXPECT_EQ(plan.order, overlap::issue_order::depth_first);
    EXPECT_EQ(plan.streams, 4U);
  }
}

TEST(PipelinePlan, AutomaticChunkClampsToOneMiBForSmallInputs) {
  // 1/64 of 4000 bytes is far below 1 MiB: the chunk is 1 MiB, larger than the data.
  const auto plan = make_plan(fake_run(1000, sizeof(float), 1000, sizeof(float)), {});
  EXPECT_EQ(plan.chunk_input_elements, MiB / sizeof(float));
  EXPECT_EQ(plan.chunks, 1U);
}

TEST(PipelinePlan, AutomaticChunkIsOneThirtySecondInTheMiddle) {
  const std::size_t elements = 128 * MiB / sizeof(float);
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), {});
  EXPECT_EQ(plan.chunk_input_elements * sizeof(float), 4 * MiB);
  EXPECT_EQ(plan.chunks, 32U);
}

TEST(PipelinePlan, AutomaticChunkClampsToEightMiBForLargeInputs) {
  const std::size_t elements = 4096 * MiB / sizeof(double);
  const auto plan = make_plan(fake_run(elements, sizeof(double), elements, sizeof(double)), {});
  EXPECT_EQ(plan.chunk_input_elements * sizeof(double), 8 * MiB);
  EXPECT_EQ(plan.chunks, 512U);
  pipeline_options round_robin;
  round_robin.streams = 4U;
  const auto rr = make_plan(fake_run(elements, sizeof(double), elements, sizeof(double)), round_robin);
  EXPECT_EQ(rr.chunk_input_elements * sizeof(double), 16 * MiB);
  EXPECT_EQ(rr.chunks, 256U);
}

TEST(PipelinePlan, ExplicitChunkWithARemainderRoundsTheChunkCountUp) {
  pipeline_options options;
  options.chunk_bytes = 1000 * sizeof(float);
  const auto plan = make_plan(fake_run(1000003, sizeof(float), 1000003, sizeof(float)), options);
  EXPECT_EQ(plan.chunk_input_elements, 1000U);
  EXPECT_EQ(plan.chunk_output_elements, 1000U);
  EXPECT_EQ(plan.chunks, 1001U);  // 1000 full chunks and one of 3 elements
}

TEST(PipelinePlan, ChunkCountIsTheCeilingForEverySize) {
  pipeline_options options;
  options.chunk_bytes = 7 * sizeof(std::uint8_t);
  for (std::size_t n : {1U, 6U, 7U, 8U, 13U, 14U, 15U, 1000003U}) {
    const auto plan = make_plan(fake_run(n, 1, n, 1), options);
    EXPECT_EQ(plan.chunks, (n + 6) / 7) << n << " elements";
  }
}

TEST(PipelinePlan, OneElementChunks) {
  pipeline_options options;
  options.chunk_bytes = sizeof(double);
  const auto plan = make_plan(fake_run(13, sizeof(double), 13, sizeof(double)), options);
  EXPECT_EQ(plan.chunk_input_elements, 1U);
  EXPECT_EQ(plan.chunks, 13U);
}

TEST(PipelinePlan, ChunkLargerThanTheDataIsOneChunk) {
  pipeline_options options;
  options.chunk_bytes = 4096 * sizeof(float);
  const auto plan = make_plan(fake_run(10, sizeof(float), 10, sizeof(float)), options);
  EXPECT_EQ(plan.chunks, 1U);
}

TEST(PipelinePlan, RatioScalesTheOutputChunk) {
  pipeline_options options;
  options.ratio = output_ratio{1, 4};
  options.chunk_bytes = 64 * sizeof(float);
  const auto plan = make_plan(fake_run(1000, sizeof(float), 250, sizeof(float)), options);
  EXPECT_EQ(plan.chunk_input_elements, 64U);
  EXPECT_EQ(plan.chunk_output_elements, 16U);
  EXPECT_EQ(plan.output_elements, 250U);
  EXPECT_EQ(plan.chunks, 16U);  // 15 x 64 + 40
}

TEST(PipelinePlan, AutomaticChunkIsAMultipleOfTheRatio) {
  pipeline_options options;
  options.ratio = output_ratio{1, 3};
  options.device_budget_bytes = 1000;  // forces an odd element count before rounding
  const std::size_t n = 3000;
  const auto plan = make_plan(fake_run(n, sizeof(float), n / 3, sizeof(float)), options);
  EXPECT_EQ(plan.chunk_input_elements % 3, 0U);
  EXPECT_GT(plan.chunk_input_elements, 0U);
}

TEST(PipelinePlan, BudgetShrinksTheAutomaticChunkSoTheRingFits) {
  const std::size_t elements = 256 * MiB / sizeof(float);
  pipeline_options options;
  options.device_budget_bytes = 20 * MiB;
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
  // 5 slots of (chunk in + chunk out) within 20 MiB: 2 MiB chunks instead of 8 MiB.
  EXPECT_EQ(plan.chunk_input_elements * sizeof(float), 2 * MiB);
  EXPECT_EQ(plan.chunks, 128U);
}

TEST(PipelinePlan, RingFitsTheBudgetAcrossBudgetsRatiosAndTypes) {
  struct shape {
    std::size_t in_bytes;
    std::size_t out_bytes;
    output_ratio ratio;
    unsigned streams;
    unsigned depth;
  };
  const shape shapes[] = {{4, 4, {1, 1}, 4, 4}, {1, 8, {1, 1}, 3, 7}, {8, 1, {1, 1}, 1, 1},
                          {4, 4, {1, 4}, 2, 5}, {4, 8, {3, 1}, 8, 8}, {24, 24, {1, 1}, 5, 9},
                          {2, 4, {2, 6}, 4, 6}};
  const std::size_t budgets[] = {1000, 4096, 65537, 1 * MiB, 3 * MiB + 7, 64 * MiB, 1000 * MiB};
  for (const shape& s : shapes) {
    const std::size_t n = std::size_t{12} * 1000003;  // divisible by every ratio input count above
    const std::size_t out_n = n * s.ratio.out / s.ratio.in;
    for (const std::size_t budget : budgets) {
      pipeline_options options;
      options.ratio = s.ratio;
      options.streams = s.streams;
      options.ring_depth = s.depth;
      options.device_budget_bytes = budget;
      const auto plan = make_plan(fake_run(n, s.in_bytes, out_n, s.out_bytes), options);
      const std::size_t ring = plan.ring_depth * (plan.chunk_input_elements * s.in_bytes +
                                                  plan.chunk_output_elements * s.out_bytes);
      EXPECT_LE(ring, budget) << "budget " << budget << ", in " << s.in_bytes << " B, depth " << s.depth;
      EXPECT_LE(plan.chunk_input_elements * s.in_bytes, 16 * MiB);
      EXPECT_EQ(plan.chunk_input_elements % s.ratio.in, 0U);
      EXPECT_EQ(plan.chunks, (n + plan.chunk_input_elements - 1) / plan.chunk_input_elements);
    }
  }
}

TEST(PipelinePlan, LargeBudgetLeavesTheAutomaticChunkAlone) {
  const std::size_t elements = 128 * MiB / sizeof(float);
  pipeline_options options;
  options.device_budget_bytes = 1024 * MiB;
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
  EXPECT_EQ(plan.chunk_input_elements * sizeof(float), 4 * MiB);
}

TEST(PipelinePlan, ExplicitChunkWithinTheBudgetIsKept) {
  pipeline_options options;
  options.chunk_bytes = 1 * MiB;
  options.streams = 2U;
  options.device_budget_bytes = 4 * MiB;  // exactly 2 x (1 MiB + 1 MiB)
  const auto plan = make_plan(fake_run(1 << 20, sizeof(float), 1 << 20, sizeof(float)), options);
  EXPECT_EQ(plan.chunk_input_elements * sizeof(float), 1 * MiB);
  EXPECT_EQ(plan.chunks, 4U);
}

TEST(PipelinePlan, EmptyInputPlansNoChunks) {
  const auto plan = make_plan(erased_run{nullptr, 0, sizeof(float), nullptr, 0, sizeof(float)}, {});
  EXPECT_EQ(plan.chunks, 0U);
}

TEST(PipelinePlan, RejectionsNameTheArgument) {
  pipeline_options options;
  options.streams = 0U;
  expect_names(invalid_input_message([&] { (void)make_plan(fake_run(8, 4, 8, 4), options); }), "streams");
  expect_names(invalid_input_message([&] { (void)make_plan(fake_run(8, 4, 7, 4), {}); }), "output");
  expect_names(invalid_input_message([&] {
                 (void)make_plan(erased_run{nullptr, 8, 4, fake_run(1, 1, 1, 1).output, 8, 4}, {});
               }),
               "input");
}

// cuda_error formats the call and what it served without touching a device.
TEST(CudaError, CarriesTheStatusTheCallAndTheContext) {
  try {
    overlap::cuda::check(cudaErrorInvalidValue, "cudaMemcpyAsync", "H2D of chunk 3 on stream 2");
    FAIL() << "check did not throw";
  } catch (const overlap::cuda_error& e) {
    EXPECT_EQ(e.status(), cudaErrorInvalidValue);
    EXPECT_EQ(e.call(), "cudaMemcpyAsync");
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaMemcpyAsync"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find("chunk 3"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(overlap::cuda::check(cudaSuccess, "cudaStreamSynchronize"));
}

}  // namespace

namespace {

// The Program a Pipeline issues is race-free by construction; the checker
// agrees over the ring shapes the Pipeline uses (slots handed between streams).
TEST(PipelineProgramCheck, ThePipelinesProgramsAreRaceFree) {
  for (const auto order : {overlap::issue_order::depth_first, overlap::issue_order::stage_streams})
    for (unsigned streams = order == overlap::issue_order::stage_streams ? 3 : 1; streams <= 5; ++streams) {
      for (unsigned extra = 0; extra <= 3; ++extra) {
        overlap::PipelineShape shape;
        shape.order = order;
        shape.chunks = 13;
        shape.streams = streams;
        shape.ring_depth = streams + extra;
        shape.kind = overlap::stream_kind::non_blocking;
        shape.h2d_bytes = 1000;
        shape.h2d_chunk_bytes = 80;
        shape.d2h_bytes = 500;
        shape.d2h_chunk_bytes = 40;
        shape.kernel_time = 0.0;
        EXPECT_NO_THROW(overlap::check::require_race_free(overlap::make_pipeline_program(shape)))
            << overlap::to_string(order) << ", " << streams << " streams, ring " << streams + extra;
      }
    }
}

}  // namespace

// ---- planned automatic chunking (a model given, no GPU needed) ----

namespace {

overlap::sim::Plan plan_directly(std::size_t bytes, const overlap::DeviceModel& model, unsigned max_streams) {
  overlap::sim::Workload w;
  w.bytes_in = bytes;
  w.bytes_out = bytes;
  overlap::sim::PlanOptions po;
  for (std::uint64_t size = std::uint64_t{256} * 1024; size < bytes; size *= 2)
    po.chunk_sizes.push_back(size);
  po.chunk_sizes.push_back(bytes);
  po.max_streams = max_streams;
  po.orders = {overlap::issue_order::depth_first};
  po.ring_factors = {1};
  return overlap::sim::plan(w, model, po);
}

std::size_t sum(const std::vector<std::size_t>& v) {
  std::size_t total = 0;
  for (const std::size_t x : v) total += x;
  return total;
}

}  // namespace

TEST(PipelinePlannedChunking, TakesThePlannersUniformDepthFirstChoiceOnTheModel) {
  const std::size_t elements = 256 * MiB / sizeof(float);
  pipeline_options options;
  options.chunking = overlap::cuda::automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("h100");
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
  const auto expected = plan_directly(256 * MiB, *options.model, 8);
  EXPECT_EQ(plan.chunk_input_elements * sizeof(float), expected.best.largest_chunk_bytes);
  EXPECT_EQ(plan.streams, expected.best.streams);
  EXPECT_EQ(plan.chunks, expected.best.chunks);
  // A ramp comes over as the planner's sizes (already whole floats here).
  ASSERT_EQ(plan.schedule.size(), expected.best.shape.chunk_schedule.size());
  for (std::size_t i = 0; i < plan.schedule.size(); ++i) {
    EXPECT_EQ(plan.schedule[i] * sizeof(float), expected.best.shape.chunk_schedule[i]) << i;
  }
  EXPECT_EQ(plan.ring_depth, plan.streams);
  // On the h100 model a transfer-bound 256 MiB run is cut into several
  // chunks over several streams, not left whole.
  EXPECT_GT(plan.chunks, 1U);
  EXPECT_GT(plan.streams, 1U);
}

TEST(PipelinePlannedChunking, GivenStreamsAreKeptAndTheChunkIsPlannedForThem) {
  const std::size_t elements = 64 * MiB / sizeof(float);
  pipeline_options options;
  options.chunking = overlap::cuda::automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("h100");
  options.streams = 2U;
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
  EXPECT_EQ(plan.streams, 2U);
  const auto expected = plan_directly(64 * MiB, *options.model, 2);
  EXPECT_EQ(plan.chunk_input_elements * sizeof(float), expected.best.largest_chunk_bytes);
}

TEST(PipelinePlannedChunking, ADeeperRingShrinksThePlannedChunkToTheBudget) {
  const std::size_t elements = 256 * MiB / sizeof(float);
  pipeline_options options;
  options.chunking = overlap::cuda::automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("h100");
  options.streams = 4U;
  options.ring_depth = 8U;
  options.device_budget_bytes = 64 * MiB;
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
  EXPECT_LE(std::size_t{plan.ring_depth} * 2 * plan.chunk_input_elements * sizeof(float), 64 * MiB);
}

TEST(PipelinePlannedChunking, FixedFractionIsTheDefaultAndAModelAloneChangesNothing) {
  const std::size_t elements = 128 * MiB / sizeof(float);
  pipeline_options defaults;
  defaults.model = overlap::DeviceModel::preset("h100");
  EXPECT_EQ(defaults.chunking, overlap::cuda::automatic_chunking::fixed_fraction);
  const auto plan_default = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), defaults);
  EXPECT_EQ(plan_default.chunk_input_elements * sizeof(float), 4 * MiB);
  EXPECT_EQ(plan_default.streams, 5U);
}

TEST(PipelinePlannedChunking, FixedFractionAndNoModelKeepTheOldRule) {
  const std::size_t elements = 128 * MiB / sizeof(float);
  pipeline_options fixed;
  fixed.model = overlap::DeviceModel::preset("h100");
  fixed.chunking = overlap::cuda::automatic_chunking::fixed_fraction;
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), fixed);
  EXPECT_EQ(plan.chunk_input_elements * sizeof(float), 4 * MiB);  // 1/32, per stage
  EXPECT_EQ(plan.streams, 5U);
}

TEST(PipelinePlannedChunking, ChunksKeepWholeOutputsAtARatio) {
  // 256 inputs per output: every planned chunk is a multiple of 256 elements.
  const std::size_t elements = 3 * 256 * 1000 + 256;
  pipeline_options options;
  options.chunking = overlap::cuda::automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("h100");
  options.ratio = output_ratio{1, 256};
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements / 256, sizeof(float)), options);
  EXPECT_EQ(plan.chunk_input_elements % 256, 0U);
  EXPECT_EQ(plan.chunk_output_elements * 256, plan.chunk_input_elements);
}

TEST(PipelinePlannedChunking, ABudgetTooSmallNamesTheOption) {
  const std::size_t elements = 64 * MiB / sizeof(float);
  pipeline_options options;
  options.chunking = overlap::cuda::automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("h100");
  options.device_budget_bytes = 1024;  // not one ring of the smallest chunk
  try {
    (void)make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
    FAIL() << "a 1 KiB budget was accepted";
  } catch (const invalid_input& e) {
    EXPECT_EQ(std::string(e.what()).rfind("device_budget_bytes", 0), 0U) << e.what();
  }
}

// ---- chunk schedules ----

TEST(PipelineSchedule, AGivenScheduleCutsTheChunksAndSizesTheRingForTheLargest) {
  pipeline_options options;
  options.chunk_schedule = {4096, 16384, 65536, 16384, 4096 + 12};  // bytes of floats, the last odd-sized
  const std::size_t elements = sum(options.chunk_schedule) / sizeof(float);
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options);
  EXPECT_EQ(plan.chunks, 5U);
  EXPECT_EQ(plan.schedule, (std::vector<std::size_t>{1024, 4096, 16384, 4096, 1027}));
  EXPECT_EQ(plan.chunk_input_elements, 16384U);
  EXPECT_EQ(plan.chunk_output_elements, 16384U);
}

TEST(PipelineSchedule, OutputsFollowTheRatio) {
  pipeline_options options;
  options.ratio = output_ratio{1, 256};
  options.chunk_schedule = {std::size_t{256} * 4 * 2, std::size_t{256} * 4 * 8, std::size_t{256} * 4 * 3};
  const auto plan = make_plan(fake_run(std::size_t{256} * 13, sizeof(float), 13, sizeof(double)), options);
  EXPECT_EQ(plan.chunks, 3U);
  EXPECT_EQ(plan.chunk_input_elements, 256U * 8);
  EXPECT_EQ(plan.chunk_output_elements, 8U);
}

TEST(PipelineSchedule, RejectionsNameTheEntry) {
  const auto message = [](std::vector<std::size_t> schedule, std::size_t elements,
                          std::optional<std::size_t> chunk_bytes = std::nullopt, output_ratio ratio = {}) {
    pipeline_options options;
    options.chunk_schedule = std::move(schedule);
    options.chunk_bytes = chunk_bytes;
    options.ratio = ratio;
    return run_rejected<float>(options, elements, elements * ratio.out / ratio.in);
  };
  std::string m = message({400, 0, 400}, 200);
  expect_names(m, "chunk_schedule[1]");
  m = message({400, 402}, 200);
  expect_names(m, "chunk_schedule[1]");
  EXPECT_NE(m.find("multiple of the input element size"), std::string::npos) << m;
  m = message({400, 400}, 300);
  expect_names(m, "chunk_schedule");
  EXPECT_NE(m.find("1200"), std::string::npos) << m;  // the input's bytes
  m = message({400, 400}, 150);
  expect_names(m, "chunk_schedule");
  EXPECT_NE(m.find("more than"), std::string::npos) << m;
  m = message({400, 400}, 200, 400);
  expect_names(m, "chunk_schedule");
  EXPECT_NE(m.find("chunk_bytes"), std::string::npos) << m;
  // 12 elements: not whole outputs at 8 inputs per output.
  m = message({std::size_t{4} * 12, std::size_t{4} * 4}, 16, std::nullopt, output_ratio{1, 8});
  expect_names(m, "chunk_schedule[0]");
  // The capture path checks the same before any CUDA call.
  pipeline_options options;
  options.chunk_schedule = {400, 0};
  expect_names(run_rejected<float>(options, 100, 100, entry::capture), "chunk_schedule[1]");
}

TEST(PipelineSchedule, TheLargestChunkMustFitTheBudget) {
  pipeline_options options;
  options.chunk_schedule = {MiB, 4 * MiB, MiB};
  options.streams = 2U;
  options.device_budget_bytes = 12 * MiB;  // 2 slots x (4 + 4) MiB = 16 MiB
  const std::size_t elements = 6 * MiB / sizeof(float);
  const std::string m = invalid_input_message(
      [&] { (void)make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options); });
  expect_names(m, "device_budget_bytes");
  EXPECT_NE(m.find("largest chunk"), std::string::npos) << m;
  options.device_budget_bytes = 16 * MiB;
  EXPECT_EQ(make_plan(fake_run(elements, sizeof(float), elements, sizeof(float)), options).chunks, 3U);
}

TEST(PipelineSchedule, APlannedRampIsCutInWholeUnitsOfTheRatio) {
  // 256 inputs per output over an input of an odd number of units: every
  // chunk but the last is whole units, and the chunks cover the input.
  const std::size_t elements = std::size_t{256} * 262147;  // ~256 MiB of floats
  pipeline_options options;
  options.chunking = overlap::cuda::automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("h100");
  options.ratio = output_ratio{1, 256};
  const auto plan = make_plan(fake_run(elements, sizeof(float), elements / 256, sizeof(float)), options);
  EXPECT_EQ(plan.chunks, plan.schedule.empty() ? plan.chunks : plan.schedule.size());
  if (!plan.schedule.empty()) {
    EXPECT_EQ(sum(plan.schedule), elements);
    for (const std::size_t chunk : plan.schedule) EXPECT_EQ(chunk % 256, 0U);
    EXPECT_EQ(plan.chunk_input_elements, *std::max_element(plan.schedule.begin(), plan.schedule.end()));
  }
}

TEST(PipelineSchedule, TheCalibratedRunStillChecksArgumentsBeforeAnyCudaCall) {
  pipeline_options options;
  options.calibrate = overlap::cuda::stage_calibration::on;
  options.streams = 0U;
  expect_names(run_rejected<float>(options, 1000, 1000), "streams");
  options.streams = std::nullopt;
  options.chunk_schedule = {8, 8};
  expect_names(run_rejected<float>(options, 3, 3), "chunk_schedule");
}
