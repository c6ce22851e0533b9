// Machine-read exporters: the Chrome trace parsed back event by event, and
// the Timeline JSON round trip and its error messages.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::io {
namespace {

using nlohmann::json;

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
  span.kind = unit == engine::compute ? op_kind::kernel
              : unit == engine::none  ? op_kind::event_record
                                      : op_kind::copy;
  if (unit == engine::h2d_copy) span.direction = copy_direction::h2d;
  if (unit == engine::d2h_copy) span.direction = copy_direction::d2h;
  return span;
}

// The seed-004 two-stream program, plus an event record, a wait cause and host spans.
Timeline traced_example() {
  Timeline t;
  t.program_name = "seed004";
  t.device = "unit";
  t.time_unit = "units";
  t.sequential_time = 6.0;
  t.streams = {{"Stream1"}, {"Stream2", stream_kind::non_blocking, -1}};
  t.spans = {
      make_span(0, "H2D", "A", 0, engine::h2d_copy, 0, 1),
      make_span(1, "Kernel", "A", 0, engine::compute, 1, 2),
      make_span(2, "D2H", "A", 0, engine::d2h_copy, 2, 3),
      make_span(3, "H2D", "B", 1, engine::h2d_copy, 1, 2),
      make_span(4, "Kernel", "B", 1, engine::compute, 2, 3),
      make_span(5, "D2H", "B", 1, engine::d2h_copy, 3, 4.5),
      make_span(6, "record", "", 1, engine::none, 4.5, 4.5),
  };
  t.spans[3].waited_because = wait_reason::engine_busy;
  t.spans[3].waited_for = 0;
  t.spans[0].bytes = 4096;
  t.spans[0].chunk = 0;
  t.host_spans = {{0, host_activity::api_call, "cudaMemcpyAsync", 0, 0.25},
                  {7, host_activity::blocked, "cudaStreamSynchronize(Stream2)", 0.25, 4.5}};
  return t;
}

std::vector<json> events_where(const json& trace, const std::string& phase, const std::string& category) {
  std::vector<json> found;
  for (const json& event : trace.at("traceEvents")) {
    if (event.at("ph") == phase && event.value("cat", "") == category) found.push_back(event);
  }
  return found;
}

TEST(Chrome, EveryOpAppearsOncePerViewWithItsTimes) {
  const Timeline t = traced_example();
  const json trace = json::parse(to_chrome_trace(t));
  const auto stream_events = events_where(trace, "X", "stream");
  const auto engine_events = events_where(trace, "X", "engine");
  ASSERT_EQ(stream_events.size(), 6u);
  ASSERT_EQ(engine_events.size(), 6u);
  for (const Span& span : t.spans) {
    if (span.unit == engine::none) continue;
    int in_streams = 0;
    for (const json& event : stream_events) {
      if (event.at("args").at("op") != span.op) continue;
      ++in_streams;
      EXPECT_EQ(event.at("pid"), 1);
      EXPECT_EQ(event.at("tid"), span.stream + 1);
      EXPECT_DOUBLE_EQ(event.at("ts").get<double>(), span.start * 1000.0);  // 1 unit shown as 1 ms
      EXPECT_DOUBLE_EQ(event.at("dur").get<double>(), span.duration() * 1000.0);
      EXPECT_EQ(event.at("name"), span.label + " " + span.item);
      EXPECT_EQ(event.at("args").at("engine"), std::string(to_string(span.unit)));
    }
    int in_engines = 0;
    for (const json& event : engine_events) {
      if (event.at("args").at("op") != span.op) continue;
      ++in_engines;
      EXPECT_EQ(event.at("pid"), 2);
      EXPECT_EQ(event.at("tid"), static_cast<int>(span.unit) + 1);
      EXPECT_DOUBLE_EQ(event.at("ts").get<double>(), span.start * 1000.0);
    }
    EXPECT_EQ(in_streams, 1) << span.op;
    EXPECT_EQ(in_engines, 1) << span.op;
  }
}

