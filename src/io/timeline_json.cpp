#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::io {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int format_version = 1;

// Every value of each enum, so the parsers below are the exact inverse of
// the to_string functions and cannot drift from them.
constexpr std::array all_engines{engine::h2d_copy, engine::d2h_copy,      engine::copy, engine::d2d_copy,
                                 engine::compute,  engine::host_callback, engine::none};
constexpr std::array all_wait_reasons{
    wait_reason::none,       wait_reason::host_issue,     wait_reason::stream_order,
    wait_reason::event_wait, wait_reason::default_stream, wait_reason::engine_busy,
    wait_reason::gpu_full,   wait_reason::queue_head,     wait_reason::completion_signal};
constexpr std::array all_op_kinds{op_kind::copy,
                                  op_kind::memset,
                                  op_kind::kernel,
                                  op_kind::host_function,
                                  op_kind::event_record,
                                  op_kind::stream_wait_event,
                                  op_kind::stream_synchronize,
                                  op_kind::event_synchronize,
                                  op_kind::device_synchronize,
                                  op_kind::device_allocate,
                                  op_kind::device_free,
                                  op_kind::host_allocate,
                                  op_kind::host_free,
                                  op_kind::host_work};
constexpr std::array all_stream_kinds{stream_kind::blocking, stream_kind::non_blocking,
                                      stream_kind::legacy_default, stream_kind::per_thread_default};
constexpr std::array all_directions{copy_direction::h2d, copy_direction::d2h, copy_direction::d2d};
constexpr std::array all_activities{host_activity::api_call, host_activity::blocked, host_activity::work};

// ---- writing ----

ordered_json stream_to_json(const Stream& stream) {
  ordered_json out = {{"name", stream.name}, {"kind", to_string(stream.kind)}, {"priority", stream.priority}};
  if (stream.device != 0) out["device"] = stream.device;  // a program on several GPUs
  return out;
}

ordered_json span_to_json(const Span& span) {
  return {{"op", span.op},
          {"kind", to_string(span.kind)},
          {"direction", span.direction ? ordered_json(to_string(*span.direction)) : ordered_json(nullptr)},
          {"label", span.label},
          {"item", span.item},
          {"chunk", span.chunk},
          {"stream", span.stream},
          {"engine", to_string(span.unit)},
          {"start", span.start},
          {"end", span.end},
          {"bytes", span.bytes},
          {"solo_duration", span.solo_duration},
          {"waited_because", to_string(span.waited_because)},
          {"waited_for", span.waited_for ? ordered_json(*span.waited_for) : ordered_json(nullptr)}};
}

ordered_json host_span_to_json(const HostSpan& host) {
  ordered_json j = {{"op", host.op},
                    {"activity", to_string(host.activity)},
                    {"label", host.label},
                    {"start", host.start},
                    {"end", host.end}};
  // Only a traced run has several host threads; one-thread files stay as they were.
  if (host.thread != 0) j["thread"] = host.thread;
  return j;
}

// Names are any bytes (a spec reads back names that are not UTF-8), but JSON
// is UTF-8: bytes that are not are written as U+FFFD rather than thrown at.
constexpr auto replace_not_utf8 = ordered_json::error_handler_t::replace;

// One element per line: diffable and greppable, and a million spans are
// serialized one small object at a time instead of as one huge document.
template <typename Element, typename ToJson>
std::string array_text(const char* name, const std::vector<Element>& elements, ToJson to_json_element) {
  std::string text = fmt::format(" \"{}\": [", name);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    text += i == 0 ? "\n  " : ",\n  ";
    text += to_json_element(elements[i]).dump(-1, ' ', false, replace_not_utf8);
  }
  return text + (elements.empty() ? "]" : "\n ]");
}

// ---- reading ----

[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw invalid_input(fmt::format("{}: {}", path, message));
}

template <typename Enum, std::size_t N>
Enum parse_enum(const std::string& text, const std::array<Enum, N>& values, const std::string& path,
                const char* what) {
  for (Enum value : values) {
    if (to_string(value) == text) return value;
  }
  std::string allowed;
  for (Enum value : values) allowed += fmt::format("{}'{}'", allowed.empty() ? "" : ", ", to_string(value));
  fail(path, fmt::format("unknown {} '{}' (expected one of {})", what, text, allowed));
}

// Reads the fields of one JSON object, naming each by its full path
// ("spans[3].engine") in any error.
class ObjectReader {
 public:
  ObjectReader(const json& node, std::string path) : node_(node), path_(std::move(path)) {
    if (!node_.is_object()) fail(path_, "expected an object");
  }

