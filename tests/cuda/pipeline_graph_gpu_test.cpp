// Pipeline::capture on a GPU: a run captured once into a CUDA graph and
// replayed. Every replay's every output element is checked against a host
// reference, with the input refilled in place between replays (the graph
// must read the buffer, not a copy of it), over odd sizes, remainders,
// one-element chunks, chunks larger than the data, 1 to 8 streams, rings
// that hand slots between streams, and a 4-to-1 reduction, walked by the
// host and by the device (graph_scheduling). Captures that fail must name
// the chunk, run nothing, and leave the device usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/graph.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "test_kernels.hpp"

namespace {

using overlap::cuda::graph_scheduling;
using overlap::cuda::pageable_memory;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_error;
using overlap::cuda::pipeline_graph;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::axpb_reference;
using overlap_test::launch_axpb;
using overlap_test::MiB;

struct graph_case {
  std::size_t elements;
  std::size_t chunk_elements;
  unsigned streams;
  unsigned ring_depth;  // 0: one slot per stream
};

void PrintTo(const graph_case& c, std::ostream* out) {
  *out << "n" << c.elements << "_c" << c.chunk_elements << "_s" << c.streams << "_r" << c.ring_depth;
}

class GraphReplay : public ::testing::TestWithParam<graph_case> {};

// Three replays, each with new random input written in place and the output
// poisoned under a different pattern: a replay that reused stale data, or
// skipped an element, cannot match the reference.
void expect_exact_replays(const graph_case& c, graph_scheduling scheduling) {
  pinned_buffer<float> input(c.elements);
  pinned_buffer<float> output(c.elements);
  pipeline_options options;
  options.chunk_bytes = c.chunk_elements * sizeof(float);
  options.streams = c.streams;
  if (c.ring_depth > 0) options.ring_depth = c.ring_depth;
  const std::size_t chunks = (c.elements + c.chunk_elements - 1) / c.chunk_elements;

  overlap_test::fill_random(input.span(), 0x9a0000U + c.elements);
  overlap_test::poison(output.span(), 0xA5);
  std::size_t stage_calls = 0;
  pipeline_graph graph = Pipeline<float, float>(options).capture(
      input.span(), output.span(),
      [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
        EXPECT_EQ(chunk, stage_calls);
        ++stage_calls;
        launch_axpb(in, out, s);
      },
      {.scheduling = scheduling});
  EXPECT_EQ(graph.scheduling(), scheduling);
  EXPECT_EQ(stage_calls, chunks);
  EXPECT_EQ(graph.captured().chunks, chunks);
  EXPECT_EQ(graph.captured().streams, c.streams);
  // Capturing records; it runs nothing: the output is still all poison.
  pinned_buffer<float> untouched(c.elements);
  overlap_test::poison(untouched.span(), 0xA5);
  EXPECT_TRUE(overlap_test::same_bytes<float>(untouched.span(), output.span()));

  const unsigned char patterns[] = {0x5A, 0xA5, 0x3C};
  for (unsigned replay = 0; replay < 3; ++replay) {
    if (replay > 0) overlap_test::fill_random(input.span(), 0x9a1000U + 17U * replay + c.elements);
    overlap_test::poison(output.span(), patterns[replay]);
    const overlap::cuda::replay_report report = graph.replay();
    EXPECT_EQ(report.chunks, chunks);
    EXPECT_GT(report.host_launch_ms, 0.0);
    EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input.span()), output.span()))
        << "replay " << replay;
  }
  EXPECT_EQ(stage_calls, chunks) << "a replay called the stage";
}

TEST_P(GraphReplay, EveryReplayOfRefilledInputIsExact) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  expect_exact_replays(GetParam(), graph_scheduling::host);
}