TEST(Chrome, ArgsCarryTheCauseAndRecordsAreInstants) {
  const json trace = json::parse(to_chrome_trace(traced_example()));
  for (const json& event : events_where(trace, "X", "stream")) {
    const json& args = event.at("args");
    if (args.at("op") == 3) {
      EXPECT_EQ(args.at("waited_because"), "engine_busy");
      EXPECT_EQ(args.at("waited_for"), 0);
      EXPECT_EQ(args.at("stream"), "Stream2");
    }
    if (args.at("op") == 0) {
      EXPECT_EQ(args.at("bytes"), 4096);
      EXPECT_EQ(args.at("chunk"), 0);
      EXPECT_TRUE(args.at("waited_for").is_null());
    }
  }
  const auto instants = events_where(trace, "i", "stream");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].at("args").at("op"), 6);
  EXPECT_EQ(instants[0].at("s"), "t");
  EXPECT_EQ(instants[0].at("tid"), 2);
  EXPECT_DOUBLE_EQ(instants[0].at("ts").get<double>(), 4500.0);
  const auto host = events_where(trace, "X", "host");
  ASSERT_EQ(host.size(), 2u);
  EXPECT_EQ(host[1].at("args").at("activity"), "blocked");
  EXPECT_EQ(host[1].at("pid"), 0);
  EXPECT_DOUBLE_EQ(host[1].at("dur").get<double>(), 4250.0);
}

TEST(Chrome, MetadataNamesProcessesStreamsAndEngines) {
  const json trace = json::parse(to_chrome_trace(traced_example()));
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, std::string> process_names;
  int sort_indices = 0;
  for (const json& event : events_where(trace, "M", "")) {
    if (event.at("name") == "thread_name") {
      thread_names[{event.at("pid"), event.at("tid")}] = event.at("args").at("name");
    } else if (event.at("name") == "process_name") {
      process_names[event.at("pid")] = event.at("args").at("name");
    } else if (event.at("name") == "thread_sort_index") {
      ++sort_indices;
    }
  }
  EXPECT_EQ(process_names[0], "Host");
  EXPECT_EQ(process_names[1], "Device: unit (streams)");
  EXPECT_EQ(process_names[2], "Device: unit (engines)");
  EXPECT_EQ((thread_names[{1, 1}]), "Stream1");
  EXPECT_EQ((thread_names[{1, 2}]), "Stream2");
  EXPECT_EQ((thread_names[{0, 1}]), "host thread");
  EXPECT_EQ((thread_names[{2, static_cast<int>(engine::compute) + 1}]), "compute");
  EXPECT_EQ((thread_names[{2, static_cast<int>(engine::h2d_copy) + 1}]), "H2D engine");
  EXPECT_EQ(thread_names.size(), 6u);  // host, 2 streams, 3 engines
  EXPECT_EQ(sort_indices, 6);
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  EXPECT_EQ(trace.at("otherData").at("program"), "seed004");
  EXPECT_EQ(trace.at("otherData").at("time_unit"), "units");
  EXPECT_TRUE(trace.at("otherData").contains("time_scale"));
}

TEST(Chrome, RealUnitsConvertToMicroseconds) {
  for (const auto& [unit, factor] : {std::pair<std::string, double>{"s", 1e6}, {"ms", 1e3}, {"us", 1.0}}) {
    Timeline t = traced_example();
    t.time_unit = unit;
    const json trace = json::parse(to_chrome_trace(t));
    EXPECT_FALSE(trace.at("otherData").contains("time_scale")) << unit;
    for (const json& event : events_where(trace, "X", "stream")) {
      if (event.at("args").at("op") == 5) {
        EXPECT_DOUBLE_EQ(event.at("ts").get<double>(), 3 * factor) << unit;
        EXPECT_DOUBLE_EQ(event.at("dur").get<double>(), 1.5 * factor) << unit;
      }
    }
  }
}

void expect_same_span(const Span& a, const Span& b) {
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.direction, b.direction);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.item, b.item);
  EXPECT_EQ(a.chunk, b.chunk);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.start, b.start);  // exact: JSON numbers must round-trip bit for bit
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.solo_duration, b.solo_duration);
  EXPECT_EQ(a.waited_because, b.waited_because);
  EXPECT_EQ(a.waited_for, b.waited_for);
}

