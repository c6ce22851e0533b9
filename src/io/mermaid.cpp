#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>

#include "overlap/io/exporters.hpp"

namespace overlap::io {

namespace {

constexpr int max_decimal_places = 6;

// Mermaid's parser splits tasks on ':' and ';' and treats '#' as a comment.
std::string sanitize(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == ':' || c == '#' || c == ';'; }, ' ');
  return text;
}

bool is_near_integer(double value) noexcept {
  return std::abs(value - std::round(value)) <= 1e-9 * std::max(1.0, std::abs(value));
}

// dateFormat X takes integers only: the smallest power of ten (up to 10^6)
// that makes every time whole; past that, times are rounded to 10^-6.
double tick_scale(const Timeline& timeline) {
  double scale = 1.0;
  for (int k = 0; k < max_decimal_places; ++k, scale *= 10.0) {
    const bool spans_whole = std::all_of(timeline.spans.begin(), timeline.spans.end(), [&](const Span& s) {
      return is_near_integer(s.start * scale) && is_near_integer(s.end * scale);
    });
    const bool host_whole =
        std::all_of(timeline.host_spans.begin(), timeline.host_spans.end(), [&](const HostSpan& h) {
          return is_near_integer(h.start * scale) && is_near_integer(h.end * scale);
        });
    if (spans_whole && host_whole) return scale;
  }
  return scale;
}

std::string task(const std::string& name, const std::string& id, double start, double end, double scale) {
  return fmt::format("  {} :{}, {}, {}\n", sanitize(name), id, std::llround(start * scale),
                     std::llround(end * scale));
}

std::string span_name(const Span& span) {
  const std::string label = span.label.empty() ? std::string(to_string(span.kind)) : span.label;
  return span.item.empty() ? label : fmt::format("{} {}", label, span.item);
}

std::string stream_sections(const Timeline& timeline, double scale) {
  std::map<stream_id, std::vector<const Span*>> by_stream;
  for (const Span& span : timeline.spans) {
    if (span.unit != engine::none && span.end > span.start) by_stream[span.stream].push_back(&span);
  }
  std::string text;
  for (auto& [stream, spans] : by_stream) {
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Span* a, const Span* b) { return a->start < b->start; });
    const std::string name =
        stream < timeline.streams.size() ? timeline.streams[stream].name : fmt::format("stream {}", stream);
    text += fmt::format("  section {}\n", sanitize(name));
    for (std::size_t i = 0; i < spans.size(); ++i) {
      text +=
          task(span_name(*spans[i]), fmt::format("s{}_{}", stream, i), spans[i]->start, spans[i]->end, scale);
    }
  }
  return text;
}

// API-call spans are too short to read in a Gantt chart; blocked and work
// spans show where the host held the pipeline back.
std::string host_section(const Timeline& timeline, double scale) {
  std::string text;
  std::size_t count = 0;
  for (const HostSpan& host : timeline.host_spans) {
    if (host.activity == host_activity::api_call || host.end <= host.start) continue;
    if (count == 0) text += "  section Host\n";
    const std::string name = host.label.empty() ? std::string(to_string(host.activity)) : host.label;
    text += task(name, fmt::format("h{}", count++), host.start, host.end, scale);
  }
  return text;
}

}  // namespace

std::string to_mermaid(const Timeline& timeline) {
  const double scale = tick_scale(timeline);
  const std::string name = timeline.program_name.empty() ? "Timeline" : timeline.program_name;
  const std::string device = timeline.device.empty() ? "unknown device" : timeline.device;
  std::string text = "gantt\n";
  text += fmt::format("  title {} on {} (1 tick = {} {})\n", sanitize(name), sanitize(device),
                      format_number(1.0 / scale), timeline.time_unit);
  text += "  dateFormat X\n  axisFormat %s\n";
  return text + stream_sections(timeline, scale) + host_section(timeline, scale);
}

}  // namespace overlap::io
