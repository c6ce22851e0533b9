// The checker on programs with many streams: streams that issue no op cost
// nothing and change nothing (they get no vector-clock component), and a
// program whose clocks would pass the checker's memory budget is refused up
// front, with a message naming the budget, instead of running the machine
// out of memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "overlap/check/check.hpp"
#include "overlap/check/happens_before.hpp"
#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/io/spec.hpp"

namespace {

using namespace overlap;
using check::ClockWalker;
using check::HappensBefore;

// `p` with `empty` streams that issue nothing declared before each of its
// streams (between = true), or all of them after its last stream. An empty
// legacy default stream goes in too when `p` has none: with no work it must
// not act as a barrier.
Program with_empty_streams(const Program& p, std::size_t empty, bool between) {
  static constexpr stream_kind kinds[] = {stream_kind::blocking, stream_kind::non_blocking,
                                          stream_kind::per_thread_default};
  Program q;
  q.name = p.name;
  q.time_unit = p.time_unit;
  std::size_t added = 0;
  const auto add_empty = [&](std::size_t count) {
    for (std::size_t k = 0; k < count; ++k, ++added)
      q.add_stream("idle" + std::to_string(added), kinds[added % 3]);
  };
  const bool has_legacy = p.find_stream("default").has_value() ||
                          std::any_of(p.streams().begin(), p.streams().end(),
                                      [](const Stream& s) { return s.kind == stream_kind::legacy_default; });
  std::vector<stream_id> map(p.streams().size());
  for (std::size_t s = 0; s < p.streams().size(); ++s) {
    if (between) add_empty(empty);
    if (between && s == 0 && !has_legacy) q.legacy_default_stream();
    const Stream& stream = p.streams()[s];
    map[s] = q.add_stream(stream.name, stream.kind, stream.priority);
  }
  if (!between) add_empty(empty * p.streams().size());
  for (const std::string& event : p.events()) q.add_event(event);
  for (Op op : p.ops()) {
    if (op.stream) op.stream = map[*op.stream];
    q.append(std::move(op));
  }
  return q;
}

std::vector<std::filesystem::path> example_specs() {
  std::vector<std::filesystem::path> specs;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(OVERLAP_SOURCE_DIR) + "/examples/check")) {
    if (entry.path().extension() == ".yaml") specs.push_back(entry.path());
  }
  std::sort(specs.begin(), specs.end());
  return specs;
}

std::vector<std::pair<op_id, op_id>> race_pairs(const Program& p) {
  std::vector<std::pair<op_id, op_id>> pairs;
  for (const check::Race& r : check::find_races(p).races) pairs.emplace_back(r.first, r.second);
  return pairs;
}

// Races and every pair's order do not depend on where empty streams sit:
// each example, and pipelines of every issue order and stream kind (ring
// events included), with empty streams between their streams.
TEST(CheckScale, EmptyStreamsBetweenUsedOnesChangeNoOrderAndNoRace) {
  std::vector<Program> programs;
  for (const auto& path : example_specs()) programs.push_back(io::load_spec(path.string()).program);
  for (const issue_order order :
       {issue_order::depth_first, issue_order::breadth_first, issue_order::stage_first}) {
    for (const stream_kind kind : {stream_kind::blocking, stream_kind::non_blocking}) {
      PipelineShape shape;
      shape.chunks = 7;
      shape.streams = 3;
      shape.order = order;
      shape.kind = kind;
      shape.h2d_time = shape.kernel_time = shape.d2h_time = 1.0;
      // 4 slots over 3 streams: slots change stream, so events order them
      // (stage-first issue needs a slot per chunk).
      shape.ring_depth = order == issue_order::stage_first ? 0 : 4;
      programs.push_back(make_pipeline_program(shape));
    }
  }
  ASSERT_GT(programs.size(), 10u);
  for (const Program& p : programs) {
    SCOPED_TRACE(p.name);
    const Program q = with_empty_streams(p, 5, true);
    ASSERT_EQ(q.ops().size(), p.ops().size());
    EXPECT_EQ(race_pairs(q), race_pairs(p));
    const HappensBefore before(p);
    const HappensBefore after(q);
    for (op_id a = 0; a < p.ops().size(); ++a) {
      for (op_id b = 0; b < p.ops().size(); ++b) {
        ASSERT_EQ(after.ordered(a, b), before.ordered(a, b)) << "ops " << a << " -> " << b;
      }
      // Same dense timeline, same place on it: the empty streams took no id.
      EXPECT_EQ(after.epoch(a), before.epoch(a)) << "op " << a;
    }
  }
}

