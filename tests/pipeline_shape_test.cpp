#include "overlap/core/pipeline_shape.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "overlap/core/error.hpp"

namespace {

using namespace overlap;

/// (label, item, stream name) of every op, the order the host issues them.
using issued = std::vector<std::tuple<std::string, std::string, std::string>>;

issued issue_sequence(const Program& program) {
  issued out;
  for (const Op& op : program.ops()) {
    out.emplace_back(op.label, op.item, op.stream ? program.streams()[*op.stream].name : "-");
  }
  return out;
}

PipelineShape timed_shape(std::uint32_t chunks, std::uint32_t streams) {
  PipelineShape shape;
  shape.chunks = chunks;
  shape.streams = streams;
  shape.h2d_time = 30.0;
  shape.kernel_time = 20.0;
  shape.d2h_time = 30.0;
  return shape;
}

std::string message_of(const PipelineShape& shape) {
  try {
    (void)make_pipeline_program(shape);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Pipeline, DepthFirstIssuesEachChunkWholeOnStreamChunkModN) {
  const Program program = make_pipeline_program(timed_shape(4, 2));
  const issued expected = {
      {"H2D", "0", "Stream1"},         {"Kernel", "0", "Stream1"}, {"D2H", "0", "Stream1"},
      {"H2D", "1", "Stream2"},         {"Kernel", "1", "Stream2"}, {"D2H", "1", "Stream2"},
      {"H2D", "2", "Stream1"},         {"Kernel", "2", "Stream1"}, {"D2H", "2", "Stream1"},
      {"H2D", "3", "Stream2"},         {"Kernel", "3", "Stream2"}, {"D2H", "3", "Stream2"},
      {"device_synchronize", "", "-"},
  };
  EXPECT_EQ(issue_sequence(program), expected);
}

TEST(Pipeline, BreadthFirstIssuesStageByStageInRoundsOfNChunks) {
  PipelineShape shape = timed_shape(5, 2);
  shape.order = issue_order::breadth_first;
  const issued expected = {
      {"H2D", "0", "Stream1"},         {"H2D", "1", "Stream2"},    {"Kernel", "0", "Stream1"},
      {"Kernel", "1", "Stream2"},      {"D2H", "0", "Stream1"},    {"D2H", "1", "Stream2"},
      {"H2D", "2", "Stream1"},         {"H2D", "3", "Stream2"},    {"Kernel", "2", "Stream1"},
      {"Kernel", "3", "Stream2"},      {"D2H", "2", "Stream1"},    {"D2H", "3", "Stream2"},
      {"H2D", "4", "Stream1"},         {"Kernel", "4", "Stream1"}, {"D2H", "4", "Stream1"},
      {"device_synchronize", "", "-"},
  };
  EXPECT_EQ(issue_sequence(make_pipeline_program(shape)), expected);
}

TEST(Pipeline, StageFirstIssuesEveryH2DThenEveryKernelThenEveryD2H) {
  PipelineShape shape = timed_shape(3, 2);
  shape.order = issue_order::stage_first;
  const issued expected = {
      {"H2D", "0", "Stream1"},         {"H2D", "1", "Stream2"},    {"H2D", "2", "Stream1"},
      {"Kernel", "0", "Stream1"},      {"Kernel", "1", "Stream2"}, {"Kernel", "2", "Stream1"},
      {"D2H", "0", "Stream1"},         {"D2H", "1", "Stream2"},    {"D2H", "2", "Stream1"},
      {"device_synchronize", "", "-"},
  };
  EXPECT_EQ(issue_sequence(make_pipeline_program(shape)), expected);
  // Every chunk holds its own slot until its D2H: the ring is one per chunk.
  EXPECT_EQ(effective_ring_depth(shape), 3U);
  shape.ring_depth = 2;
  EXPECT_NE(message_of(shape).find("ring_depth: 2 is out of range for stage-first issue"), std::string::npos)
      << message_of(shape);
  EXPECT_EQ(parse_issue_order("stage-first"), issue_order::stage_first);
  EXPECT_EQ(to_string(issue_order::stage_first), "stage_first");
}

TEST(Pipeline, SplitsTotalTimesEvenlyAndSetsChunkFields) {
  PipelineShape shape = timed_shape(4, 2);
  shape.kernel_gpu_share = 0.5;
  shape.memory = host_memory::pageable;
  const Program program = make_pipeline_program(shape);
  ASSERT_EQ(program.ops().size(), 13u);
  for (std::size_t i = 0; i < 12; ++i) {
    const Op& op = program.ops()[i];
    EXPECT_EQ(op.chunk, static_cast<std::int64_t>(i / 3)) << i;
    EXPECT_EQ(op.item, std::to_string(i / 3)) << i;
    EXPECT_EQ(op.duration, i % 3 == 1 ? 5.0 : 7.5) << i;
  }
  EXPECT_EQ(program.ops()[0].direction, copy_direction::h2d);
  EXPECT_EQ(program.ops()[0].memory, host_memory::pageable);
  EXPECT_EQ(program.ops()[0].mode, call_mode::asynchronous);
  EXPECT_DOUBLE_EQ(program.ops()[1].gpu_share, 0.5);
  EXPECT_EQ(program.ops()[2].direction, copy_direction::d2h);
}

TEST(Pipeline, SplitsBytesWithTheRemainderOnTheFirstChunks) {
  PipelineShape shape;
  shape.chunks = 4;
  shape.h2d_bytes = 10;  // 3 3 2 2
  shape.d2h_bytes = 4;   // 1 1 1 1
  shape.d2h_time = 8.0;  // a time wins over the model, bytes are kept
  shape.synchronize_at_end = false;
  const Program program = make_pipeline_program(shape);
  ASSERT_EQ(program.ops().size(), 8u);  // no kernel time: no kernel stage
  const std::vector<std::uint64_t> h2d = {3, 3, 2, 2};
  for (std::size_t chunk = 0; chunk < 4; ++chunk) {
    const Op& in = program.ops()[2 * chunk];
    const Op& out = program.ops()[2 * chunk + 1];
    EXPECT_EQ(in.label, "H2D");
    EXPECT_EQ(in.bytes, h2d[chunk]);
    EXPECT_FALSE(in.duration.has_value()) << "bytes only: the device model times it";
    EXPECT_EQ(out.label, "D2H");
    EXPECT_EQ(out.bytes, 1u);
    EXPECT_EQ(out.duration, 2.0);
  }
}

TEST(Pipeline, OmitsStagesWithNeitherTimeNorBytes) {
  PipelineShape shape;
  shape.chunks = 2;
  shape.kernel_time = 4.0;
  const issued expected = {
      {"Kernel", "0", "Stream1"}, {"Kernel", "1", "Stream1"}, {"device_synchronize", "", "-"}};
  EXPECT_EQ(issue_sequence(make_pipeline_program(shape)), expected);
}

TEST(Pipeline, UsesItemNamesStreamKindNameAndUnit) {
  PipelineShape shape = timed_shape(2, 3);
  shape.item_names = {"A", "B"};
  shape.kind = stream_kind::non_blocking;
  shape.name = "seed004";
  shape.time_unit = "units";
  const Program program = make_pipeline_program(shape);
  EXPECT_EQ(program.name, "seed004");
  EXPECT_EQ(program.time_unit, "units");
  ASSERT_EQ(program.streams().size(), 3u);  // every stream is created, even an idle one
  EXPECT_EQ(program.streams()[2].name, "Stream3");
  EXPECT_EQ(program.streams()[0].kind, stream_kind::non_blocking);
  EXPECT_EQ(program.ops()[0].item, "A");
  EXPECT_EQ(program.ops()[3].item, "B");
  EXPECT_EQ(program.ops()[3].chunk, 1);
}

TEST(Pipeline, RejectsBadShapesNamingTheField) {
  PipelineShape shape = timed_shape(0, 1);
  EXPECT_EQ(message_of(shape), "chunks: 0 is out of range (expected >= 1)");
  shape = timed_shape(2, 0);
  EXPECT_EQ(message_of(shape), "streams: 0 is out of range (expected >= 1)");
  shape = timed_shape(2, 1);
  shape.item_names = {"A"};
  EXPECT_EQ(message_of(shape), "item_names: 1 names for 2 chunks (expected none or one per chunk)");
  shape.item_names = {"A", "A"};
  EXPECT_EQ(message_of(shape), "item_names[1]: 'A' repeats (expected unique names)");
  shape.item_names = {"", "B"};
  EXPECT_EQ(message_of(shape), "item_names[0]: empty (expected a non-empty name)");
  shape = timed_shape(2, 1);
  shape.kernel_time = -1.0;
  EXPECT_EQ(message_of(shape), "kernel_time: -1 is not a time (expected a number from 0 to 1e12)");
  shape = timed_shape(2, 1);
  shape.d2h_time = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message_of(shape).rfind("d2h_time:", 0), 0u) << message_of(shape);
  shape = timed_shape(2, 1);
  shape.kernel_gpu_share = 0.0;
  EXPECT_EQ(message_of(shape), "kernel_gpu_share: 0 is out of range (expected 0 < share <= 1)");
  shape.kernel_gpu_share = 1.5;
  EXPECT_EQ(message_of(shape), "kernel_gpu_share: 1.5 is out of range (expected 0 < share <= 1)");
  shape = timed_shape(2, 2);
  shape.kind = stream_kind::legacy_default;
  EXPECT_EQ(message_of(shape).rfind("kind:", 0), 0u) << message_of(shape);
}

TEST(Pipeline, ParsesIssueOrderSpellings) {
  for (const char* text : {"depth", "depth-first", "depth_first"}) {
    EXPECT_EQ(parse_issue_order(text), issue_order::depth_first) << text;
  }
  for (const char* text : {"breadth", "breadth-first", "breadth_first"}) {
    EXPECT_EQ(parse_issue_order(text), issue_order::breadth_first) << text;
  }
  EXPECT_THROW((void)parse_issue_order("sideways"), invalid_input);
  EXPECT_EQ(to_string(issue_order::breadth_first), "breadth_first");
}

}  // namespace

