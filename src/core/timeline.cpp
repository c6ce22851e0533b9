#include "overlap/core/timeline.hpp"

#include <algorithm>

namespace overlap {

std::string_view to_string(engine e) noexcept {
  switch (e) {
    case engine::h2d_copy: return "H2D engine";
    case engine::d2h_copy: return "D2H engine";
    case engine::copy: return "copy engine";
    case engine::d2d_copy: return "D2D engine";
    case engine::compute: return "compute";
    case engine::host_callback: return "host callbacks";
    case engine::none: return "none";
  }
  return "unknown";
}

std::string_view to_string(wait_reason reason) noexcept {
  switch (reason) {
    case wait_reason::none: return "none";
    case wait_reason::host_issue: return "host_issue";
    case wait_reason::stream_order: return "stream_order";
    case wait_reason::event_wait: return "event_wait";
    case wait_reason::default_stream: return "default_stream";
    case wait_reason::engine_busy: return "engine_busy";
    case wait_reason::gpu_full: return "gpu_full";
    case wait_reason::queue_head: return "queue_head";
    case wait_reason::completion_signal: return "completion_signal";
  }
  return "unknown";
}

std::string_view to_string(host_activity activity) noexcept {
  switch (activity) {
    case host_activity::api_call: return "api_call";
    case host_activity::blocked: return "blocked";
    case host_activity::work: return "work";
  }
  return "unknown";
}

double Timeline::total() const noexcept {
  double last = 0.0;
  for (const Span& s : spans) last = std::max(last, s.end);
  for (const HostSpan& h : host_spans) last = std::max(last, h.end);
  return last;
}

std::uint32_t Timeline::device_count() const noexcept {
  std::uint32_t devices = 1;
  for (const Stream& stream : streams) devices = std::max(devices, stream.device + 1);
  return devices;
}

device_id Timeline::device_of(const Span& span) const noexcept {
  return span.stream < streams.size() ? streams[span.stream].device : 0;
}

}  // namespace overlap
