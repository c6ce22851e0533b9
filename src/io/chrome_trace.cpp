#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "overlap/io/exporters.hpp"
#include "summary_lines.hpp"

namespace overlap::io {

namespace {

using detail::stream_name;
using nlohmann::json;

// Names are any bytes (a spec reads back names that are not UTF-8), but JSON
// is UTF-8: bytes that are not become U+FFFD rather than an exception.
std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Process ids: the host thread, the device by stream, the device by engine.
constexpr int host_pid = 0;
constexpr int stream_pid = 1;
constexpr int engine_pid = 2;
constexpr int host_tid = 1;  // the first host thread's; thread i is host_tid + i

// Events are serialized one by one into the output rather than gathered in
// one document: a million-span trace as a single DOM costs gigabytes.
class EventWriter {
 public:
  void add(const json& event) {
    text_ += text_.empty() ? "\n" : ",\n";
    text_ += dump(event);
  }
  [[nodiscard]] std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

struct TimeScale {
  double to_microseconds = 1000.0;
  bool assumed = false;  ///< the unit was not a real one; 1 unit is shown as 1 ms
};

TimeScale scale_for(const std::string& unit) {
  if (unit == "s") return {1e6, false};
  if (unit == "ms") return {1e3, false};
  if (unit == "us") return {1.0, false};
  return {1e3, true};
}

int stream_tid(stream_id stream) {
  return static_cast<int>(stream) + 1;
}
// Each GPU's engines get lanes of their own: GPU d's after GPU d - 1's.
constexpr int engines_per_device = static_cast<int>(engine::none) + 1;
int engine_tid(engine unit, device_id device) {
  return static_cast<int>(device) * engines_per_device + static_cast<int>(unit) + 1;
}

json metadata(const char* what, int pid, int tid, json args) {
  json event = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) event["tid"] = tid;
  return event;
}

// A named lane, sorted by its thread id.
void add_thread(EventWriter& events, int pid, int tid, const std::string& name) {
  events.add(metadata("thread_name", pid, tid, {{"name", name}}));
  events.add(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
}

void add_metadata(EventWriter& events, const Timeline& timeline) {
  const std::string device = detail::device_name(timeline);
  events.add(metadata("process_name", host_pid, -1, {{"name", "Host"}}));
  events.add(
      metadata("process_name", stream_pid, -1, {{"name", fmt::format("Device: {} (streams)", device)}}));
  events.add(
      metadata("process_name", engine_pid, -1, {{"name", fmt::format("Device: {} (engines)", device)}}));
  // A lane per host thread; one thread keeps the name simulated runs have always had.
  const std::size_t threads = std::max<std::size_t>(timeline.host_threads.size(), 1);
  for (std::size_t i = 0; i < threads; ++i) {
    const int tid = host_tid + static_cast<int>(i);
    add_thread(events, host_pid, tid, threads == 1 ? std::string("host thread") : timeline.host_threads[i]);
  }
  std::set<stream_id> streams;
  std::set<std::pair<device_id, engine>> engines;
  for (stream_id s = 0; s < timeline.streams.size(); ++s) streams.insert(s);
  for (const Span& span : timeline.spans) {
    streams.insert(span.stream);
    if (span.unit != engine::none) engines.emplace(timeline.device_of(span), span.unit);
  }
  for (stream_id s : streams) add_thread(events, stream_pid, stream_tid(s), stream_name(timeline, s));
  for (const auto& [gpu, unit] : engines)
    add_thread(events, engine_pid, engine_tid(unit, gpu), detail::engine_label(timeline, unit, gpu));
}

std::string event_name(const Span& span) {
  const std::string label = span.label.empty() ? std::string(to_string(span.kind)) : span.label;
  return span.item.empty() ? label : fmt::format("{} {}", label, span.item);
}

json span_args(const Timeline& timeline, const Span& span) {
  return {{"op", span.op},
          {"chunk", span.chunk},
          {"bytes", span.bytes},
          {"engine", to_string(span.unit)},
          {"stream", stream_name(timeline, span.stream)},
          {"waited_because", to_string(span.waited_because)},
          {"waited_for", span.waited_for ? json(*span.waited_for) : json(nullptr)}};
}

json complete_event(const Span& span, json args, const TimeScale& scale) {
  return {{"name", event_name(span)},
          {"cat", "stream"},
          {"ph", "X"},
          {"pid", stream_pid},
          {"tid", stream_tid(span.stream)},
          {"ts", span.start * scale.to_microseconds},
          {"dur", span.duration() * scale.to_microseconds},
          {"args", std::move(args)}};
}

// Records, waits and zero-length spans have no extent: an instant marks
// where in the stream they happened.
json instant_event(const Span& span, json args, const TimeScale& scale) {
  return {{"name", event_name(span)},
          {"cat", "stream"},
          {"ph", "i"},
          {"s", "t"},
          {"pid", stream_pid},
          {"tid", stream_tid(span.stream)},
          {"ts", span.start * scale.to_microseconds},
          {"args", std::move(args)}};
}

void add_spans(EventWriter& events, const Timeline& timeline, const TimeScale& scale) {
  for (const Span& span : timeline.spans) {
    json args = span_args(timeline, span);
    if (span.unit == engine::none || span.end <= span.start) {
      events.add(instant_event(span, std::move(args), scale));
      continue;
    }
    // The engine view is the same event moved to another track; reusing
    // the object avoids building every span's args twice.
    json event = complete_event(span, std::move(args), scale);
    events.add(event);
    event["cat"] = "engine";
    event["pid"] = engine_pid;
    event["tid"] = engine_tid(span.unit, timeline.device_of(span));
    events.add(event);
  }
}

void add_host_spans(EventWriter& events, const Timeline& timeline, const TimeScale& scale) {
  for (const HostSpan& host : timeline.host_spans) {
    const std::string name = host.label.empty() ? std::string(to_string(host.activity)) : host.label;
    events.add({{"name", name},
                {"cat", "host"},
                {"ph", "X"},
                {"pid", host_pid},
                {"tid", host_tid + static_cast<int>(host.thread)},
                {"ts", host.start * scale.to_microseconds},
                {"dur", (host.end - host.start) * scale.to_microseconds},
                {"args", {{"op", host.op}, {"activity", to_string(host.activity)}}}});
  }
}

}  // namespace

std::string to_chrome_trace(const Timeline& timeline) {
  const TimeScale scale = scale_for(timeline.time_unit);
  EventWriter events;
  add_metadata(events, timeline);
  add_spans(events, timeline, scale);
  add_host_spans(events, timeline, scale);
  json other = {
      {"program", timeline.program_name}, {"device", timeline.device}, {"time_unit", timeline.time_unit}};
  if (scale.assumed) other["time_scale"] = fmt::format("1 {} is shown as 1 ms", timeline.time_unit);
  return fmt::format("{{\"traceEvents\":[{}\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{}}}\n",
                     events.take(), dump(other));
}

}  // namespace overlap::io
