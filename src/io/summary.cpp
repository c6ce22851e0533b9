#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <unordered_map>

#include "overlap/core/metrics.hpp"
#include "overlap/io/exporters.hpp"
#include "summary_lines.hpp"

namespace overlap::io {

namespace {

constexpr std::size_t max_stalls_listed = 8;

using span_index = std::unordered_map<op_id, const Span*>;
using detail::percent;
using detail::stream_name;

std::string op_name(const Span& span) {
  const std::string label = span.label.empty() ? std::string(to_string(span.kind)) : span.label;
  return span.item.empty() ? label : fmt::format("{}:{}", label, span.item);
}

std::string with_unit(const Timeline& timeline, double value) {
  return fmt::format("{} {}", format_number(value), timeline.time_unit);
}

// The op a stall waited on, named as people read it; its stream is only
// named when it differs, since same-stream waits are the usual case.
std::string waited_for_name(const Timeline& timeline, const span_index& index, const Span& waiting,
                            const Stall& stall) {
  if (!stall.waited_for) return "an earlier op";
  const auto found = index.find(*stall.waited_for);
  if (found == index.end()) return fmt::format("op {}", *stall.waited_for);
  const Span& other = *found->second;
  std::string name = op_name(other);
  if (other.stream != waiting.stream) name += " on " + stream_name(timeline, other.stream);
  return name;
}

// One sentence per binding constraint, each saying what would have helped.
std::string reason_sentence(wait_reason reason, const std::string& other) {
  switch (reason) {
    case wait_reason::stream_order:
      return fmt::format(
          "waited for {}, the op before it in the same stream (streams run their ops in order; more streams "
          "would let it start earlier)",
          other);
    case wait_reason::event_wait: return fmt::format("waited for {} through an event", other);
    case wait_reason::default_stream:
      return fmt::format(
          "waited for {}: the legacy default stream is a barrier for blocking streams (use non-blocking "
          "streams or explicit streams)",
          other);
    case wait_reason::engine_busy: return fmt::format("waited for {}, which held the same engine", other);
    case wait_reason::gpu_full:
      return fmt::format("waited for {} to drain: kernels filling the GPU run one after another", other);
    case wait_reason::queue_head:
      return fmt::format(
          "waited behind {} in a hardware queue shared with another stream (false dependency: fewer streams "
          "or more CUDA_DEVICE_MAX_CONNECTIONS)",
          other);
    case wait_reason::completion_signal:
      return fmt::format(
          "waited for {}'s completion signal, held back until a batch of back-to-back kernels finished "
          "(issue depth-first)",
          other);
    case wait_reason::host_issue: return "was issued late: the host thread was busy or blocked";
    case wait_reason::none: return "started as soon as it could";
  }
  return "started as soon as it could";
}

std::string stall_line(const Timeline& timeline, const span_index& index, const Stall& stall) {
  const auto found = index.find(stall.op);
  std::string who = fmt::format("op {}", stall.op);
  std::string other = stall.waited_for ? fmt::format("op {}", *stall.waited_for) : "an earlier op";
  if (found != index.end()) {
    const Span& waiting = *found->second;
    who = fmt::format("{} on {}", op_name(waiting), stream_name(timeline, waiting.stream));
    other = waited_for_name(timeline, index, waiting, stall);
  }
  return fmt::format("{} idle {} → {} ({}): {} {}", detail::engine_label(timeline, stall.unit, stall.device),
                     format_number(stall.idle_from), with_unit(timeline, stall.idle_to),
                     with_unit(timeline, stall.idle()), who, reason_sentence(stall.reason, other));
}

std::string engine_use_line(const Timeline& timeline, const Metrics& metrics) {
  if (metrics.engines.empty()) return "Engine use:        none\n";
  std::string line = "Engine use:        ";
  for (std::size_t i = 0; i < metrics.engines.size(); ++i) {
    if (i > 0) line += " | ";
    const EngineUsage& e = metrics.engines[i];
    line += fmt::format("{} {}", detail::engine_label(timeline, e.unit, e.device), percent(e.busy_fraction));
  }
  return line + "\n";
}

std::string bound_line(const Timeline& timeline, const Metrics& metrics) {
  if (metrics.bound <= 0.0) return "";
  return fmt::format("Bound: {} busy {}; the run took {:.2f}x the bound ({} of ideal)\n",
                     detail::engine_label(timeline, metrics.bound_engine, metrics.bound_device),
                     with_unit(timeline, metrics.bound), metrics.total / metrics.bound,
                     percent(metrics.bound_attainment));
}

std::string host_blocked_line(const Timeline& timeline) {
  const std::optional<double> blocked = detail::host_blocked(timeline);
  if (!blocked) return "";
  return fmt::format("Host blocked: {} in synchronous calls\n", with_unit(timeline, *blocked));
}

std::string stalls_section(const Timeline& timeline, const Metrics& metrics) {
  if (metrics.stalls.empty()) return "Why not faster: no engine was left idle while work waited.\n";
  std::string text = "Why not faster:\n";
  for (const std::string& line : detail::why_not_faster(timeline, metrics)) text += "  " + line + "\n";
  return text;
}

}  // namespace

namespace detail {

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100.0);
}

