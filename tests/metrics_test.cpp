// compute_metrics on hand-built timelines: busy time as a union, the
// multi-engine sweep, the bound, and the stalls with their cause.
#include "overlap/core/metrics.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace overlap {
namespace {

Span make_span(op_id op, std::string label, stream_id stream, engine unit, double start, double end) {
  Span span;
  span.op = op;
  span.label = std::move(label);
  span.item = std::to_string(op);
  span.stream = stream;
  span.unit = unit;
  span.start = start;
  span.end = end;
  span.solo_duration = end - start;
  span.kind = unit == engine::compute ? op_kind::kernel
              : unit == engine::none  ? op_kind::event_record
                                      : op_kind::copy;
  return span;
}

Span waiting(Span span, wait_reason reason, std::optional<op_id> waited_for) {
  span.waited_because = reason;
  span.waited_for = waited_for;
  return span;
}

// Three streams; the H2D engine idles 20->24 (host issued late) and compute
// idles 20->22 (an event wait). A kernel nested inside another and an event
// record must not change busy time or create stalls.
Timeline gapped_timeline() {
  Timeline t;
  t.time_unit = "ms";
  t.streams = {{"Stream1"}, {"Stream2"}, {"Stream3"}};
  t.spans = {
      make_span(0, "H2D", 0, engine::h2d_copy, 0, 10),
      make_span(1, "K", 0, engine::compute, 10, 20),
      make_span(2, "D2H", 0, engine::d2h_copy, 20, 30),
      waiting(make_span(3, "H2D", 1, engine::h2d_copy, 10, 20), wait_reason::engine_busy, 0),
      waiting(make_span(4, "K", 1, engine::compute, 22, 25), wait_reason::event_wait, 6),
      waiting(make_span(5, "D2H", 1, engine::d2h_copy, 30, 35), wait_reason::engine_busy, 2),
      make_span(6, "record", 0, engine::none, 22, 22),
      waiting(make_span(7, "H2D", 0, engine::h2d_copy, 24, 27), wait_reason::host_issue, std::nullopt),
      make_span(8, "K", 2, engine::compute, 12, 18),
  };
  return t;
}

TEST(Metrics, BusyTimeIsTheUnionPerEngineBusiestFirst) {
  const Metrics m = compute_metrics(gapped_timeline());
  EXPECT_DOUBLE_EQ(m.total, 35.0);
  ASSERT_EQ(m.engines.size(), 3u);
  EXPECT_EQ(m.engines[0].unit, engine::h2d_copy);
  EXPECT_DOUBLE_EQ(m.engines[0].busy, 23.0);
  EXPECT_DOUBLE_EQ(m.engines[0].busy_fraction, 23.0 / 35.0);
  EXPECT_EQ(m.engines[1].unit, engine::d2h_copy);
  EXPECT_DOUBLE_EQ(m.engines[1].busy, 15.0);
  EXPECT_EQ(m.engines[2].unit, engine::compute);
  EXPECT_DOUBLE_EQ(m.engines[2].busy, 13.0);  // [10,20] u [12,18] u [22,25]
}

TEST(Metrics, SequentialFallsBackToSoloDurationsAndSpeedupFollows) {
  const Metrics m = compute_metrics(gapped_timeline());
  EXPECT_DOUBLE_EQ(m.sequential, 57.0);
  EXPECT_DOUBLE_EQ(m.speedup, 57.0 / 35.0);

  Timeline given = gapped_timeline();
  given.sequential_time = 70.0;
  EXPECT_DOUBLE_EQ(compute_metrics(given).sequential, 70.0);
  EXPECT_DOUBLE_EQ(compute_metrics(given).speedup, 2.0);

  Timeline measured = gapped_timeline();
  for (Span& span : measured.spans) span.solo_duration = 0.0;
  EXPECT_DOUBLE_EQ(compute_metrics(measured).sequential, 57.0);  // the durations themselves
}

TEST(Metrics, MultiEngineFractionCountsDistinctEnginesOnly) {
  // >= 2 engines: [10,20] h2d+compute, [22,24] compute+d2h, [24,25] all,
  // [25,27] h2d+d2h. Two compute kernels at once in [12,18] count once.
  const Metrics m = compute_metrics(gapped_timeline());
  EXPECT_DOUBLE_EQ(m.multi_engine_busy_fraction, 15.0 / 35.0);
}

TEST(Metrics, TouchingSpansOnDifferentEnginesDoNotOverlap) {
  Timeline t;
  t.streams = {{"Stream1"}};
  t.spans = {make_span(0, "H2D", 0, engine::h2d_copy, 0, 1), make_span(1, "K", 0, engine::compute, 1, 2),
             make_span(2, "D2H", 0, engine::d2h_copy, 2, 3)};
  const Metrics m = compute_metrics(t);
  EXPECT_DOUBLE_EQ(m.multi_engine_busy_fraction, 0.0);
  EXPECT_TRUE(m.stalls.empty());
  EXPECT_DOUBLE_EQ(m.speedup, 1.0);
}

TEST(Metrics, BoundIsTheBusiestEngine) {
  const Metrics m = compute_metrics(gapped_timeline());
  EXPECT_EQ(m.bound_engine, engine::h2d_copy);
  EXPECT_DOUBLE_EQ(m.bound, 23.0);
  EXPECT_DOUBLE_EQ(m.bound_attainment, 23.0 / 35.0);
}

TEST(Metrics, StallsNameTheWaitingOpAndItsReasonLongestFirst) {
  const Metrics m = compute_metrics(gapped_timeline());
  ASSERT_EQ(m.stalls.size(), 2u);
  const Stall& first = m.stalls[0];
  EXPECT_EQ(first.unit, engine::h2d_copy);
  EXPECT_DOUBLE_EQ(first.idle_from, 20.0);
  EXPECT_DOUBLE_EQ(first.idle_to, 24.0);
  EXPECT_EQ(first.op, 7u);
  EXPECT_EQ(first.reason, wait_reason::host_issue);
  EXPECT_FALSE(first.waited_for.has_value());
  const Stall& second = m.stalls[1];
  EXPECT_EQ(second.unit, engine::compute);
  EXPECT_DOUBLE_EQ(second.idle_from, 20.0);
  EXPECT_DOUBLE_EQ(second.idle_to, 22.0);
  EXPECT_EQ(second.op, 4u);
  EXPECT_EQ(second.reason, wait_reason::event_wait);
  EXPECT_EQ(second.waited_for, std::optional<op_id>(6));
}

TEST(Metrics, EqualStallsSortEarlierFirstAndZeroLengthSpansAreIgnored) {
  Timeline t;
  t.streams = {{"Stream1"}};
  // Issued out of time order on purpose: stalls come from start order.
  t.spans = {
      waiting(make_span(0, "K", 0, engine::compute, 6, 7), wait_reason::gpu_full, 1),
      make_span(1, "K", 0, engine::compute, 0, 1),
      waiting(make_span(2, "K", 0, engine::compute, 3, 4), wait_reason::stream_order, 1),
      make_span(3, "K", 0, engine::compute, 2, 2),  // zero length: no stall ends at it
      make_span(4, "K", 0, engine::compute, 1.5, 1.5),
  };
  const Metrics m = compute_metrics(t);
  ASSERT_EQ(m.stalls.size(), 2u);
  EXPECT_DOUBLE_EQ(m.stalls[0].idle_from, 1.0);
  EXPECT_DOUBLE_EQ(m.stalls[0].idle_to, 3.0);
  EXPECT_EQ(m.stalls[0].op, 2u);
  EXPECT_DOUBLE_EQ(m.stalls[1].idle_from, 4.0);
  EXPECT_EQ(m.stalls[1].reason, wait_reason::gpu_full);
  EXPECT_DOUBLE_EQ(m.engines.at(0).busy, 3.0);
}

TEST(Metrics, RoundingNoiseIsNotAStall) {
  Timeline t;
  t.streams = {{"Stream1"}};
  t.spans = {make_span(0, "K", 0, engine::compute, 0, 1000),
             make_span(1, "K", 0, engine::compute, 1000 + 1e-7, 2000)};
  EXPECT_TRUE(compute_metrics(t).stalls.empty());
}

TEST(Metrics, EmptyTimelineIsAllZero) {
  const Metrics m = compute_metrics(Timeline{});
  EXPECT_DOUBLE_EQ(m.total, 0.0);
  EXPECT_DOUBLE_EQ(m.speedup, 0.0);
  EXPECT_TRUE(m.engines.empty());
  EXPECT_EQ(m.bound_engine, engine::none);
  EXPECT_DOUBLE_EQ(m.bound_attainment, 0.0);
  EXPECT_TRUE(m.stalls.empty());
}

// A million spans: a quadratic pass would not finish; values prove the sweep.
TEST(Metrics, MillionSpansInReverseIssueOrder) {
  constexpr std::size_t pairs = 500'000;
  Timeline t;
  t.streams = {{"Stream1"}, {"Stream2"}};
  t.spans.reserve(2 * pairs);
  for (std::size_t k = pairs; k-- > 0;) {
    const double i = static_cast<double>(k);
    t.spans.push_back(make_span(static_cast<op_id>(2 * k), "K", 0, engine::compute, 2 * i, 2 * i + 1));
    t.spans.push_back(
        make_span(static_cast<op_id>(2 * k + 1), "H2D", 1, engine::h2d_copy, 2 * i + 0.5, 2 * i + 1.5));
  }
  const Metrics m = compute_metrics(t);
  EXPECT_DOUBLE_EQ(m.total, 2.0 * pairs - 0.5);
  ASSERT_EQ(m.engines.size(), 2u);
  EXPECT_DOUBLE_EQ(m.engines[0].busy, static_cast<double>(pairs));
  EXPECT_DOUBLE_EQ(m.engines[1].busy, static_cast<double>(pairs));
  EXPECT_NEAR(m.multi_engine_busy_fraction * m.total, 0.5 * pairs, 1e-6);
  ASSERT_EQ(m.stalls.size(), 2 * (pairs - 1));
  EXPECT_EQ(m.stalls.front().unit, engine::compute);  // equal gaps: earliest first
  EXPECT_DOUBLE_EQ(m.stalls.front().idle_from, 1.0);
  EXPECT_DOUBLE_EQ(m.stalls.back().idle_from, 2.0 * pairs - 2.5);
}

}  // namespace
}  // namespace overlap