  [[nodiscard]] std::string path(const char* key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }

  [[nodiscard]] bool has(const char* key) const { return node_.contains(key) && !node_.at(key).is_null(); }

  [[nodiscard]] const json& require(const char* key) const {
    if (!has(key)) fail(path(key), "missing");
    return node_.at(key);
  }

  [[nodiscard]] std::string text(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    const json& value = node_.at(key);
    if (!value.is_string()) fail(path(key), "expected a string");
    return value.get<std::string>();
  }

  [[nodiscard]] std::string required_text(const char* key) const {
    const json& value = require(key);
    if (!value.is_string()) fail(path(key), "expected a string");
    return value.get<std::string>();
  }

  [[nodiscard]] double number(const char* key, std::optional<double> fallback = std::nullopt) const {
    if (!has(key) && fallback) return *fallback;
    const json& value = require(key);
    if (!value.is_number()) fail(path(key), "expected a number");
    const double result = value.get<double>();
    if (!std::isfinite(result)) fail(path(key), "expected a finite number");
    return result;
  }

  [[nodiscard]] std::uint64_t unsigned_integer(const char* key, std::uint64_t max) const {
    const json& value = require(key);
    if (!value.is_number_integer()) fail(path(key), "expected an integer");
    if (!value.is_number_unsigned()) fail(path(key), "must not be negative");
    const auto result = value.get<std::uint64_t>();
    if (result > max) fail(path(key), fmt::format("{} is above the largest allowed value {}", result, max));
    return result;
  }

  [[nodiscard]] std::int64_t signed_integer(const char* key, std::int64_t min, std::int64_t max) const {
    const json& value = require(key);
    if (!value.is_number_integer()) fail(path(key), "expected an integer");
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
      fail(path(key), fmt::format("must be at most {}", max));
    }
    const auto result = value.get<std::int64_t>();
    if (result < min || result > max) fail(path(key), fmt::format("must be between {} and {}", min, max));
    return result;
  }

  [[nodiscard]] const json& array(const char* key, bool required) const {
    static const json empty = json::array();
    if (!required && !has(key)) return empty;
    const json& value = require(key);
    if (!value.is_array()) fail(path(key), "expected an array");
    return value;
  }

  template <typename Enum, std::size_t N>
  [[nodiscard]] Enum enumeration(const char* key, const std::array<Enum, N>& values, const char* what,
                                 std::type_identity_t<std::optional<Enum>> fallback = std::nullopt) const {
    if (!has(key) && fallback) return *fallback;
    return parse_enum(required_text(key), values, path(key), what);
  }

 private:
  const json& node_;
  std::string path_;
};

constexpr auto max_id = std::numeric_limits<std::uint32_t>::max();