// The whole check (races, traps priced by simulation) gives the same report
// when thousands of streams that issue nothing follow the used ones.
TEST(CheckScale, ManyEmptyStreamsGiveTheSameFindings) {
  for (const auto& path : example_specs()) {
    SCOPED_TRACE(path.filename().string());
    const io::Spec spec = io::load_spec(path.string());
    const DeviceModel model = DeviceModel::load(spec.device.value_or("h100"));
    const Program crowded = with_empty_streams(spec.program, 2000, false);
    const check::Report alone = check::check_program(spec.program, model);
    const check::Report among = check::check_program(crowded, model);
    EXPECT_EQ(check::format_json(among, check::severity::info),
              check::format_json(alone, check::severity::info));
  }
}

// The hardening issue's input: 4 chunks on a million streams used to need
// terabytes of clocks; it now checks like 4 chunks on 4 streams.
TEST(CheckScale, FourChunksOnAMillionStreamsCheckLikeFourStreams) {
  PipelineShape shape;
  shape.name = "many";
  shape.chunks = 4;
  shape.h2d_time = shape.kernel_time = shape.d2h_time = 1.0;
  shape.streams = 4;
  const Program few = make_pipeline_program(shape);
  shape.streams = 1'000'000;
  const Program many = make_pipeline_program(shape);
  const DeviceModel model = DeviceModel::preset("unit");
  EXPECT_EQ(ClockWalker(many).timeline_count(), 5u);
  EXPECT_EQ(check::format_json(check::check_program(many, model), check::severity::info),
            check::format_json(check::check_program(few, model), check::severity::info));
}

// s0 records e and s2 waits for it, with s1 (no ops) between them: s2 gets
// timeline 1, the host timeline 2, and synchronizing the empty s1 waits for
// nothing.
TEST(CheckScale, AnEmptyStreamBetweenUsedOnesStillOrdersCorrectly) {
  Program p;
  const auto s0 = p.add_stream("s0");
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2", stream_kind::non_blocking);
  const auto e = p.add_event("e");
  const auto a = p.kernel(s0, 1.0);
  p.record(e, s0);
  const auto unordered = p.kernel(s0, 1.0);
  p.wait(s2, e);
  const auto b = p.kernel(s2, 1.0);
  const auto sync_empty = p.synchronize(s1);
  const auto host = p.host_work(1.0);
  p.synchronize(s2);
  const auto after_sync = p.host_work(1.0);

  const HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(a, b));  // through the event, across the empty stream
  EXPECT_FALSE(hb.ordered(b, a));
  EXPECT_TRUE(hb.concurrent(unordered, b));
  EXPECT_FALSE(hb.ordered(a, sync_empty));  // s1 had nothing to wait for
  EXPECT_FALSE(hb.ordered(b, host));
  EXPECT_TRUE(hb.ordered(a, after_sync));  // s2 was waited for, and s2 had waited for a
  EXPECT_TRUE(hb.ordered(b, after_sync));
  EXPECT_FALSE(hb.ordered(unordered, after_sync));
  EXPECT_EQ(hb.epoch(a), (check::Epoch{0, 1}));
  EXPECT_EQ(hb.epoch(b), (check::Epoch{1, 2}));  // s2's second op (the wait is its first)
  EXPECT_EQ(hb.epoch(host), (check::Epoch{2, 2}));

  ClockWalker walker(p);
  EXPECT_EQ(walker.timeline_count(), 3u);
  EXPECT_EQ(walker.host_timeline(), 2u);
  EXPECT_EQ(walker.timelines().of(s0), 0u);
  EXPECT_FALSE(walker.timelines().of(s1).has_value());
  EXPECT_EQ(walker.timelines().of(s2), 1u);
  EXPECT_EQ(walker.timelines().streams_with_work(), (std::vector<stream_id>{s0, s2}));
  while (walker.next() != sync_empty) walker.step();
  EXPECT_TRUE(walker.in_flight(s0));
  EXPECT_FALSE(walker.in_flight(s1));
  EXPECT_EQ(walker.issued_on(s1), 0u);
  EXPECT_EQ(walker.stream_clock(s1), check::VectorClock(3));
  EXPECT_EQ(walker.issued_on(s2), 2u);
}