namespace {

TEST(PipelineRing, SlotsPassedBetweenStreamsAreHandedOverWithEvents) {
  overlap::PipelineShape shape;
  shape.chunks = 5;
  shape.streams = 2;
  shape.ring_depth = 3;  // chunk 3 reuses chunk 0's slot, but on the other stream
  shape.h2d_bytes = 50;
  shape.h2d_chunk_bytes = 12;  // 12, 12, 12, 12, 2
  shape.kernel_time = 5.0;
  shape.synchronize_at_end = false;
  const overlap::Program p = overlap::make_pipeline_program(shape);
  std::vector<std::string> sequence;
  for (const overlap::Op& op : p.ops()) {
    std::string what = std::string(overlap::to_string(op.kind)) + ":" + op.item;
    if (op.event) what = std::string(overlap::to_string(op.kind)) + ":" + p.events()[*op.event];
    sequence.push_back(what + "@" + p.streams()[*op.stream].name);
  }
  const std::vector<std::string> expected = {
      "copy:0@Stream1",          "kernel:0@Stream1", "record:slot0_free@Stream1",  // chunk 0
      "copy:1@Stream2",          "kernel:1@Stream2", "record:slot1_free@Stream2",  // chunk 1
      "copy:2@Stream1",          "kernel:2@Stream1",                       // chunk 2: slot 2, last user
      "wait:slot0_free@Stream2", "copy:3@Stream2",   "kernel:3@Stream2",   // chunk 3
      "wait:slot1_free@Stream1", "copy:4@Stream1",   "kernel:4@Stream1"};  // chunk 4
  EXPECT_EQ(sequence, expected);
  // Fixed chunk size: the last chunk carries the remainder, at its offset.
  EXPECT_EQ(p.ops()[12].bytes, 2u);
  ASSERT_EQ(p.ops()[12].accesses.size(), 2u);
  EXPECT_EQ(p.ops()[12].accesses[0].buffer, "host_in");
  EXPECT_EQ(p.ops()[12].accesses[0].offset, 48u);
  EXPECT_EQ(p.ops()[12].accesses[1].buffer, "d_in_1");
}

TEST(PipelineRing, RejectsARingShallowerThanTheStreamsAndAMismatchedChunkSize) {
  overlap::PipelineShape shape;
  shape.chunks = 4;
  shape.streams = 4;
  shape.kernel_time = 1.0;
  shape.ring_depth = 2;
  EXPECT_THROW((void)overlap::make_pipeline_program(shape), overlap::invalid_input);
  shape.ring_depth = 0;
  shape.h2d_bytes = 100;
  shape.h2d_chunk_bytes = 10;  // 10 chunks, not 4
  try {
    (void)overlap::make_pipeline_program(shape);
    FAIL() << "accepted";
  } catch (const overlap::invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("h2d_chunk_bytes"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

TEST(PipelineAccesses, WithoutBytesEachChunkOwnsADistinctHostByte) {
  overlap::PipelineShape shape;
  shape.chunks = 3;
  shape.streams = 3;
  shape.h2d_time = 3.0;
  shape.d2h_time = 3.0;
  shape.synchronize_at_end = false;
  const overlap::Program p = overlap::make_pipeline_program(shape);
  ASSERT_EQ(p.ops().size(), 6u);
  for (std::uint32_t chunk = 0; chunk < 3; ++chunk) {
    const overlap::Op& download = p.ops()[2 * chunk + 1];
    ASSERT_EQ(download.accesses.size(), 2u);
    EXPECT_EQ(download.accesses[1].buffer, "host_out");
    EXPECT_EQ(download.accesses[1].offset, chunk);
    EXPECT_EQ(download.accesses[1].size, std::optional<std::uint64_t>(1));
  }
}

// ---- stage streams: one stream per stage ----

std::vector<std::string> ops_with_events(const overlap::Program& p) {
  std::vector<std::string> sequence;
  for (const overlap::Op& op : p.ops()) {
    std::string what = std::string(overlap::to_string(op.kind)) + ":" + op.item;
    if (op.event) what = std::string(overlap::to_string(op.kind)) + ":" + p.events()[*op.event];
    sequence.push_back(what + "@" + p.streams()[*op.stream].name);
  }
  return sequence;
}

TEST(PipelineStageStreams, EachStageHasItsStreamAndEventsHandEveryChunkOn) {
  overlap::PipelineShape shape = timed_shape(5, 4);  // upload, 2 kernel streams, download
  shape.order = overlap::issue_order::stage_streams;
  shape.synchronize_at_end = false;
  const overlap::Program p = overlap::make_pipeline_program(shape);
  const std::vector<std::string> expected = {
      // chunk 0 (slot 0, reused by chunk 4: its download frees it)
      "copy:0@Stream1", "record:slot0_in@Stream1", "wait:slot0_in@Stream2", "kernel:0@Stream2",
      "record:slot0_out@Stream2", "wait:slot0_out@Stream4", "copy:0@Stream4", "record:slot0_free@Stream4",
      // chunk 1: the other kernel stream
      "copy:1@Stream1", "record:slot1_in@Stream1", "wait:slot1_in@Stream3", "kernel:1@Stream3",
      "record:slot1_out@Stream3", "wait:slot1_out@Stream4", "copy:1@Stream4",
      // chunk 2
      "copy:2@Stream1", "record:slot2_in@Stream1", "wait:slot2_in@Stream2", "kernel:2@Stream2",
      "record:slot2_out@Stream2", "wait:slot2_out@Stream4", "copy:2@Stream4",
      // chunk 3
      "copy:3@Stream1", "record:slot3_in@Stream1", "wait:slot3_in@Stream3", "kernel:3@Stream3",
      "record:slot3_out@Stream3", "wait:slot3_out@Stream4", "copy:3@Stream4",
      // chunk 4 takes slot 0 back once chunk 0's download is done
      "wait:slot0_free@Stream1", "copy:4@Stream1", "record:slot0_in@Stream1", "wait:slot0_in@Stream2",
      "kernel:4@Stream2", "record:slot0_out@Stream2", "wait:slot0_out@Stream4", "copy:4@Stream4"};
  EXPECT_EQ(ops_with_events(p), expected);
}

TEST(PipelineStageStreams, WithoutAKernelTheDownloadWaitsForTheUpload) {
  overlap::PipelineShape shape;
  shape.chunks = 2;
  shape.streams = 3;
  shape.order = overlap::issue_order::stage_streams;
  shape.h2d_bytes = 8;
  shape.d2h_bytes = 8;
  shape.synchronize_at_end = false;
  const std::vector<std::string> expected = {
      "copy:0@Stream1", "record:slot0_in@Stream1", "wait:slot0_in@Stream3", "copy:0@Stream3",
      "copy:1@Stream1", "record:slot1_in@Stream1", "wait:slot1_in@Stream3", "copy:1@Stream3"};
  EXPECT_EQ(ops_with_events(overlap::make_pipeline_program(shape)), expected);
}

TEST(PipelineStageStreams, NeedsThreeStreamsAndParsesByName) {
  overlap::PipelineShape shape = timed_shape(4, 2);
  shape.order = overlap::issue_order::stage_streams;
  const std::string message = message_of(shape);
  EXPECT_NE(message.find("streams: 2 is out of range for stage-streams issue"), std::string::npos) << message;
  for (const char* text : {"stage-streams", "stage_streams"})
    EXPECT_EQ(overlap::parse_issue_order(text), overlap::issue_order::stage_streams) << text;
  EXPECT_EQ(overlap::to_string(overlap::issue_order::stage_streams), "stage_streams");
}

}  // namespace
