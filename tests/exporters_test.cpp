// Text exporters on hand-built timelines: the seeds' ASCII drawing line for
// line, the Mermaid Gantt block, the summary's stall sentences, and the
// format table.
#include "overlap/io/exporters.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace overlap::io {
namespace {

Span make_span(op_id op, std::string label, std::string item, stream_id stream, engine unit, double start,
               double end) {
  Span span;
  span.op = op;
  span.label = std::move(label);
  span.item = std::move(item);
  span.stream = stream;
  span.unit = unit;
  span.start = start;
  span.end = end;
  span.solo_duration = end - start;
  switch (unit) {
    case engine::h2d_copy: span.kind = op_kind::copy, span.direction = copy_direction::h2d; break;
    case engine::d2h_copy: span.kind = op_kind::copy, span.direction = copy_direction::d2h; break;
    case engine::none: span.kind = op_kind::event_record; break;
    default: span.kind = op_kind::kernel; break;
  }
  return span;
}

// The 2-stream exercise of seed 004: items A and B, one time unit per stage.
Timeline two_stream_example() {
  Timeline t;
  t.program_name = "seed004";
  t.device = "unit";
  t.time_unit = "units";
  t.sequential_time = 6.0;
  t.streams = {{"Stream1"}, {"Stream2"}};
  t.spans = {
      make_span(0, "H2D", "A", 0, engine::h2d_copy, 0, 1),
      make_span(1, "Kernel", "A", 0, engine::compute, 1, 2),
      make_span(2, "D2H", "A", 0, engine::d2h_copy, 2, 3),
      make_span(3, "H2D", "B", 1, engine::h2d_copy, 1, 2),
      make_span(4, "Kernel", "B", 1, engine::compute, 2, 3),
      make_span(5, "D2H", "B", 1, engine::d2h_copy, 3, 4),
  };
  return t;
}

int count_of(const std::string& text, const std::string& needle) {
  int count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

TEST(Ascii, TwoStreamExampleMatchesTheSeedLineForLine) {
  EXPECT_EQ(to_ascii(two_stream_example()),
            "=== Sequential (one op at a time) ===\n"
            "[H2D: A] -> [Kernel A] -> [D2H: A] -> [H2D: B] -> [Kernel B] -> [D2H: B]\n"
            "Total time: 6 units\n"
            "=== Overlapped (2 streams, device unit) ===\n"
            "t=0: Stream1: H2D:A\n"
            "t=1: Stream1: Kernel:A | Stream2: H2D:B\n"
            "t=2: Stream1: D2H:A | Stream2: Kernel:B\n"
            "t=3: Stream2: D2H:B\n"
            "Total time: 4 units\n"
            "Speedup: 1.50x\n");
}

TEST(Ascii, SlotSizeIsTheCommonDivisorOfAllTimes) {
  Timeline t;
  t.device = "sim";
  t.streams = {{"Stream1"}, {"Stream2"}};
  t.spans = {
      make_span(0, "H2D", "A", 0, engine::h2d_copy, 0, 2.5),
      make_span(1, "Kernel", "A", 0, engine::compute, 2.5, 7.5),
      make_span(2, "H2D", "B", 1, engine::h2d_copy, 2.5, 5),
      make_span(3, "record", "", 1, engine::none, 5, 5),  // ordering only: not drawn, not in the chain
      make_span(4, "D2H", "B", 1, engine::d2h_copy, 10, 12.5),
  };
  EXPECT_EQ(to_ascii(t),
            "=== Sequential (one op at a time) ===\n"
            "[H2D: A] -> [Kernel A] -> [H2D: B] -> [D2H: B]\n"
            "Total time: 12.5 ms\n"
            "=== Overlapped (2 streams, device sim; each slot = 2.5 ms) ===\n"
            "t=0: Stream1: H2D:A\n"
            "t=2.5: Stream1: Kernel:A | Stream2: H2D:B\n"
            "t=5: Stream1: Kernel:A\n"
            "t=7.5: (idle)\n"
            "t=10: Stream2: D2H:B\n"
            "Total time: 12.5 ms\n"
            "Speedup: 1.00x\n");
}

TEST(Ascii, TooManySlotsFallBackToAHundredCoarseOnes) {
  Timeline t;
  t.device = "sim";
  t.streams = {{"Stream1"}};
  t.spans = {make_span(0, "K", "0", 0, engine::compute, 0, 1),
             make_span(1, "K", "1", 0, engine::compute, 1, 2),
             make_span(2, "K", "2", 0, engine::compute, 2, 1000)};
  const std::string text = to_ascii(t);
  EXPECT_NE(text.find("(1 stream, device sim; each slot = 10 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("\nt=0: Stream1: K:0, K:1, K:2\nt=10: Stream1: K:2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nt=990: Stream1: K:2\nTotal time: 1000 ms\n"), std::string::npos) << text;
  EXPECT_EQ(count_of(text, "\nt="), 100);
}

TEST(Ascii, LongSequentialChainIsCut) {
  Timeline t;
  t.streams = {{"Stream1"}};
  for (op_id i = 0; i < 14; ++i) {
    t.spans.push_back(make_span(i, "K", std::to_string(i), 0, engine::compute, i, i + 1.0));
  }
  const std::string text = to_ascii(t);
  EXPECT_NE(text.find("\n[K 0] -> [K 1] -> [K 2] -> [K 3] -> [K 4] -> [K 5] -> [K 6] -> [K 7] -> [K 8] -> "
                      "[K 9] -> [K 10] -> [K 11] -> ... (14 ops)\nTotal time: 14 ms\n"),
            std::string::npos)
      << text;
}

TEST(Mermaid, TwoStreamExampleIsAGanttBlock) {
  EXPECT_EQ(to_mermaid(two_stream_example()),
            "gantt\n"
            "  title seed004 on unit (1 tick = 1 units)\n"
            "  dateFormat X\n"
            "  axisFormat %s\n"
            "  section Stream1\n"
            "  H2D A :s0_0, 0, 1\n"
            "  Kernel A :s0_1, 1, 2\n"
            "  D2H A :s0_2, 2, 3\n"
            "  section Stream2\n"
            "  H2D B :s1_0, 1, 2\n"
            "  Kernel B :s1_1, 2, 3\n"
            "  D2H B :s1_2, 3, 4\n");
}

TEST(Mermaid, FractionalTimesScaleToIntegerTicksAndNamesAreSanitized) {
  Timeline t;
  t.program_name = "p";
  t.device = "H100";
  t.streams = {{"Stream1"}};
  t.spans = {make_span(0, "H2D", "a:b#c;d", 0, engine::h2d_copy, 0, 0.25),
             make_span(1, "Kernel", "x", 0, engine::compute, 0.25, 1.5),
             make_span(2, "record", "", 0, engine::none, 1.5, 1.5)};
  t.host_spans = {{0, host_activity::api_call, "cudaMemcpyAsync", 0, 0.01},
                  {3, host_activity::blocked, "cudaStreamSynchronize(Stream1)", 0.01, 1.5}};
  EXPECT_EQ(to_mermaid(t),
            "gantt\n"
            "  title p on H100 (1 tick = 0.01 ms)\n"
            "  dateFormat X\n"
            "  axisFormat %s\n"
            "  section Stream1\n"
            "  H2D a b c d :s0_0, 0, 25\n"
            "  Kernel x :s0_1, 25, 150\n"
            "  section Host\n"
            "  cudaStreamSynchronize(Stream1) :h0, 1, 150\n");
}

TEST(Summary, TwoStreamExampleFigures) {
  EXPECT_EQ(to_summary(two_stream_example()),
            "Program: seed004 (device unit)\n"
            "Total time:        4 units\n"
            "Sequential time:   6 units\n"
            "Speedup:           1.50x\n"
            "Engine use:        H2D engine 50.0% | D2H engine 50.0% | compute 50.0%\n"
            "Two or more engines busy: 50.0% of the time\n"
            "Bound: H2D engine busy 2 units; the run took 2.00x the bound (50.0% of ideal)\n"
            "Why not faster: no engine was left idle while work waited.\n");
}

// Kernel K:1 on `waiter_stream` starts at 2 although compute was free at 1.
Timeline one_stall(wait_reason reason, stream_id waiter_stream) {
  Timeline t;
  t.program_name = "stall";
  t.device = "sim";
  t.streams = {{"Stream1"}, {"Stream2"}};
  Span waiter = make_span(1, "K", "1", waiter_stream, engine::compute, 2, 3);
  waiter.waited_because = reason;
  waiter.waited_for = 0;
  t.spans = {make_span(0, "K", "0", 0, engine::compute, 0, 1), waiter};
  return t;
}

TEST(Summary, EveryStallReasonHasItsSentence) {
  const std::pair<wait_reason, std::string> expected[] = {
      {wait_reason::stream_order,
       "waited for K:0, the op before it in the same stream (streams run their ops in order; more streams "
       "would "
       "let it start earlier)"},
      {wait_reason::event_wait, "waited for K:0 through an event"},
      {wait_reason::default_stream,
       "waited for K:0: the legacy default stream is a barrier for blocking streams (use non-blocking "
       "streams or "
       "explicit streams)"},
      {wait_reason::engine_busy, "waited for K:0, which held the same engine"},
      {wait_reason::gpu_full, "waited for K:0 to drain: kernels filling the GPU run one after another"},
      {wait_reason::queue_head,
       "waited behind K:0 in a hardware queue shared with another stream (false dependency: fewer streams or "
       "more "
       "CUDA_DEVICE_MAX_CONNECTIONS)"},
      {wait_reason::completion_signal,
       "waited for K:0's completion signal, held back until a batch of back-to-back kernels finished (issue "
       "depth-first)"},
      {wait_reason::host_issue, "was issued late: the host thread was busy or blocked"},
      {wait_reason::none, "started as soon as it could"},
  };
  for (const auto& [reason, sentence] : expected) {
    const std::string text = to_summary(one_stall(reason, 0));
    EXPECT_NE(text.find("Why not faster:\n  compute idle 1 → 2 ms (1 ms): K:1 on Stream1 " + sentence + "\n"),
              std::string::npos)
        << to_string(reason) << "\n"
        << text;
  }
}

TEST(Summary, WaitedForOpOnAnotherStreamIsNamedWithItsStream) {
  const std::string text = to_summary(one_stall(wait_reason::event_wait, 1));
  EXPECT_NE(text.find(": K:1 on Stream2 waited for K:0 on Stream1 through an event\n"), std::string::npos)
      << text;
}

TEST(Summary, ListsEightStallsThenCountsTheRest) {
  Timeline t;
  t.streams = {{"Stream1"}};
  for (op_id i = 0; i < 11; ++i) {
    // Gap before op i is i ms long, so the listing order is known.
    const double start = i * (i + 1.0) / 2.0 + i;
    Span span = make_span(i, "K", std::to_string(i), 0, engine::compute, start, start + 1);
    span.waited_because = wait_reason::stream_order;
    span.waited_for = i > 0 ? std::optional<op_id>(i - 1) : std::nullopt;
    t.spans.push_back(span);
  }
  const std::string text = to_summary(t);
  EXPECT_EQ(count_of(text, "\n  compute idle "), 8);
  EXPECT_NE(text.find("(10 ms): K:10 on Stream1 waited for K:9,"), std::string::npos) << text;
  EXPECT_NE(text.find("(3 ms): K:3 on Stream1 waited for K:2,"), std::string::npos) << text;
  EXPECT_EQ(text.find("(2 ms): K:2"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  ... and 2 more\n"), std::string::npos) << text;
}

TEST(Summary, HostBlockedTimeIsReported) {
  Timeline t = two_stream_example();
  t.time_unit = "ms";
  t.host_spans = {{6, host_activity::blocked, "cudaStreamSynchronize(Stream1)", 0.5, 3},
                  {7, host_activity::api_call, "cudaMemcpyAsync", 0, 0.5},
                  {8, host_activity::blocked, "cudaDeviceSynchronize()", 3, 4}};
  EXPECT_NE(to_summary(t).find("\nHost blocked: 3.5 ms in synchronous calls\n"), std::string::npos);
  EXPECT_EQ(to_summary(two_stream_example()).find("Host blocked"), std::string::npos);
}

TEST(SummaryFormats, NamesParseAndRenderDispatches) {
  const auto names = format_names();
  EXPECT_EQ(names, (std::vector<std::string>{"summary", "ascii", "mermaid", "chrome", "json", "html"}));
  for (const std::string& name : names) EXPECT_TRUE(parse_format(name).has_value()) << name;
  EXPECT_FALSE(parse_format("pdf").has_value());
  EXPECT_FALSE(parse_format("ASCII").has_value());
  const Timeline t = two_stream_example();
  EXPECT_EQ(render(t, format::ascii), to_ascii(t));
  EXPECT_EQ(render(t, format::summary), to_summary(t));
  EXPECT_EQ(render(t, format::mermaid), to_mermaid(t));
  EXPECT_EQ(render(t, format::chrome), to_chrome_trace(t));
  EXPECT_EQ(render(t, format::json), to_json(t));
}

TEST(SummaryFormats, NumbersKeepFourDecimalsWithoutTrailingZeros) {
  EXPECT_EQ(format_number(47.5), "47.5");
  EXPECT_EQ(format_number(80.0), "80");
  EXPECT_EQ(format_number(0.0123), "0.0123");
  EXPECT_EQ(format_number(1.0 / 3.0), "0.3333");
  EXPECT_EQ(format_number(2.71828), "2.7183");
  EXPECT_EQ(format_number(0.000123456), "0.0001235");
  EXPECT_EQ(format_number(0.0), "0");
  EXPECT_EQ(format_number(-0.00001), "-0.00001");
  EXPECT_EQ(format_number(-1e-20), "0");  // no "-0" for rounding noise
}

}  // namespace
}  // namespace overlap::io