// The same graphs instantiated for the device to walk: same output, every element.
TEST_P(GraphReplay, EveryDeviceScheduledReplayIsExactToo) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  expect_exact_replays(GetParam(), graph_scheduling::device);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GraphReplay,
                         ::testing::Values(graph_case{1, 1, 1, 0},          // one element
                                           graph_case{7, 1, 3, 0},          // one-element chunks
                                           graph_case{1000, 4096, 4, 0},    // chunk larger than the data
                                           graph_case{100003, 1000, 1, 0},  // prime, remainder, 1 stream
                                           graph_case{100003, 4099, 4, 0},  // odd chunk, remainder
                                           graph_case{100003, 4099, 4, 7},  // slots handed between streams
                                           graph_case{(1 << 20) + 5, 65536, 8, 8},   // eight streams
                                           graph_case{(1 << 20) + 5, 65536, 2, 5}),  // two streams, odd ring
                         [](const ::testing::TestParamInfo<graph_case>& param_info) {
                           const graph_case& c = param_info.param;
                           return "n" + std::to_string(c.elements) + "_c" + std::to_string(c.chunk_elements) +
                                  "_s" + std::to_string(c.streams) + "_r" + std::to_string(c.ring_depth);
                         });

TEST(GraphReplayRatio, AFourToOneReductionReplaysExactly) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  constexpr std::size_t outputs = 25013;  // prime, so the last chunk is short
  pinned_buffer<double> input(4 * outputs);
  pinned_buffer<double> output(outputs);
  pipeline_options options;
  options.ratio = {1, 4};
  options.chunk_bytes = std::size_t{4} * 1000 * sizeof(double);
  options.streams = 3U;
  options.ring_depth = 4U;
  pipeline_graph graph = Pipeline<double, double>(options).capture(
      input.span(), output.span(),
      [](std::span<const double> in, std::span<double> out, stream_view s, std::size_t) {
        overlap_test::launch_sum_of_four_doubles(in.data(), out.data(), out.size(), s);
      });
  for (unsigned replay = 0; replay < 2; ++replay) {
    overlap_test::fill_random(input.span(), 0x4a110U + replay);
    overlap_test::poison(output.span(), replay == 0 ? 0xA5 : 0x5A);
    (void)graph.replay();
    std::vector<double> expected(outputs);
    for (std::size_t i = 0; i < outputs; ++i)
      expected[i] = ((input[4 * i] + input[4 * i + 1]) + input[4 * i + 2]) + input[4 * i + 3];
    EXPECT_TRUE(overlap_test::same_bytes<double>(expected, output.span())) << "replay " << replay;
  }
}

// ---- failures while capturing ----

namespace ring_handover = overlap_test::ring_handover;

struct capture_failure {
  std::size_t chunk = 0;
  bool earlier_chunks_complete = true;
  std::string what;
  std::size_t stage_calls = 0;
};

// Captures a pipeline whose stage calls `fail` instead of its kernel at chunk `k`.
template <typename Fail>
capture_failure capture_failing(pinned_buffer<float>& input, pinned_buffer<float>& output, std::size_t k,
                                Fail fail) {
  capture_failure result;
  try {
    (void)Pipeline<float, float>(ring_handover::options())
        .capture(input.span(), output.span(),
                 [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
                   ++result.stage_calls;
                   if (chunk == k) {
                     fail(in, out, s);
                     return;
                   }
                   launch_axpb(in, out, s);
                 });
  } catch (const pipeline_error& e) {
    result.chunk = e.chunk();
    result.earlier_chunks_complete = e.earlier_chunks_complete();
    result.what = e.what();
    return result;
  }
  ADD_FAILURE() << "no pipeline_error for a capture failing at chunk " << k;
  return result;
}

// After a failed capture: no error is left behind for the next caller, no
// capture is left open on the thread, and a capture and replay work.
void expect_device_usable(pinned_buffer<float>& input, pinned_buffer<float>& output) {
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // cudaMalloc is refused on a thread with a capture still open.
  void* probe = nullptr;
  EXPECT_EQ(cudaMalloc(&probe, 256), cudaSuccess);
  EXPECT_EQ(cudaFree(probe), cudaSuccess);
  overlap_test::poison(output.span(), 0x5A);
  pipeline_graph graph = Pipeline<float, float>(ring_handover::options())
                             .capture(input.span(), output.span(),
                                      [](std::span<const float> in, std::span<float> out, stream_view s,
                                         std::size_t) { launch_axpb(in, out, s); });
  (void)graph.replay();
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input.span()), output.span()));
}

