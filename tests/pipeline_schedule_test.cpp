// Chunk schedules and kernel curves in PipelineShape, and their spec form.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"
#include "sim_test_support.hpp"

namespace {

using namespace overlap;
using overlap::testing::expect_span;
using sizes = std::vector<std::uint64_t>;

constexpr std::uint64_t MiB = 1ULL << 20;

std::string message_of(const PipelineShape& shape) {
  try {
    (void)make_pipeline_program(shape);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

std::string spec_error(const std::string& text) {
  try {
    (void)io::parse_spec(text, "s.yaml");
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

// 1, 2 and 1 MB in and out on the unit model (1 GB/s: 1 MB takes 1 ms), a
// 4 ms kernel split in the same proportion, two streams.
PipelineShape one_two_one() {
  PipelineShape shape;
  shape.streams = 2;
  shape.h2d_bytes = 4'000'000;
  shape.d2h_bytes = 4'000'000;
  shape.chunk_schedule = {1'000'000, 2'000'000, 1'000'000};
  shape.kernel_time = 4.0;
  return shape;
}

TEST(ChunkSchedule, HelpersBuildUniformAndRampSchedules) {
  EXPECT_EQ(uniform_schedule(10, 4), (sizes{4, 4, 2}));
  EXPECT_EQ(uniform_schedule(8, 4), (sizes{4, 4}));
  EXPECT_EQ(uniform_schedule(3, 8), (sizes{3}));
  // Up 4, 8; 16 twice; the rest (8) slotted into the way down 8, 4.
  EXPECT_EQ(ramp_schedule(64, 4, 16), (sizes{4, 8, 16, 16, 8, 8, 4}));
  EXPECT_EQ(ramp_schedule(2 * 4 + 2 * 8 + 3 * 16, 4, 16), (sizes{4, 8, 16, 16, 16, 8, 4}));
  EXPECT_EQ(ramp_schedule(10, 4, 16), (sizes{4, 4, 2}));  // only one step fits
  EXPECT_EQ(ramp_schedule(100, 100, 100), (sizes{100}));
  EXPECT_THROW((void)ramp_schedule(64, 16, 4), invalid_input);
  EXPECT_THROW((void)ramp_schedule(64, 0, 4), invalid_input);
  EXPECT_THROW((void)uniform_schedule(0, 4), invalid_input);
}

TEST(ChunkSchedule, OutputFollowsTheInputsProportionExactly) {
  PipelineShape shape;
  shape.h2d_bytes = 10;
  shape.d2h_bytes = 7;
  shape.chunk_schedule = {4, 4, 2};
  const std::vector<ChunkBytes> chunks = chunk_bytes(shape);
  ASSERT_EQ(chunks.size(), 3u);
  // Output offsets floor(7 x 4 / 10) = 2 and floor(7 x 8 / 10) = 5.
  EXPECT_EQ(chunks[0].out.offset, 0u);
  EXPECT_EQ(chunks[0].out.bytes, 2u);
  EXPECT_EQ(chunks[1].out.offset, 2u);
  EXPECT_EQ(chunks[1].out.bytes, 3u);
  EXPECT_EQ(chunks[2].out.offset, 5u);
  EXPECT_EQ(chunks[2].out.bytes, 2u);
  EXPECT_EQ(chunks[2].in.offset, 8u);
  EXPECT_EQ(effective_chunks(shape), 3u);
  // Two slots, each sized for the largest chunk in (4) and out (3).
  shape.streams = 2;
  EXPECT_EQ(ring_bytes(shape), 14u);
}

TEST(ChunkSchedule, SimulatesOnTheUnitModel) {
  const Timeline t = sim::simulate(make_pipeline_program(one_two_one()), DeviceModel::preset("unit"));
  // Chunk c's H2D, kernel, D2H are ops 3c .. 3c+2 (no slot events).
  expect_span(t, 0, 0.0, 1.0);  // H2D 0, Stream1
  expect_span(t, 1, 1.0, 2.0);  // kernel 0: its share of 4 ms is 1
  expect_span(t, 2, 2.0, 3.0);  // D2H 0
  expect_span(t, 3, 1.0, 3.0);  // H2D 1 (2 MB), Stream2, once the engine is free
  expect_span(t, 4, 3.0, 5.0);  // kernel 1: 2 ms
  expect_span(t, 5, 5.0, 7.0);  // D2H 1
  expect_span(t, 6, 3.0, 4.0);  // H2D 2 behind D2H 0 on Stream1
  expect_span(t, 7, 5.0, 6.0);  // kernel 2 waits for kernel 1
  expect_span(t, 8, 7.0, 8.0);  // D2H 2 waits for D2H 1 on the engine
  EXPECT_DOUBLE_EQ(t.total(), 8.0);
}

TEST(ChunkSchedule, KernelCostPricesEachChunk) {
  PipelineShape shape;
  shape.h2d_bytes = 3 * MiB;
  shape.chunk_schedule = {MiB / 2, MiB, 3 * MiB / 2};
  shape.kernel_cost = KernelCost{0.5, 1.0, MiB};  // whole waves of 1 MiB
  const Program program = make_pipeline_program(shape);
  std::vector<double> kernels;
  for (const Op& op : program.ops()) {
    if (op.kind == op_kind::kernel) kernels.push_back(*op.duration);
  }
  EXPECT_EQ(kernels, (std::vector<double>{1.5, 1.5, 2.5}));
}

TEST(ChunkSchedule, ValidationNamesTheField) {
  PipelineShape shape = one_two_one();
  shape.chunk_schedule[1] = 0;
  EXPECT_EQ(message_of(shape).rfind("chunk_schedule[1]: 0", 0), 0u) << message_of(shape);
  shape = one_two_one();
  shape.h2d_bytes = 5'000'000;
  EXPECT_EQ(
      message_of(shape).rfind("chunk_schedule: adds up to 4000000 bytes (expected h2d_bytes = 5000000)", 0),
      0u)
      << message_of(shape);
  shape = one_two_one();
  shape.chunks = 4;
  EXPECT_EQ(message_of(shape).rfind("chunks: 4 does not match the 3 entries", 0), 0u) << message_of(shape);
  shape.chunks = 3;
  EXPECT_EQ(message_of(shape), "(no error)");
  shape.h2d_chunk_bytes = 1'000'000;
  EXPECT_EQ(message_of(shape).rfind("chunk_schedule: given with h2d_chunk_bytes", 0), 0u)
      << message_of(shape);
  shape = one_two_one();
  shape.kernel_cost = KernelCost{0.0, 1.0, 0};
  EXPECT_EQ(message_of(shape).rfind("kernel_cost: given with kernel_time", 0), 0u) << message_of(shape);
  shape.kernel_time.reset();
  shape.kernel_cost->ms_per_mib = -1.0;
  EXPECT_EQ(message_of(shape).rfind("kernel_cost.ms_per_mib:", 0), 0u) << message_of(shape);
  shape = PipelineShape{};
  shape.kernel_cost = KernelCost{1.0, 0.0, 0};
  EXPECT_EQ(message_of(shape).rfind("kernel_cost: h2d_bytes is 0", 0), 0u) << message_of(shape);
}

TEST(ChunkScheduleSpec, ParsesTheScheduleAndTheCurve) {
  const io::Spec spec = io::parse_spec(R"(device: unit
pipeline:
  streams: 2
  chunk_schedule: [1MB, 2 MB, 1000000]
  bytes: {d2h: 4MB}
  total_time: {kernel: 4}
)",
                                       "s.yaml");
  EXPECT_DOUBLE_EQ(sim::simulate(spec.program, DeviceModel::preset("unit")).total(), 8.0);
  const io::Spec curve = io::parse_spec(R"(pipeline:
  chunk_schedule: [512KiB, 1MiB, 1.5MiB]
  kernel_cost: {fixed_ms: 0.5, ms_per_mib: 1, wave_bytes: 1MiB}
)",
                                        "s.yaml");
  std::vector<double> kernels;
  for (const Op& op : curve.program.ops()) {
    if (op.kind == op_kind::kernel) kernels.push_back(*op.duration);
  }
  EXPECT_EQ(kernels, (std::vector<double>{1.5, 1.5, 2.5}));
}

TEST(ChunkScheduleSpec, ErrorsNameTheField) {
  const auto expect = [](const std::string& text, const std::string& prefix, const std::string& problem) {
    const std::string message = spec_error(text);
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
  };
  expect("pipeline:\n  chunk_schedule: [1KiB, 0]\n", "s.yaml:2: pipeline.chunk_schedule[1]: ", "0 bytes");
  expect("pipeline:\n  chunk_schedule: [1KiB, lots]\n",
         "s.yaml:2: pipeline.chunk_schedule[1]: ", "'lots' is not a byte count");
  expect("pipeline:\n  chunk_schedule: []\n", "s.yaml:2: pipeline.chunk_schedule: ", "an empty list");
  expect("pipeline:\n  bytes: {h2d: 3KiB}\n  chunk_schedule: [1KiB, 1KiB]\n",
         "s.yaml:3: pipeline.chunk_schedule: ", "adds up to 2048 bytes");
  expect("pipeline:\n  chunks: 3\n  chunk_schedule: [1KiB, 1KiB]\n",
         "s.yaml:3: pipeline.chunk_schedule: ", "but chunks says 3");
  expect("pipeline:\n  chunk_schedule: [1KiB, 2KiB]\n  stage_time: {h2d: 1}\n",
         "s.yaml:3: pipeline.stage_time: ", "chunks differ in size");
  expect("pipeline:\n  bytes: {h2d: 1MiB}\n  kernel_cost: {fixed_ms: 0, ms_per_mib: -1}\n",
         "s.yaml:3: pipeline.kernel_cost.ms_per_mib: ", "-1 is out of range");
  expect("pipeline:\n  bytes: {h2d: 1MiB}\n  kernel_cost: {fixed_ms: 0, ms_per_mib: 0}\n",
         "s.yaml:3: pipeline.kernel_cost: ", "both 0");
  expect("pipeline:\n  bytes: {h2d: 1MiB}\n  kernel_cost: {fixed_ms: 1}\n",
         "s.yaml:3: pipeline.kernel_cost.ms_per_mib: ", "required");
  expect(
      "pipeline:\n  bytes: {h2d: 1MiB}\n  total_time: {kernel: 2}\n  kernel_cost: {fixed_ms: 1, ms_per_mib: "
      "1}\n",
      "s.yaml:4: pipeline.kernel_cost: ", "given with a kernel time");
  expect("pipeline:\n  bytes: {d2h: 1MiB}\n  kernel_cost: {fixed_ms: 1, ms_per_mib: 1}\n",
         "s.yaml:3: pipeline.kernel_cost: ", "no input bytes");
}

}  // namespace