std::string program_name(const Timeline& timeline) {
  return timeline.program_name.empty() ? "(unnamed)" : timeline.program_name;
}

std::string device_name(const Timeline& timeline) {
  return timeline.device.empty() ? "unknown" : timeline.device;
}

std::string stream_name(const Timeline& timeline, stream_id id) {
  return id < timeline.streams.size() ? timeline.streams[id].name : fmt::format("stream {}", id);
}

std::string engine_label(const Timeline& timeline, engine unit, device_id device) {
  return timeline.device_count() > 1 ? fmt::format("GPU{} {}", device, to_string(unit))
                                     : std::string(to_string(unit));
}

std::optional<double> host_blocked(const Timeline& timeline) {
  std::optional<double> blocked;
  for (const HostSpan& host : timeline.host_spans) {
    if (host.activity == host_activity::blocked) blocked = blocked.value_or(0.0) + (host.end - host.start);
  }
  return blocked;
}

std::vector<std::string> why_not_faster(const Timeline& timeline, const Metrics& metrics) {
  // Only the listed stalls need lookups, but the index keeps each one O(1).
  span_index index;
  index.reserve(timeline.spans.size());
  for (const Span& span : timeline.spans) index.emplace(span.op, &span);
  std::vector<std::string> lines;
  const std::size_t shown = std::min(metrics.stalls.size(), max_stalls_listed);
  lines.reserve(shown + 1);
  for (std::size_t i = 0; i < shown; ++i) lines.push_back(stall_line(timeline, index, metrics.stalls[i]));
  if (metrics.stalls.size() > shown)
    lines.push_back(fmt::format("... and {} more", metrics.stalls.size() - shown));
  return lines;
}

}  // namespace detail

std::string to_summary(const Timeline& timeline) {
  const Metrics metrics = compute_metrics(timeline);
  std::string text =
      fmt::format("Program: {} (device {})\n", detail::program_name(timeline), detail::device_name(timeline));
  text += fmt::format("Total time:        {}\n", with_unit(timeline, metrics.total));
  text += fmt::format("Sequential time:   {}\n", with_unit(timeline, metrics.sequential));
  text += fmt::format("Speedup:           {:.2f}x\n", metrics.speedup);
  text += engine_use_line(timeline, metrics);
  text +=
      fmt::format("Two or more engines busy: {} of the time\n", percent(metrics.multi_engine_busy_fraction));
  text += bound_line(timeline, metrics);
  text += host_blocked_line(timeline);
  text += stalls_section(timeline, metrics);
  return text;
}

}  // namespace overlap::io