class CaptureStageThrows : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CaptureStageThrows, PipelineErrorNamesTheChunkAndNothingRan) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const std::size_t k = GetParam();
  pinned_buffer<float> input(ring_handover::elements);
  pinned_buffer<float> output(ring_handover::elements);
  overlap_test::fill_random(input.span(), 0xca97U);
  overlap_test::poison(output.span(), 0xA5);
  const std::size_t free_before = overlap_test::settled_free_device_bytes();
  const capture_failure e = capture_failing(input, output, k, [k](auto, auto, stream_view) {
    throw std::runtime_error("planted failure in chunk " + std::to_string(k));
  });
  EXPECT_EQ(e.chunk, k);
  EXPECT_EQ(e.stage_calls, k + 1) << "the capture went on after the failure";
  EXPECT_FALSE(e.earlier_chunks_complete) << "a capture completes no chunk";
  EXPECT_NE(
      e.what.find("capturing chunk " + std::to_string(k) + " of " + std::to_string(ring_handover::chunks)),
      std::string::npos)
      << e.what;
  EXPECT_NE(e.what.find("nothing ran on the device"), std::string::npos) << e.what;
  EXPECT_NE(e.what.find("planted failure"), std::string::npos) << e.what;
  // Nothing was copied back: every output byte is still poison.
  pinned_buffer<float> untouched(ring_handover::elements);
  overlap_test::poison(untouched.span(), 0xA5);
  EXPECT_TRUE(overlap_test::same_bytes<float>(untouched.span(), output.span()));
  // The failed capture's ring and streams are gone.
  const std::size_t free_after = overlap_test::settled_free_device_bytes();
  EXPECT_GE(free_after + 2 * MiB, free_before) << "device memory held after a failed capture";
  expect_device_usable(input, output);
}

INSTANTIATE_TEST_SUITE_P(Chunks, CaptureStageThrows, ::testing::Values(0U, 5U, ring_handover::chunks - 1));

// A stage that synchronizes its stream breaks the capture (a capture cannot
// wait for work it has only recorded): the error names that chunk.
TEST(CaptureUncapturableStage, SynchronizingTheStreamNamesTheChunk) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  constexpr std::size_t k = 3;
  pinned_buffer<float> input(ring_handover::elements);
  pinned_buffer<float> output(ring_handover::elements);
  overlap_test::fill_random(input.span(), 0x5c47U);
  overlap_test::poison(output.span(), 0xA5);
  const capture_failure e = capture_failing(input, output, k, [](auto in, auto out, stream_view s) {
    launch_axpb(in, out, s);
    (void)cudaStreamSynchronize(s.get());  // not capturable; the status is left for the Pipeline to find
  });
  EXPECT_EQ(e.chunk, k);
  EXPECT_EQ(e.stage_calls, k + 1);
  EXPECT_NE(e.what.find("capturing chunk 3 of"), std::string::npos) << e.what;
  pinned_buffer<float> untouched(ring_handover::elements);
  overlap_test::poison(untouched.span(), 0xA5);
  EXPECT_TRUE(overlap_test::same_bytes<float>(untouched.span(), output.span()));
  expect_device_usable(input, output);
}

// A host function in the stage is capturable (a host node), but the device
// cannot walk a graph with one: device scheduling is refused with the
// reason and the way out, nothing runs, and nothing is held.
void CUDART_CB do_nothing(void* /*unused*/) {}

TEST(CaptureForTheDevice, AHostFunctionInTheStageIsRefusedWithTheWayOut) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pinned_buffer<float> input(ring_handover::elements);
  pinned_buffer<float> output(ring_handover::elements);
  overlap_test::fill_random(input.span(), 0xde71U);
  overlap_test::poison(output.span(), 0xA5);
  const auto stage = [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
    launch_axpb(in, out, s);
    if (chunk == 2)
      overlap::cuda::check(cudaLaunchHostFunc(s.get(), &do_nothing, nullptr), "cudaLaunchHostFunc");
  };
  const std::size_t free_before = overlap_test::settled_free_device_bytes();
  try {
    (void)Pipeline<float, float>(ring_handover::options())
        .capture(input.span(), output.span(), stage, {.scheduling = graph_scheduling::device});
    ADD_FAILURE() << "a graph with a host node was instantiated for the device";
  } catch (const pipeline_error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("scheduling: the captured pipeline", 0), 0U) << what;
    EXPECT_NE(what.find("graph_scheduling::host"), std::string::npos) << what;
    EXPECT_NE(what.find("nothing ran on the device"), std::string::npos) << what;
  }
  pinned_buffer<float> untouched(ring_handover::elements);
  overlap_test::poison(untouched.span(), 0xA5);
  EXPECT_TRUE(overlap_test::same_bytes<float>(untouched.span(), output.span()));
  EXPECT_GE(overlap_test::settled_free_device_bytes() + 2 * MiB, free_before)
      << "device memory held after a refused capture";
  // The host walks the same graph, host node and all.
  pipeline_graph graph =
      Pipeline<float, float>(ring_handover::options()).capture(input.span(), output.span(), stage);
  (void)graph.replay();
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input.span()), output.span()));
  expect_device_usable(input, output);
}