TEST(TimelineJson, RoundTripKeepsEveryField) {
  Timeline t = traced_example();
  t.spans[1].start = 1.0 / 3.0;  // not representable in few decimals
  t.spans[1].chunk = 9'000'000'000;
  t.spans[2].bytes = 18'000'000'000'000'000'000u;  // above int64
  t.spans[4].waited_because = wait_reason::completion_signal;
  t.spans[4].waited_for = 4'000'000'000u;
  t.streams.push_back({"legacy", stream_kind::legacy_default, 3});
  const Timeline back = timeline_from_json(to_json(t));
  EXPECT_EQ(back.program_name, t.program_name);
  EXPECT_EQ(back.device, t.device);
  EXPECT_EQ(back.time_unit, t.time_unit);
  EXPECT_EQ(back.sequential_time, t.sequential_time);
  ASSERT_EQ(back.streams.size(), t.streams.size());
  for (std::size_t i = 0; i < t.streams.size(); ++i) {
    EXPECT_EQ(back.streams[i].name, t.streams[i].name);
    EXPECT_EQ(back.streams[i].kind, t.streams[i].kind);
    EXPECT_EQ(back.streams[i].priority, t.streams[i].priority);
  }
  ASSERT_EQ(back.spans.size(), t.spans.size());
  for (std::size_t i = 0; i < t.spans.size(); ++i) expect_same_span(back.spans[i], t.spans[i]);
  ASSERT_EQ(back.host_spans.size(), t.host_spans.size());
  for (std::size_t i = 0; i < t.host_spans.size(); ++i) {
    EXPECT_EQ(back.host_spans[i].op, t.host_spans[i].op);
    EXPECT_EQ(back.host_spans[i].activity, t.host_spans[i].activity);
    EXPECT_EQ(back.host_spans[i].label, t.host_spans[i].label);
    EXPECT_EQ(back.host_spans[i].start, t.host_spans[i].start);
    EXPECT_EQ(back.host_spans[i].end, t.host_spans[i].end);
  }
  EXPECT_EQ(to_json(back), to_json(t));
}

TEST(TimelineJson, EnumsAreWrittenAsStringsAndOptionalsAsNull) {
  const json doc = json::parse(to_json(traced_example()));
  EXPECT_EQ(doc.at("spans").at(0).at("engine"), "H2D engine");
  EXPECT_EQ(doc.at("spans").at(0).at("direction"), "h2d");
  EXPECT_EQ(doc.at("spans").at(1).at("kind"), "kernel");
  EXPECT_TRUE(doc.at("spans").at(1).at("direction").is_null());
  EXPECT_TRUE(doc.at("spans").at(1).at("waited_for").is_null());
  EXPECT_EQ(doc.at("spans").at(3).at("waited_because"), "engine_busy");
  EXPECT_EQ(doc.at("streams").at(1).at("kind"), "non_blocking");
  EXPECT_EQ(doc.at("host_spans").at(1).at("activity"), "blocked");
}

TEST(TimelineJson, AbsentOptionalFieldsTakeDefaults) {
  const Timeline t = timeline_from_json(R"({"streams":[{"name":"S"}],
      "spans":[{"op":0,"kind":"kernel","stream":0,"engine":"compute","start":0,"end":2}]})");
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.time_unit, "ms");
  EXPECT_EQ(t.streams[0].kind, stream_kind::blocking);
  EXPECT_EQ(t.spans[0].chunk, -1);
  EXPECT_FALSE(t.spans[0].direction.has_value());
  EXPECT_FALSE(t.spans[0].waited_for.has_value());
  EXPECT_EQ(t.spans[0].waited_because, wait_reason::none);
  EXPECT_TRUE(t.host_spans.empty());
}

std::string error_of(const std::string& text) {
  try {
    (void)timeline_from_json(text);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TimelineJson, ErrorsNameTheField) {
  json doc = json::parse(to_json(traced_example()));
  json bad = doc;
  bad["spans"][3]["engine"] = "foo";
  EXPECT_EQ(error_of(bad.dump()).rfind("spans[3].engine: unknown engine 'foo'", 0), 0u)
      << error_of(bad.dump());
  bad = doc;
  bad["spans"][2].erase("start");
  EXPECT_EQ(error_of(bad.dump()), "spans[2].start: missing");
  bad = doc;
  bad["spans"][0]["stream"] = 7;
  EXPECT_EQ(error_of(bad.dump()), "spans[0].stream: 7 is out of range (2 streams declared)");
  bad = doc;
  bad["spans"][1]["op"] = -1;
  EXPECT_EQ(error_of(bad.dump()), "spans[1].op: must not be negative");
  bad = doc;
  bad["spans"][1]["end"] = 0.5;
  EXPECT_EQ(error_of(bad.dump()), "spans[1].end: 0.5 is before start 1");
  bad = doc;
  bad["host_spans"][1]["activity"] = "sleeping";
  EXPECT_EQ(error_of(bad.dump()).rfind("host_spans[1].activity: unknown host activity 'sleeping'", 0), 0u);
  bad = doc;
  bad["streams"][0]["name"] = 3;
  EXPECT_EQ(error_of(bad.dump()), "streams[0].name: expected a string");
  bad = doc;
  bad.erase("spans");
  EXPECT_EQ(error_of(bad.dump()), "spans: missing");
  EXPECT_EQ(error_of("[1,2]"), "timeline JSON: expected an object at the top level");
  EXPECT_EQ(error_of("{\"spans\": [").rfind("timeline JSON: ", 0), 0u);
}

}  // namespace
}  // namespace overlap::io