std::string refusal(const std::function<void()>& run) {
  try {
    run();
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(not refused)";
}

// 30,000 streams each with a kernel: the walker alone would need
// (30,000 + 5) x 30,001 x 4 bytes, about 3.4 GiB. It refuses before allocating,
// and so does the whole check, which the CLI turns into exit 2.
TEST(CheckScale, TooManyBusyStreamsAreRefusedNamingTheBudget) {
  Program p;
  p.name = "wide";
  constexpr std::size_t streams = 30'000;
  p.reserve(streams, streams);
  for (std::size_t s = 0; s < streams; ++s) p.kernel(p.add_stream("s" + std::to_string(s)), 1.0);
  const std::string message = refusal([&] { ClockWalker walker(p); });
  EXPECT_EQ(message,
            "check: 30000 streams with work would need about 3.4 GiB of vector clocks (30005 clocks x 30001 "
            "timelines x 4 bytes), over the checker's 2 GiB limit; check fewer streams or fewer chunks");
  EXPECT_EQ(refusal([&] { (void)check::check_program(p, DeviceModel::preset("unit")); }), message);
  // The same streams declared but idle cost nothing.
  Program idle;
  for (std::size_t s = 0; s < streams; ++s) idle.add_stream("s" + std::to_string(s));
  idle.kernel(0, 1.0);
  EXPECT_EQ(ClockWalker(idle).timeline_count(), 2u);
}

// HappensBefore keeps a clock per op: 1,000 busy streams are fine for a
// walker but not with 600,000 ops' clocks of 1,001 components each.
TEST(CheckScale, HappensBeforeCountsItsPerOpClocks) {
  Program p;
  constexpr std::size_t streams = 1'000;
  constexpr std::size_t per_stream = 600;
  p.reserve(streams, streams * per_stream);
  for (std::size_t s = 0; s < streams; ++s) p.add_stream("s" + std::to_string(s));
  for (std::size_t k = 0; k < per_stream; ++k) {
    for (stream_id s = 0; s < streams; ++s) p.kernel(s, 1.0);
  }
  EXPECT_EQ(refusal([&] { ClockWalker walker(p); }), "(not refused)");
  const std::string message = refusal([&] { HappensBefore hb(p); });
  EXPECT_NE(message.find("1000 streams with work would need about 2.2 GiB"), std::string::npos) << message;
  EXPECT_NE(message.find("(601005 clocks x 1001 timelines x 4 bytes)"), std::string::npos) << message;
  EXPECT_NE(message.find("over the checker's 2 GiB limit"), std::string::npos) << message;
}

TEST(CheckScale, ClockBytesSaturatesInsteadOfWrapping) {
  EXPECT_EQ(check::clock_bytes(3, 5), 60u);
  EXPECT_EQ(check::clock_bytes(0, 5), 0u);
  EXPECT_EQ(check::clock_bytes(std::uint64_t{1} << 30, std::uint64_t{1} << 30), std::uint64_t{1} << 62);
  EXPECT_EQ(check::clock_bytes(std::uint64_t{1} << 31, std::uint64_t{1} << 31), UINT64_MAX);  // 2^64
  EXPECT_EQ(check::clock_bytes(UINT64_MAX, 1), UINT64_MAX);
  EXPECT_LE(check::clock_bytes(check::clock_budget_bytes / 4, 1), check::clock_budget_bytes);
  EXPECT_GT(check::clock_bytes(check::clock_budget_bytes / 4 + 1, 1), check::clock_budget_bytes);
}

}  // namespace