Stream stream_from_json(const ObjectReader& in) {
  Stream stream;
  stream.name = in.required_text("name");
  stream.kind = in.enumeration("kind", all_stream_kinds, "stream kind", stream_kind::blocking);
  if (in.has("priority")) {
    stream.priority = static_cast<int>(
        in.signed_integer("priority", std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  }
  if (in.has("device"))
    stream.device = static_cast<device_id>(in.unsigned_integer("device", limits::max_devices - 1));
  return stream;
}

void read_span_timing(const ObjectReader& in, Span& span) {
  span.start = in.number("start");
  span.end = in.number("end");
  if (span.end < span.start) fail(in.path("end"), fmt::format("{} is before start {}", span.end, span.start));
  span.solo_duration = in.number("solo_duration", 0.0);
}

void read_span_cause(const ObjectReader& in, Span& span) {
  span.waited_because = in.enumeration("waited_because", all_wait_reasons, "wait reason", wait_reason::none);
  if (in.has("waited_for")) span.waited_for = static_cast<op_id>(in.unsigned_integer("waited_for", max_id));
}

Span span_from_json(const ObjectReader& in, std::size_t stream_count) {
  Span span;
  span.op = static_cast<op_id>(in.unsigned_integer("op", max_id));
  span.kind = in.enumeration("kind", all_op_kinds, "op kind");
  if (in.has("direction")) span.direction = in.enumeration("direction", all_directions, "copy direction");
  span.label = in.text("label", "");
  span.item = in.text("item", "");
  if (in.has("chunk")) {
    span.chunk = in.signed_integer("chunk", -1, std::numeric_limits<std::int64_t>::max());
  }
  span.stream = static_cast<stream_id>(in.unsigned_integer("stream", max_id));
  if (span.stream >= stream_count) {
    fail(in.path("stream"),
         fmt::format("{} is out of range ({} streams declared)", span.stream, stream_count));
  }
  span.unit = in.enumeration("engine", all_engines, "engine");
  if (in.has("bytes")) span.bytes = in.unsigned_integer("bytes", std::numeric_limits<std::uint64_t>::max());
  read_span_timing(in, span);
  read_span_cause(in, span);
  return span;
}

HostSpan host_span_from_json(const ObjectReader& in) {
  HostSpan host;
  host.op = static_cast<op_id>(in.unsigned_integer("op", max_id));
  host.activity = in.enumeration("activity", all_activities, "host activity");
  host.label = in.text("label", "");
  host.start = in.number("start");
  host.end = in.number("end");
  if (in.has("thread")) host.thread = static_cast<std::size_t>(in.unsigned_integer("thread", max_id));
  if (host.end < host.start) fail(in.path("end"), fmt::format("{} is before start {}", host.end, host.start));
  return host;
}

std::string element_path(const char* array_name, std::size_t index) {
  return fmt::format("{}[{}]", array_name, index);
}

Timeline timeline_from_object(const json& root) {
  const ObjectReader in(root, "");
  if (in.has("version") && in.signed_integer("version", 0, 1000) != format_version) {
    fail("version", fmt::format("unsupported timeline format version (this build reads {})", format_version));
  }
  Timeline timeline;
  timeline.program_name = in.text("program_name", "");
  timeline.device = in.text("device", "");
  timeline.time_unit = in.text("time_unit", "ms");
  timeline.sequential_time = in.number("sequential_time", 0.0);
  const json& streams = in.array("streams", true);
  for (std::size_t i = 0; i < streams.size(); ++i) {
    timeline.streams.push_back(stream_from_json(ObjectReader(streams[i], element_path("streams", i))));
  }
  const json& spans = in.array("spans", true);
  timeline.spans.reserve(spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    timeline.spans.push_back(
        span_from_json(ObjectReader(spans[i], element_path("spans", i)), streams.size()));
  }
  const json& threads = in.array("host_threads", false);
  if (!threads.empty()) timeline.host_threads.clear();
  for (std::size_t i = 0; i < threads.size(); ++i) {
    if (!threads[i].is_string()) fail(element_path("host_threads", i), "expected a string");
    timeline.host_threads.push_back(threads[i].get<std::string>());
  }
  const json& hosts = in.array("host_spans", false);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    timeline.host_spans.push_back(host_span_from_json(ObjectReader(hosts[i], element_path("host_spans", i))));
    if (timeline.host_spans.back().thread >= timeline.host_threads.size())
      fail(element_path("host_spans", i) + ".thread",
           fmt::format("{} is not a host thread (there are {})", timeline.host_spans.back().thread,
                       timeline.host_threads.size()));
  }
  return timeline;
}

}  // namespace

std::string to_json(const Timeline& timeline) {
  const ordered_json header = {{"version", format_version},
                               {"program_name", timeline.program_name},
                               {"device", timeline.device},
                               {"time_unit", timeline.time_unit},
                               {"sequential_time", timeline.sequential_time},
                               // Derived (the last end among the spans), so scripts need not
                               // recompute it; the reader ignores it.
                               {"total_time", timeline.total()}};
  std::string text = header.dump(1, ' ', false, replace_not_utf8);
  text.erase(text.rfind('\n'));  // reopen the object ("\n}") to append the arrays after its fields
  text += ",\n" + array_text("streams", timeline.streams, stream_to_json);
  text += ",\n" + array_text("spans", timeline.spans, span_to_json);
  text += ",\n" + array_text("host_spans", timeline.host_spans, host_span_to_json);
  if (timeline.host_threads != std::vector<std::string>{"host"}) {
    text +=
        ",\n \"host_threads\": " + ordered_json(timeline.host_threads).dump(-1, ' ', false, replace_not_utf8);
  }
  return text + "\n}\n";
}

Timeline timeline_from_json(std::string_view text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& parse_error) {  // out_of_range too: a number past a double, 1e400
    throw invalid_input(fmt::format("timeline JSON: {}", parse_error.what()));
  }
  if (!root.is_object()) throw invalid_input("timeline JSON: expected an object at the top level");
  return timeline_from_object(root);
}

}  // namespace overlap::io