// ---- host memory ----

TEST(GraphPageable, RejectedByDefaultAndRegisteredForTheGraphsLifetimeWhenAsked) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  std::vector<float> input(300007);
  std::vector<float> output(input.size());
  overlap_test::fill_random(std::span<float>(input), 0x9a9eU);
  const auto stage = [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
    launch_axpb(in, out, s);
  };
  try {
    (void)Pipeline<float, float>().capture(input, output, stage);
    ADD_FAILURE() << "pageable input was captured";
  } catch (const overlap::invalid_input& e) {
    EXPECT_EQ(std::string(e.what()).rfind("input: pageable", 0), 0U) << e.what();
  }

  pipeline_options options;
  options.pageable = pageable_memory::register_in_place;
  options.chunk_bytes = 40000 * sizeof(float);
  {
    pipeline_graph graph = Pipeline<float, float>(options).capture(input, output, stage);
    cudaPointerAttributes attributes{};
    overlap::cuda::check(cudaPointerGetAttributes(&attributes, input.data()), "cudaPointerGetAttributes");
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "the input is not registered while the graph lives";
    overlap_test::poison(std::span<float>(output), 0xA5);
    (void)graph.replay();
    EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), std::span<const float>(output)));
  }
  // The graph is gone, and so is the registration: registering again works.
  { const overlap::cuda::host_registration again(input.data(), input.size() * sizeof(float)); }
}

// Buffers registered in place are pinned and device-mapped: the device can walk their graph.
TEST(GraphPageable, RegisteredInPlaceReplaysExactlyWhenTheDeviceSchedules) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  std::vector<float> input(300007);
  std::vector<float> output(input.size());
  pipeline_options options;
  options.pageable = pageable_memory::register_in_place;
  options.chunk_bytes = 40000 * sizeof(float);
  pipeline_graph graph =
      Pipeline<float, float>(options).capture(input, output,
                                              [](std::span<const float> in, std::span<float> out,
                                                 stream_view s, std::size_t) { launch_axpb(in, out, s); },
                                              {.scheduling = graph_scheduling::device});
  for (unsigned replay = 0; replay < 2; ++replay) {
    overlap_test::fill_random(std::span<float>(input), 0x9a9fU + replay);
    overlap_test::poison(std::span<float>(output), replay == 0 ? 0xA5 : 0x5A);
    (void)graph.replay();
    EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), std::span<const float>(output)))
        << "replay " << replay;
  }
}

// ---- device memory ----

TEST(GraphMemory, TheGraphHoldsItsRingAndGivesItBack) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  constexpr std::size_t n = 16 * MiB / sizeof(float);
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x6e11U);
  pipeline_options options;
  options.chunk_bytes = 2 * MiB;
  options.streams = 4U;
  const std::size_t free_before = overlap_test::settled_free_device_bytes();
  {
    pipeline_graph graph =
        Pipeline<float, float>(options).capture(input.span(), output.span(),
                                                [](std::span<const float> in, std::span<float> out,
                                                   stream_view s, std::size_t) { launch_axpb(in, out, s); });
    EXPECT_EQ(graph.captured().device_bytes,
              std::size_t{4} * 2 * 2 * MiB);  // 4 slots, in and out, 2 MiB each
    (void)graph.replay();
    EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input.span()), output.span()));
    const long long held = static_cast<long long>(free_before) -
                           static_cast<long long>(overlap_test::settled_free_device_bytes());
    EXPECT_GE(held, static_cast<long long>(graph.captured().device_bytes) - static_cast<long long>(2 * MiB))
        << "the ring is not held while the graph lives";
  }
  const std::size_t free_after = overlap_test::settled_free_device_bytes();
  EXPECT_GE(free_after + 2 * MiB, free_before) << "device memory held after the graph was destroyed";
}

}  // namespace
