// No false positives on the pipelines the toolkit builds itself: random
// make_pipeline_program configurations (chunks, streams, ring depth, issue
// order, stream kind, even or fixed chunk sizes) declare their accesses on
// host_in, host_out and the ring slots d_in_K / d_out_K and hand slots
// between streams with events, so they must check race-free. And the test is
// not vacuous: take the slot hand-over waits away and races appear.
#include <gtest/gtest.h>

#include <random>

#include "overlap/check/races.hpp"
#include "overlap/core/pipeline_shape.hpp"

namespace {

using namespace overlap;

PipelineShape random_shape(std::mt19937& rng) {
  const auto pick = [&](std::uint32_t lo, std::uint32_t hi) {
    return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
  };
  PipelineShape shape;
  shape.chunks = pick(1, 40);
  shape.streams = pick(1, 8);
  shape.ring_depth = pick(0, 1) == 0 ? 0 : shape.streams + pick(0, 3);
  shape.order = pick(0, 1) == 0 ? issue_order::depth_first : issue_order::breadth_first;
  static constexpr stream_kind kinds[] = {stream_kind::blocking, stream_kind::non_blocking,
                                          stream_kind::per_thread_default};
  shape.kind = kinds[pick(0, 2)];
  shape.kernel_time = 1.0 * shape.chunks;
  // Bytes give every chunk a range of its own (at least one byte per chunk).
  shape.h2d_bytes = std::uint64_t{shape.chunks} * pick(1, 5000) + pick(0, 999);
  shape.d2h_bytes = std::uint64_t{shape.chunks} * pick(1, 5000) + pick(0, 999);
  if (pick(0, 1) == 1) {
    // Fixed chunk sizes: every chunk but the last carries exactly this many.
    const std::uint64_t fixed = pick(1, 4096);
    shape.h2d_chunk_bytes = fixed;
    shape.h2d_bytes = fixed * (shape.chunks - 1) + pick(1, static_cast<std::uint32_t>(fixed));
    shape.d2h_chunk_bytes = fixed;
    shape.d2h_bytes = shape.h2d_bytes;
  }
  shape.synchronize_at_end = pick(0, 1) == 1;
  return shape;
}

TEST(CheckPipeline, BuiltPipelinesHaveNoRaces) {
  std::mt19937 rng(20261122);
  std::size_t slot_handovers = 0;
  for (int i = 0; i < 1500; ++i) {
    const PipelineShape shape = random_shape(rng);
    const Program p = make_pipeline_program(shape);
    const check::RaceReport report = check::find_races(p);
    ASSERT_TRUE(report.races.empty())
        << "chunks " << shape.chunks << ", streams " << shape.streams << ", ring " << shape.ring_depth << ", "
        << to_string(shape.order) << ", " << to_string(shape.kind) << ", chunk bytes "
        << shape.h2d_chunk_bytes << ": ops[" << report.races[0].first << "] and ops["
        << report.races[0].second << "] race on " << report.races[0].buffer;
    EXPECT_NO_THROW(check::require_race_free(p));
    if (!p.events().empty()) ++slot_handovers;
  }
  EXPECT_GT(slot_handovers, 300u);  // rings that pass slots between streams were exercised
}

TEST(CheckPipeline, WithoutTheSlotHandoverTheRingRaces) {
  PipelineShape shape;
  shape.chunks = 12;
  shape.streams = 3;
  shape.ring_depth = 4;  // slot k passes from stream to stream
  shape.kernel_time = 12.0;
  shape.h2d_bytes = shape.d2h_bytes = 12 * 1024;
  const Program p = make_pipeline_program(shape);
  ASSERT_TRUE(check::find_races(p).races.empty());

  Program stripped = p.without_ops();
  for (const Op& op : p.ops()) {
    if (op.kind != op_kind::stream_wait_event) stripped.append(op);
  }
  const check::RaceReport report = check::find_races(stripped);
  ASSERT_FALSE(report.races.empty());
  for (const check::Race& r : report.races) {
    EXPECT_TRUE(r.buffer.starts_with("d_in_") || r.buffer.starts_with("d_out_")) << r.buffer;
  }
}

}  // namespace
